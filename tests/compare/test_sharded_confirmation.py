"""Issue 40's new user, sharded: a case whose tool call changed in every PR run, where main
made it in 2 of 3 runs, is caught by 4 shards and `merge --fail-on regression` as by one
unsharded run: each shard screens its own cases and runs their confirmation runs against the
baseline it was given, and the merge decides the whole suite's family on every shard's fresh
runs. A merge of shards that screened against other results of main, at another alpha or
with edited confirmation runs is bad input (exit 2)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from corehelpers import call, case, evalset, invocation, run_cli, write_json

AGENT = (f"{shlex.quote(sys.executable)} "
         f"{shlex.quote(str(Path(__file__).parent / 'agents' / 'travel_agent.py'))}")
STEADY = ["paris_weather", "rome_weather", "oslo_weather", "nice_weather", "bern_weather", "kyiv_weather"]
SHARDS = 4


def _suite(repo: Path) -> None:
    cases = [case("lisbon_usd", invocation("Lisbon prices in USD?", "Done.", [call("currency_agent", city="lisbon")])),
             case("porto_flaky", invocation("Porto weather?", "Done.", [call("get_forecast", city="porto")]))]
    cases += [case(c, invocation(f"{c}?", "Done.", [call("get_forecast", city=c.split("_")[0])])) for c in STEADY]
    write_json(repo / "evals" / "travel.evalset.json", evalset("travel", *cases))
    write_json(repo / "evals" / "test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})


def _run(repo: Path, out: str, *extra: str, monkeypatch, broken: bool = False):
    monkeypatch.setenv("TRAVEL_BREAK", "1" if broken else "0")
    monkeypatch.setenv("TRAVEL_SEED", "s")
    return run_cli(["run", "evals", "--agent-command", AGENT, "--num-runs", "3", "--concurrency", "4",
                    "--results", out, *extra], repo)


def _shards(repo: Path, *extra: str, monkeypatch, broken: bool = True, prefix: str = "s") -> list[str]:
    files = []
    for i in range(1, SHARDS + 1):
        done = _run(repo, f"{prefix}{i}.json", "--shard", f"{i}/{SHARDS}", "--fail-on", "regression",
                    *extra, monkeypatch=monkeypatch, broken=broken)
        assert done.code == 0, done.output  # a shard fails only when a metric errored
        files.append(f"{prefix}{i}.json")
    return files


def _cases(path: Path) -> dict:
    return {c["evalId"]: c for s in json.loads(path.read_text())["evalSets"] for c in s["cases"]}


@pytest.fixture
def main_results(repo, monkeypatch) -> Path:
    _suite(repo)
    done = _run(repo, "main.json", monkeypatch=monkeypatch)
    assert done.code == 1, done.output  # lisbon_usd fails on main (2 of 3 runs)
    assert _cases(repo / "main.json")["lisbon_usd"]["metrics"][0]["runs"] == [1.0, 0.0, 1.0]
    return repo / "main.json"


def test_a_sharded_run_catches_the_break_an_unsharded_run_catches(repo, main_results, monkeypatch):
    files = _shards(repo, "--baseline", "main.json", monkeypatch=monkeypatch)
    held = [json.loads((repo / f).read_text()) for f in files]
    # Each shard screened its cases against main and ran their fresh runs; it compared nothing.
    assert all("comparison" not in h and h["shard"]["family"]["alpha"] == 0.05 for h in held)
    assert len({json.dumps(h["shard"]["family"]) for h in held}) == 1
    lisbon = next(c for h in held for s in h["evalSets"] for c in s["cases"] if c["evalId"] == "lisbon_usd")
    metric = lisbon["metrics"][0]
    assert metric["screened"] is True and metric["runs"] == [0.0, 0.0, 0.0]
    # No certain stop in a shard: its test reads its whole budget, every fresh run failing.
    assert metric["confirmRuns"] == [0.0] * 60 and metric["confirmBudget"] == 60
    assert [r["run"] for r in lisbon["freshRuns"]] == list(range(4, 64))

    merged = run_cli(["merge", *files, "--baseline", "main.json", "--fail-on", "regression",
                      "--results", "merged.json", "--markdown", "merged.md"], repo)
    assert merged.code == 1, merged.output
    cases = _cases(repo / "merged.json")
    assert cases["lisbon_usd"]["change"] == "regressed"
    assert merged.stdout.splitlines()[-1].startswith("gate failed (fail-on: regression): 1 case regressed")
    data = json.loads((repo / "merged.json").read_text())
    assert data["comparison"]["familywise"]["confirmed"] is True
    assert data["metadata"]["confirmExtraRuns"] == sum(len(c.get("freshRuns") or []) for c in cases.values())

    # The same PR unsharded: the same labels and gate.
    whole = _run(repo, "whole.json", "--baseline", "main.json", "--fail-on", "regression",
                 monkeypatch=monkeypatch, broken=True)
    assert whole.code == 1, whole.output
    assert {k: c["change"] for k, c in _cases(repo / "whole.json").items()} == \
        {k: c["change"] for k, c in cases.items()}
    assert whole.stdout.splitlines()[-1] == merged.stdout.splitlines()[-1]
    # compare of either decides again on their fresh runs, as they did; the first runs alone
    # would not call it (2/3 against 0/3: p = 0.2), and compare says when it cannot use them.
    for head in ("whole.json", "merged.json"):
        again = run_cli(["compare", "main.json", head, "--fail-on", "regression"], repo)
        assert again.code == 1 and again.stdout.splitlines()[-1] == whole.stdout.splitlines()[-1], again.output
    other = json.loads(main_results.read_text())
    other["metadata"]["note"] = "another run of main"
    write_json(repo / "other.json", other)
    apart = run_cli(["compare", "other.json", "merged.json", "--fail-on", "regression"], repo)
    assert apart.code == 0, apart.output
    assert "re-decided without the " in apart.stdout.splitlines()[-1]

    # Before: shards without a baseline run no confirmation, and the merge cannot call it.
    bare = _shards(repo, monkeypatch=monkeypatch, prefix="bare")
    old = run_cli(["merge", *bare, "--baseline", "main.json", "--fail-on", "regression",
                   "--results", "old.json"], repo)
    assert old.code == 0, old.output
    assert _cases(repo / "old.json")["lisbon_usd"]["change"] == "unchanged"
    assert any("the shards ran no confirmation runs" in n
               for n in json.loads((repo / "old.json").read_text())["comparison"]["notes"])


def test_an_unchanged_pr_sharded_passes(repo, main_results, monkeypatch):
    monkeypatch.setenv("TRAVEL_BREAK", "0")
    files = _shards(repo, "--baseline", "main.json", monkeypatch=monkeypatch, broken=False)
    merged = run_cli(["merge", *files, "--baseline", "main.json", "--fail-on", "regression",
                      "--results", "merged.json"], repo)
    assert merged.code == 0, merged.output
    assert _cases(repo / "merged.json")["lisbon_usd"]["change"] == "unchanged"


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    write_json(path, data)


def test_merge_refuses_shards_decided_against_another_family(repo, main_results, monkeypatch):
    files = _shards(repo, "--baseline", "main.json", monkeypatch=monkeypatch)
    other = json.loads(main_results.read_text())
    other["evalSets"][0]["cases"][1]["metrics"][0]["runs"] = [1.0, 1.0, 1.0]  # another result of main
    other["evalSets"][0]["cases"][1]["metrics"][0]["score"] = 1.0
    write_json(repo / "other.json", other)

    def merge(*args: str):
        return run_cli(["merge", *files, "--fail-on", "regression", "--results", "m.json", *args], repo)

    out = merge()
    assert out.code == 2 and "the shards screened and confirmed against 1 baseline file, but no " \
        "--baseline was given" in out.output, out.output
    out = merge("--baseline", "other.json")
    assert out.code == 2 and "--baseline other.json is not the results of main the shards had there" \
        in out.output, out.output
    out = merge("--baseline", "main.json", "--baseline", "other.json")
    assert out.code == 2 and "2 --baseline files given, 1 screened against" in out.output, out.output
    out = merge("--baseline", "main.json", "--alpha", "0.01")
    assert out.code == 2 and "the shards confirmed at alpha 0.05, this merge is at --alpha 0.01" \
        in out.output, out.output

    # One shard at another alpha, one without a baseline.
    again = _run(repo, "a2.json", "--shard", f"2/{SHARDS}", "--baseline", "main.json", "--alpha", "0.01",
                 "--fail-on", "regression", monkeypatch=monkeypatch, broken=True)
    assert again.code == 0, again.output
    out = run_cli(["merge", files[0], "a2.json", *files[2:], "--baseline", "main.json",
                   "--results", "m.json"], repo)
    assert out.code == 2 and f"shard 2/{SHARDS} confirmed against 1 baseline file" in out.output \
        and "at alpha 0.01" in out.output and f"{files[0]} confirmed against" in out.output, out.output
    bare = _run(repo, "b2.json", "--shard", f"2/{SHARDS}", "--baseline", "main.json", "--confirm-runs", "0",
                "--fail-on", "regression", monkeypatch=monkeypatch, broken=True)
    assert bare.code == 0, bare.output
    out = run_cli(["merge", files[0], "b2.json", *files[2:], "--baseline", "main.json",
                   "--results", "m.json"], repo)
    assert out.code == 2 and f"shard 2/{SHARDS} ran no confirmation runs" in out.output, out.output
    assert "Traceback" not in out.output

    # A shard whose confirmation runs outgrow its budget, or its case's fresh runs.
    holder = next(f for f in files if "lisbon_usd" in (repo / f).read_text())
    kept = (repo / holder).read_text()

    def lisbon(data):
        return next(c for s in data["evalSets"] for c in s["cases"] if c["evalId"] == "lisbon_usd")
    _edit(repo / holder, lambda data: lisbon(data)["metrics"][0].update(confirmBudget=61))
    out = merge("--baseline", "main.json")
    assert out.code == 2 and "metric 'tool_trajectory_avg_score' read 60 confirmation runs on a budget " \
        "of 61 (--confirm-runs 60)" in out.output, out.output
    (repo / holder).write_text(kept)
    _edit(repo / holder, lambda data: lisbon(data).update(freshRuns=lisbon(data)["freshRuns"][:10]))
    out = merge("--baseline", "main.json")
    assert out.code == 2 and "lists 60 confirmRuns but its case has 10 fresh runs" in out.output, out.output
    (repo / holder).write_text(kept)

    # A shard whose confirmation runs of a screened metric were edited out.

    def drop(data):
        for s in data["evalSets"]:
            for c in s["cases"]:
                if c["evalId"] == "lisbon_usd":
                    for key in ("screened", "confirmRuns", "confirmBudget"):
                        c["metrics"][0].pop(key)
    _edit(repo / holder, drop)
    out = merge("--baseline", "main.json")
    assert out.code == 2 and "eval case 'lisbon_usd' of eval set 'travel', metric " \
        "tool_trajectory_avg_score: screening against the baseline flags it, but its shard " \
        "recorded no confirmation runs for it" in out.output, out.output
