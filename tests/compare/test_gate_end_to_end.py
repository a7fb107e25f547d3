"""The regression gate end to end through the CLI, with a real warm stdio agent whose
per-case pass probability is fresh each run: main's history of 5 results, then a PR that
changes nothing (the gate passes, the cases that looked worse were not confirmed) and a PR
that breaks one case (confirmed on fresh runs, the gate fails naming it)."""

from __future__ import annotations

import itertools
import json
import re
import shlex
import sys
from collections import Counter
from pathlib import Path

from corehelpers import call, case, evalset, invocation, run_cli, write_json

AGENT = (f"{shlex.quote(sys.executable)} "
         f"{shlex.quote(str(Path(__file__).parent / 'agents' / 'stochastic_agent.py'))}")
EXPECTED = invocation("Weather in Paris?", "The weather in Paris is sunny.", [call("get_weather", city="Paris")])
# 24 cases: 16 always right, 6 flaky, 2 always wrong.
FLAKY = {f"flaky_{i}": p for i, p in enumerate((0.5, 0.6, 0.7, 0.8, 0.9, 0.95))}
CASES = [f"steady_{i}" for i in range(16)] + list(FLAKY) + ["broken_0", "broken_1"]
MAIN = {**FLAKY, "broken_0": 0.0, "broken_1": 0.0}


def _run(repo: Path, probabilities: dict, seed: str, out: str, *extra: str, monkeypatch):
    monkeypatch.setenv("STOCHASTIC_PROBABILITIES", json.dumps(probabilities))
    monkeypatch.setenv("STOCHASTIC_SEED", seed)
    monkeypatch.setenv("STOCHASTIC_LOG", str(repo / f"{out}.log"))
    return run_cli(["run", "evals", "--agent-command", AGENT, "--num-runs", "3", "--concurrency", "4",
                    "--results", out, "--markdown", f"{out}.md", *extra], repo)


def test_unchanged_pr_passes_and_a_broken_case_is_confirmed_on_fresh_runs(repo, monkeypatch):
    write_json(repo / "evals" / "w.evalset.json", evalset("w", *[case(c, EXPECTED) for c in CASES]))
    write_json(repo / "evals" / "test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})
    mains = []
    for i in range(5):
        done = _run(repo, MAIN, f"main{i}", f"main{i}.json", monkeypatch=monkeypatch)
        assert done.code in (0, 1), done.output
        mains.append(f"main{i}.json")
    history = [arg for m in reversed(mains) for arg in ("--baseline", m)]  # newest first

    same = _run(repo, MAIN, "pr-same", "same.json", *history, "--fail-on", "regression",
                monkeypatch=monkeypatch)
    assert same.code == 0, same.output
    data = json.loads((repo / "same.json").read_text())
    assert data["comparison"]["summary"]["regressed"] == 0
    assert [h["path"] for h in data["comparison"]["baseline"]["history"]] == list(reversed(mains))
    fw = data["comparison"]["familywise"]
    assert fw["method"].startswith("tarone-bonferroni") and fw["alpha"] == 0.05 and fw["confirmed"] is True
    cases = {c["evalId"]: c for c in data["evalSets"][0]["cases"]}
    for eval_id in ("steady_0", "broken_0"):  # nothing to confirm: nothing looked worse
        assert not cases[eval_id]["metrics"][0]["screened"]
        assert "confirmRuns" not in cases[eval_id]["metrics"][0]
    # What the agent did: 3 first runs a case, plus the confirmation runs of screened cases
    # only, numbered after them; the first runs alone make the case's own verdict.
    ran = Counter(line.split()[0] for line in (repo / "same.json.log").read_text().splitlines())
    for eval_id, result in cases.items():
        metric = result["metrics"][0]
        assert len(metric["runs"]) == 3 and [r["run"] for r in result["runs"]] == [1, 2, 3]
        assert ran[eval_id] == 3 + len(metric.get("confirmRuns") or [])
        assert (metric.get("confirmRuns") is not None) == bool(metric["screened"])
        if metric["screened"]:  # 60, or two thirds of it where screening saw a slight drop
            assert metric["confirmBudget"] in (40, 60) and len(metric["confirmRuns"]) <= metric["confirmBudget"]
    assert data["metadata"]["confirmExtraRuns"] == sum(ran.values()) - 3 * len(CASES)
    lines = (repo / "same.json.md").read_text().splitlines()
    first, below = lines[0], [x[2:] for x in itertools.takewhile(lambda x: x.startswith("- "), lines[2:])]
    assert first == "## ✅ Gate passed: no confirmed regression."
    failing = sum(c["status"] != "passed" for c in cases.values())  # the broken and some flaky
    assert failing >= 2
    # "as on main" only of those main failed too; the others are said with their runs.
    as_on_main = sum(c["status"] != "passed" and c["baselineStatus"] != "passed" for c in cases.values())
    passed_there = failing - as_on_main
    assert as_on_main >= 1 and below[-1] == f"{as_on_main} cases fail, as on main"
    if passed_there:
        (said,) = [x for x in below if x.startswith(f"{passed_there} case{'s' if passed_there > 1 else ''} fail")]
        assert " on main (w/" in said and "not confirmed in " in said

    broken = _run(repo, {**MAIN, "steady_3": 0.0}, "pr-broken", "broken.json", *history,
                  "--fail-on", "regression", monkeypatch=monkeypatch)
    assert broken.code == 1, broken.output
    data = json.loads((repo / "broken.json").read_text())
    cases = {c["evalId"]: c for c in data["evalSets"][0]["cases"]}
    assert cases["steady_3"]["change"] == "regressed"
    # Every fresh run failed; it stopped once the drop was certain, before its 60.
    fresh = cases["steady_3"]["metrics"][0]["confirmRuns"]
    assert set(fresh) == {0.0} and len(fresh) % 5 == 0 and 5 <= len(fresh) < 60
    assert data["metadata"]["confirmCertainEarly"] >= 1
    assert data["comparison"]["summary"]["regressed"] == 1
    last = broken.stdout.splitlines()[-1]
    assert last.startswith("gate failed (fail-on: regression): 1 case regressed (steady_3); ")
    # What the unconfirmed cases took, against what they could have had (60, or 40 for a slight drop).
    said = re.search(r"not confirmed in (\d+)(?: to (\d+))? fresh runs(?: each)? \(budget (\d+)(?: to (\d+))?"
                     r"(?:; \d+ more checked that screening and confirmation agree)?\)", last)
    assert said and {int(b) for b in said.groups()[2:] if b} <= {40, 60}, last
    first = (repo / "broken.json.md").read_text().splitlines()[0]
    assert first == "## ❌ Gate failed: 1 case regressed (steady\\_3)."


CRASH_ONCE = (f"{shlex.quote(sys.executable)} "
              f"{shlex.quote(str(Path(__file__).parent / 'agents' / 'crash_once_agent.py'))}")


def test_an_errored_run_is_retried_and_shown(repo, monkeypatch):
    write_json(repo / "evals" / "w.evalset.json", evalset("w", *[case(f"c{i}", EXPECTED) for i in range(3)]))
    write_json(repo / "evals" / "test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})
    for retries, code in (("1", 0), ("0", 1)):
        marks = repo / f"marks{retries}"
        marks.mkdir()
        monkeypatch.setenv("CRASH_ONCE_DIR", str(marks))
        out = run_cli(["run", "evals", "--agent-command", CRASH_ONCE, "--num-runs", "2",
                       "--retries", retries, "--results", f"r{retries}.json"], repo)
        assert out.code == code, out.output
        runs = [r for c in json.loads((repo / f"r{retries}.json").read_text())["evalSets"][0]["cases"]
                for r in c["runs"]]
        if retries == "1":
            assert all(r["status"] == "passed" and r["retries"] == 1 for r in runs)
            assert ("retries: 6 run(s) errored and were run again; 6 then succeeded, 0 still "
                    "errored and count as failing runs") in out.stdout
        else:
            assert all(r["status"] == "error" and "retries" not in r for r in runs)
            assert "retries:" not in out.stdout
