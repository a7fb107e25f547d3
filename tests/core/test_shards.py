"""``run --shard I/N`` and ``evalcheck merge``: N shards merged are the unsharded run."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from checker.errors import InputError
from checker.scale.shards import assign, parse_shard, shard_loads
from corehelpers import call, case, evalset, invocation, replay, run_cli, write_json

TIMING = {"startedAt", "finishedAt", "durationSeconds", "shards"}
TIMED_METRICS = {"invocation_duration_v1"}  # wall-clock time of the agent: differs run to run


def _suite(repo: Path) -> list[tuple[str, str, int]]:
    """33 cases in 3 eval sets with 1 to 4 turns; every fifth case's agent goes wrong."""
    keys = []
    for s, name in enumerate(("alpha", "beta", "gamma")):
        cases = []
        for n in range(11):
            turns = 1 + (n + s) % 4
            eval_id = f"{name}_{n:02d}"
            cases.append(case(eval_id, *[invocation(f"q{t}", "sunny in Paris", [call("weather", city="Paris")],
                                                    invocation_id=f"i{t}") for t in range(turns)]))
            keys.append((name, eval_id, turns))
        write_json(repo / f"evals/{name}/{name}.evalset.json", evalset(name, *cases))
    write_json(repo / "evals/test_config.json",
               {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5}})
    return keys


def _recorded(keys: list[tuple[str, str, int]], runs: int = 2, goes_wrong: bool = True) -> dict:
    out = []
    for i, (set_id, eval_id, turns) in enumerate(keys):
        for run in range(1, runs + 1):
            wrong = goes_wrong and i % 5 == 0 and run == 2
            invs = [invocation(f"q{t}", "rain in Rome" if wrong else "sunny in Paris",
                               [call("weather", city="Rome" if wrong else "Paris")], invocation_id=f"i{t}")
                    for t in range(turns)]
            out.append((set_id, eval_id, run, invs))
    return replay(*out)


def _without_timing(results: dict) -> dict:
    results = json.loads(json.dumps(results))
    results["metadata"] = {k: v for k, v in results["metadata"].items() if k not in TIMING}
    for eval_set in results["evalSets"]:
        for c in eval_set["cases"]:
            for r in c["runs"]:
                r.pop("durationSeconds", None)
            c["metrics"] = [m for m in c["metrics"] if m["name"] not in TIMED_METRICS]
    return results


def _run_shards(repo: Path, mode: list[str], count: int = 3, extra: tuple[str, ...] = ()) -> list[str]:
    files = []
    for i in range(1, count + 1):
        out = run_cli(["run", "evals", *mode, "--shard", f"{i}/{count}", "--results", f"s{i}.json",
                       "--inference-out", f"runs{i}.json", *extra], repo)
        assert out.code in (0, 1), out.output
        files += [f"s{i}.json", f"runs{i}.json"]
    return files


def _assert_merge_equals_unsharded(repo: Path, mode: list[str]) -> None:
    whole = run_cli(["run", "evals", *mode, "--results", "whole.json", "--markdown", "whole.md",
                     "--inference-out", "whole-runs.json", "--junit", "whole.xml"], repo)
    assert whole.code == 1, whole.output
    files = _run_shards(repo, mode)
    shards = [json.loads((repo / f"s{i}.json").read_text()) for i in (1, 2, 3)]
    sizes = [sum(len(s["cases"]) for s in r["evalSets"]) for r in shards]
    assert sum(sizes) == 33 and min(sizes) >= 10, sizes
    assert all(r["shard"]["selection"] == shards[0]["shard"]["selection"] for r in shards)
    assert [r["shard"]["index"] for r in shards] == [1, 2, 3]

    merged = run_cli(["merge", *files, "--results", "merged.json", "--markdown", "merged.md",
                      "--inference-out", "merged-runs.json", "--junit", "merged.xml"], repo)
    assert merged.code == whole.code, merged.output
    assert merged.stdout.splitlines()[:-2] == whole.stdout.splitlines()[:-2]  # failure lines
    assert merged.stdout.splitlines()[-1] == whole.stdout.splitlines()[-1]  # the gate
    got = json.loads((repo / "merged.json").read_text())
    want = json.loads((repo / "whole.json").read_text())
    assert "shard" not in got and got["metadata"]["shards"] == 3
    assert _without_timing(got) == _without_timing(want)
    # The suite's reliability is the merged suite's, not a shard's (each shard wrote its own):
    # pass^2 the share of the 33 cases whose 2 runs both passed (26 replayed: every fifth case
    # fails its second run), pass@2 those with one.
    reliability = got["summary"]["reliability"]
    passes = [[r["status"] == "passed" for r in c["runs"]] for s in got["evalSets"] for c in s["cases"]]
    assert (reliability["k"], reliability["cases"], reliability["passHatK"]["rate"],
            reliability["passAtK"]["rate"]) == (2, 33, sum(map(all, passes)) / 33, sum(map(any, passes)) / 33)
    assert "--replay" not in mode or sum(map(all, passes)) == 26
    assert [r["summary"]["reliability"]["cases"] for r in shards] == sizes
    if "--replay" in mode:  # agents' durations show in a live run's report
        md_got, md_want = ((repo / f).read_text().splitlines() for f in ("merged.md", "whole.md"))
        assert md_got[:-1] == md_want[:-1]  # the footer holds the duration
    runs_got = json.loads((repo / "merged-runs.json").read_text())["runs"]
    runs_want = json.loads((repo / "whole-runs.json").read_text())["runs"]
    for r in runs_got + runs_want:
        r.pop("durationSeconds", None)
        for inv in r["invocations"]:
            inv.pop("duration", None)
            inv.pop("creationTimestamp", None)
    assert runs_got == runs_want


def test_replay_suite_in_three_shards_merges_to_the_unsharded_results(repo):
    keys = _suite(repo)
    write_json(repo / "recorded.json", _recorded(keys))
    _assert_merge_equals_unsharded(repo, ["--replay", "recorded.json"])


AGENT = r"""
while IFS= read -r line; do
  case "$line" in
    *'"type":"user"'*)
      id=$(printf '%s' "$line" | sed 's/.*"invocationId":"\([^"]*\)".*/\1/')
      case "$EVALCHECK_EVAL_ID" in
        *_00|*_05|*_10) city=Rome;;
        *) city=Paris;;
      esac
      printf '{"type":"response","invocationId":"%s","finalResponse":"sunny in %s","toolUses":[{"name":"weather","args":{"city":"%s"}}]}\n' "$id" "$city" "$city";;
  esac
done
"""


def test_live_stdio_agent_in_three_shards_merges_to_the_unsharded_results(repo):
    _suite(repo)
    (repo / "agent.sh").write_text(AGENT)
    command = f"/bin/sh {shlex.quote(str(repo / 'agent.sh'))}"
    _assert_merge_equals_unsharded(repo, ["--agent-command", command, "--num-runs", "2",
                                          "--concurrency", "4"])


def test_comparison_is_computed_on_the_merged_results(repo):
    """Shards given a baseline use it only to balance; merge --baseline compares the whole
    suite: the same labels, summary, removed cases and intervals as the unsharded run."""
    keys = _suite(repo)
    write_json(repo / "recorded.json", _recorded(keys))
    write_json(repo / "base-runs.json", _recorded(keys, goes_wrong=False))
    assert run_cli(["run", "evals", "--replay", "base-runs.json", "--results", "base.json"], repo).code == 0
    base = json.loads((repo / "base.json").read_text())
    base["evalSets"][2]["cases"].pop(7)  # gamma_07 is new
    base["evalSets"][0]["cases"].append({**base["evalSets"][0]["cases"][0], "evalId": "gone"})
    write_json(repo / "base.json", base)

    whole = run_cli(["run", "evals", "--replay", "recorded.json", "--baseline", "base.json",
                     "--fail-on", "regression", "--results", "whole.json"], repo)
    files = _run_shards(repo, ["--replay", "recorded.json"], extra=("--baseline", "base.json"))
    assert all("comparison" not in json.loads((repo / f).read_text()) for f in files[::2])
    merged = run_cli(["merge", *files[::2], "--baseline", "base.json", "--fail-on", "regression",
                      "--results", "merged.json"], repo)
    assert merged.code == whole.code == 0, merged.output  # 1/2 runs failing is within noise
    got, want = (json.loads((repo / f).read_text()) for f in ("merged.json", "whole.json"))
    assert got["comparison"]["summary"] == {"regressed": 0, "improved": 0, "unchanged": 32, "new": 1,
                                            "changed": 0, "removed": 1}
    assert sum(c["flaky"] for s in got["evalSets"] for c in s["cases"]) == 7
    assert _without_timing(got) == _without_timing(want)
    assert merged.stdout.splitlines()[:-2] == whole.stdout.splitlines()[:-2]
    assert merged.stdout.splitlines()[-1] == whole.stdout.splitlines()[-1]  # the gate's line


def test_split_is_deterministic_complete_and_balanced():
    costs = [(("s", f"c{i}"), float(1 + (i * 7) % 13)) for i in range(3000)]
    first, again = assign(costs, 8), assign(list(costs), 8)
    assert first == again and set(first) == set(range(8))
    loads = shard_loads(costs, 8)
    assert sum(loads) == sum(c for _, c in costs)
    assert max(loads) <= 1.10 * (sum(loads) / 8)
    # fewer cases than shards: some shards are empty; equal costs go in position order
    assert assign([(("s", "a"), 1.0), (("s", "b"), 1.0)], 4) == [0, 1]


def _one_slow_case(path: Path) -> dict:
    """The results file at ``path`` with beta_03's runs taking 600 s and the others 1 s."""
    data = json.loads(path.read_text())
    for eval_set in data["evalSets"]:
        for c in eval_set["cases"]:
            for r in c["runs"]:
                r["durationSeconds"] = 600.0 if c["evalId"] == "beta_03" else 1.0
    write_json(path, data)
    return data


def test_baseline_durations_balance_the_shards(repo, monkeypatch):
    """With a baseline the split follows its durations: one slow case gets a shard alone."""
    _suite(repo)
    write_json(repo / "recorded.json", _recorded(_suite(repo)))
    base = run_cli(["run", "evals", "--replay", "recorded.json", "--results", "base.json"], repo)
    assert base.code == 1
    _one_slow_case(repo / "base.json")
    from checker.inputs.discover import discover
    from checker.commands.stage_options import shard_options
    from checker.options import RunOptions
    from checker.scale.shards import shard_targets

    monkeypatch.chdir(repo)
    targets = discover(["evals"], root=repo).targets
    from checker.compare.results_file import load_results_file

    baseline = load_results_file(repo / "base.json")
    for index in (1, 2):
        options = RunOptions(paths=["evals"], replay=repo / "recorded.json", shard=f"{index}/2")
        chosen, info = shard_targets(targets, shard_options(options), baseline)
        ids = [c for t in chosen for c in t.case_ids]
        assert ("beta_03" in ids) == (ids == ["beta_03"])
        assert info.total == 33 and len(info.positions or []) == len(ids)


def test_merge_refuses_shards_split_with_different_baselines(shard_files):
    """--baseline changes which cases a shard holds: shards split on other durations (or
    one with a baseline, one without) are refused as such, not as a case in two shards."""
    repo = shard_files
    assert run_cli(["run", "evals", "--replay", "recorded.json", "--results", "base.json"], repo).code == 1
    base = _one_slow_case(repo / "base.json")
    base["evalSets"][0]["cases"][0]["runs"][0]["durationSeconds"] = 900.0
    write_json(repo / "other.json", base)
    for name, baseline in (("b", "base.json"), ("o", "other.json")):
        for i in (1, 2, 3):
            run_cli(["run", "evals", "--replay", "recorded.json", "--shard", f"{i}/3", "--baseline", baseline,
                     "--results", f"{name}{i}.json", "--inference-out", f"{name}runs{i}.json"], repo)
    none = json.loads((repo / "s1.json").read_text())["shard"]["baselineDurations"]
    timed = json.loads((repo / "b1.json").read_text())["shard"]["baselineDurations"]
    assert none == "none" and timed.startswith("sha256:")
    for files, named in ((("s1.json", "b2.json", "b3.json"), "b2.json"), (("b1.json", "o2.json", "o3.json"), "o2.json")):
        _refused(repo, *files, needle="the shards were split with different baselines", named=named)
    out = run_cli(["merge", "b1.json", "b2.json", "b3.json", "runs1.json", "bruns2.json", "bruns3.json",
                   "--inference-out", "m-runs.json"], repo)
    assert out.code == 2 and "runs1.json at $.metadata.shard.baselineDurations" in out.stderr, out.stderr
    assert "give every shard the same --baseline" in out.stderr
    out = run_cli(["merge", "b1.json", "b2.json", "b3.json", "bruns1.json", "bruns2.json", "bruns3.json",
                   "--inference-out", "m-runs.json"], repo)
    assert out.code == 1, out.output
    # A baseline that timed none of the selected cases splits as no baseline does.
    write_json(repo / "untimed.json", {**base, "evalSets": []})
    run_cli(["run", "evals", "--replay", "recorded.json", "--shard", "2/3", "--baseline", "untimed.json",
             "--results", "u2.json"], repo)
    assert json.loads((repo / "u2.json").read_text())["shard"]["baselineDurations"] == "none"
    assert run_cli(["merge", "s1.json", "u2.json", "s3.json"], repo).code == 1
    # A shard file of an evalcheck that did not record it is merged as before.
    one = json.loads((repo / "s1.json").read_text())
    del one["shard"]["baselineDurations"]
    write_json(repo / "s1.json", one)
    assert run_cli(["merge", "s1.json", "s2.json", "s3.json"], repo).code == 1


@pytest.mark.parametrize("text", ["", "3", "0/3", "4/3", "1/0", "a/b", "-1/2", "1/2/3"])
def test_bad_shard_is_bad_input(text, repo):
    with pytest.raises(InputError):
        parse_shard(text)
    _suite(repo)
    out = run_cli(["run", "evals", "--replay", "x.json", "--shard", text], repo)
    assert out.code == 2 and "--shard" in out.stderr and "Traceback" not in out.output


@pytest.mark.parametrize(("text", "says"), [("1/0", "the shard count (N of I/N) must be at least 1"),
                                           ("0/0", "the shard count (N of I/N) must be at least 1"),
                                           ("4/3", "the index must be between 1 and the count (use 1/3 to 3/3)")])
def test_bad_shard_says_what_is_wrong(text, says):
    with pytest.raises(InputError) as raised:
        parse_shard(text)
    assert says in str(raised.value) and "1/1 to 1/1" not in str(raised.value)


def test_shard_of_one_is_the_whole_suite(repo):
    keys = _suite(repo)
    write_json(repo / "recorded.json", _recorded(keys))
    run_cli(["run", "evals", "--replay", "recorded.json", "--shard", "1/1", "--results", "s.json"], repo)
    assert parse_shard(" 2 / 5 ").count == 5
    merged = run_cli(["merge", "s.json", "--results", "m.json"], repo)
    assert merged.code == 1, merged.output
    assert json.loads((repo / "m.json").read_text())["summary"]["cases"] == 33


def test_an_empty_shard_passes_and_merges(repo):
    """Fewer cases than shards: a shard with none passes (nothing in it failed) and says
    so, in the terminal and the markdown; its files merge with the others'."""
    write_json(repo / "evals/e.evalset.json", evalset("e", case("c1"), case("c2")))
    write_json(repo / "evals/test_config.json", {"criteria": {"response_match_score": 0.5}})
    write_json(repo / "recorded.json", replay(*[("e", c, 1, [invocation()]) for c in ("c1", "c2")]))
    files = []
    for i in (1, 2, 3):
        out = run_cli(["run", "evals", "--replay", "recorded.json", "--shard", f"{i}/3", "--results", f"s{i}.json",
                       "--inference-out", f"runs{i}.json", "--markdown", f"s{i}.md"], repo)
        assert out.code == 0, out.output
        files += [f"s{i}.json", f"runs{i}.json"]
    assert "shard 3/3 holds no cases (2 cases over 3 shards)" in out.stdout
    assert out.stdout.splitlines()[-2].startswith("0 eval cases in 1 eval set in ")
    assert out.stdout.splitlines()[-1] == "gate passed (fail-on: failure): shard 3/3 holds no cases"
    assert "failed (" not in out.output
    empty = json.loads((repo / "s3.json").read_text())
    assert empty["passed"] is True and empty["summary"]["cases"] == 0
    markdown = (repo / "s3.md").read_text()
    assert "passed" in markdown.splitlines()[0] and "Shard 3/3 holds no cases (2 cases over 3 shards)" in markdown
    assert "0 of 0" not in markdown and "holds no cases" not in (repo / "s1.md").read_text()
    merged = run_cli(["merge", *files, "--results", "m.json", "--inference-out", "m-runs.json"], repo)
    assert merged.code == 0, merged.output
    assert json.loads((repo / "m.json").read_text())["summary"]["cases"] == 2
    assert len(json.loads((repo / "m-runs.json").read_text())["runs"]) == 2


# --- refusals: exit 2, the file named ---------------------------------------------------

@pytest.fixture
def shard_files(repo) -> Path:
    keys = _suite(repo)
    write_json(repo / "recorded.json", _recorded(keys))
    _run_shards(repo, ["--replay", "recorded.json"])
    return repo


def _refused(repo: Path, *files: str, needle: str, named: str) -> None:
    out = run_cli(["merge", *files, "--results", "m.json"], repo)
    assert out.code == 2, out.output
    assert needle in out.stderr and named in out.stderr, out.stderr
    assert "Traceback" not in out.output and not (repo / "m.json").exists()


def test_merge_refuses_a_missing_shard(shard_files):
    _refused(shard_files, "s1.json", "s3.json", needle="shard 2/3 missing", named="s1.json, s3.json")


def test_merge_refuses_a_duplicated_shard(shard_files):
    (shard_files / "copy.json").write_text((shard_files / "s2.json").read_text())
    _refused(shard_files, "s1.json", "s2.json", "copy.json", "s3.json",
             needle="shard 2/3 is also s2.json", named="copy.json")


def test_merge_refuses_a_duplicated_case(shard_files):
    one, two = (json.loads((shard_files / f"s{i}.json").read_text()) for i in (1, 2))
    two["evalSets"][0]["cases"].append(one["evalSets"][0]["cases"][0])
    two["shard"]["positions"].append(one["shard"]["positions"][0])
    write_json(shard_files / "s2.json", two)
    _refused(shard_files, "s1.json", "s2.json", "s3.json",
             needle=f"eval case '{one['evalSets'][0]['cases'][0]['evalId']}' of eval set 'alpha' "
                    "is also in s1.json", named="s2.json")


def test_merge_refuses_a_lost_case(shard_files):
    two = json.loads((shard_files / "s2.json").read_text())
    two["evalSets"][1]["cases"].pop()
    two["shard"]["positions"].pop(len(two["evalSets"][0]["cases"]) + len(two["evalSets"][1]["cases"]))
    write_json(shard_files / "s2.json", two)
    _refused(shard_files, "s1.json", "s2.json", "s3.json", needle="32 case(s) of the 33 selected",
             named="s1.json")


def test_merge_refuses_shards_of_another_selection(shard_files):
    """Shard 3 ran after an eval file changed: other files, another fingerprint."""
    path = shard_files / "evals/beta/beta.evalset.json"
    path.write_text(path.read_text().replace("sunny in Paris", "sunny in Paris!", 1))
    out = run_cli(["run", "evals", "--replay", "recorded.json", "--shard", "3/3", "--results", "s3.json"],
                  shard_files)
    assert out.code in (0, 1), out.output
    _refused(shard_files, "s1.json", "s2.json", "s3.json", needle="evaluated another selection than s1.json",
             named="s3.json")


def test_selection_covers_options_that_change_scores(shard_files):
    (shard_files / "a.sh").write_text(AGENT)
    base = ["run", "evals", "--agent-command", "/bin/sh a.sh", "--shard", "1/3"]
    run_cli([*base, "--num-runs", "1", "--results", "r1.json"], shard_files)
    run_cli([*base, "--num-runs", "2", "--results", "r2.json"], shard_files)
    selections = [json.loads((shard_files / f).read_text())["shard"]["selection"]
                  for f in ("r1.json", "r2.json", "s1.json")]
    assert len(set(selections)) == 3 and all(s.startswith("sha256:") for s in selections)


def test_merge_refuses_another_evalcheck_version(shard_files):
    three = json.loads((shard_files / "s3.json").read_text())
    three["metadata"]["evalcheckVersion"] = "0.0.1"
    write_json(shard_files / "s3.json", three)
    _refused(shard_files, "s1.json", "s2.json", "s3.json", needle="written by evalcheck 0.0.1",
             named="s3.json")


def test_merge_refuses_another_shard_count(shard_files):
    out = run_cli(["run", "evals", "--replay", "recorded.json", "--shard", "3/4", "--results", "four.json"],
                  shard_files)
    assert out.code in (0, 1)
    _refused(shard_files, "s1.json", "s2.json", "four.json", needle="shard 3/4 is one of 4, s1.json one of 3",
             named="four.json")
    three = json.loads((shard_files / "s3.json").read_text())
    three["shard"]["count"] = 4
    write_json(shard_files / "s3.json", three)
    _refused(shard_files, "s1.json", "s2.json", "s3.json", needle="is one of 4", named="s3.json")


def test_merge_refuses_files_that_are_not_shards(shard_files):
    run_cli(["run", "evals", "--replay", "recorded.json", "--results", "plain.json"], shard_files)
    _refused(shard_files, "s1.json", "plain.json", needle="not a shard's file", named="plain.json")
    (shard_files / "bad.json").write_text("{not json")
    _refused(shard_files, "bad.json", needle="not JSON", named="bad.json")
    _refused(shard_files, "s1.json", "nowhere.json", needle="file not found", named="nowhere.json")
    write_json(shard_files / "other.json", {"hello": 1})
    _refused(shard_files, "other.json", needle="neither a results file", named="other.json")
    _refused(shard_files, "runs1.json", needle="no results file among", named="runs1.json")


def test_merge_refuses_recorded_runs_of_a_missing_shard(shard_files):
    out = run_cli(["merge", "s1.json", "s2.json", "s3.json", "runs1.json", "runs3.json",
                   "--inference-out", "m.json"], shard_files)
    assert out.code == 2 and "shard 2/3 missing" in out.stderr and "runs1.json" in out.stderr
    out = run_cli(["merge", "s1.json", "s2.json", "s3.json", "runs1.json"], shard_files)
    assert out.code == 2 and "no --inference-out" in out.stderr


def test_merge_refuses_recorded_runs_of_another_run(shard_files):
    """Recorded runs get the results shards' checks: another selection (here another
    --verdict), shard count or evalcheck version is bad input naming the recorded file."""
    results = ["s1.json", "s2.json", "s3.json"]
    for i in (1, 2, 3):
        out = run_cli(["run", "evals", "--replay", "recorded.json", "--verdict", "all-runs", "--shard",
                       f"{i}/3", "--results", f"o{i}.json", "--inference-out", f"oruns{i}.json"], shard_files)
        assert out.code in (0, 1), out.output

    def refused(*runs: str, needle: str, named: str, at: str) -> None:
        out = run_cli(["merge", *results, *runs, "--inference-out", "m-runs.json", "--results", "m.json"],
                      shard_files)
        assert out.code == 2, out.output
        assert needle in out.stderr and f"{named} at {at}" in out.stderr, out.stderr
        assert not (shard_files / "m.json").exists() and not (shard_files / "m-runs.json").exists()

    refused("oruns1.json", "oruns2.json", "oruns3.json", named="oruns1.json", at="$.metadata.shard.selection",
            needle="shard 1/3 evaluated another selection than s1.json")
    run_cli(["run", "evals", "--replay", "recorded.json", "--shard", "2/4", "--results", "f.json",
             "--inference-out", "four.json"], shard_files)
    refused("runs1.json", "four.json", "runs3.json", named="four.json", at="$.metadata.shard.count",
            needle="shard 2/4 is one of 4, s1.json one of 3")
    two = json.loads((shard_files / "runs2.json").read_text())
    assert two["metadata"]["evalcheckVersion"] == json.loads((shard_files / "s2.json").read_text())[
        "metadata"]["evalcheckVersion"]
    two["metadata"]["evalcheckVersion"] = "0.0.1"
    write_json(shard_files / "runs2.json", two)
    out = run_cli(["merge", *results, "runs1.json", "runs2.json", "runs3.json", "--inference-out", "m-runs.json"],
                  shard_files)
    assert out.code == 2 and "runs2.json: written by evalcheck 0.0.1, s1.json by" in out.stderr, out.stderr
    for name in ("runs1.json", "runs2.json", "runs3.json"):  # of an evalcheck that recorded no version
        runs = json.loads((shard_files / name).read_text())
        runs["metadata"].pop("evalcheckVersion")
        write_json(shard_files / name, runs)
    out = run_cli(["merge", *results, "runs1.json", "runs2.json", "runs3.json", "--inference-out", "m-runs.json"],
                  shard_files)
    assert out.code == 1, out.output


@pytest.mark.parametrize(("option", "target"), [("--results", "s2.json"), ("--markdown", "s1.json"),
                                              ("--junit", "runs3.json"), ("--inference-out", "runs1.json")])
def test_merge_refuses_to_overwrite_its_own_inputs(shard_files, option, target):
    write_json(shard_files / "base.json", json.loads((shard_files / "s1.json").read_text()))
    files = ["s1.json", "s2.json", "s3.json", "runs1.json", "runs2.json", "runs3.json"]
    before = {f: (shard_files / f).read_bytes() for f in [*files, "base.json"]}
    out = run_cli(["merge", *files, "--inference-out", "m-runs.json", "--baseline", "base.json",
                   option, target], shard_files)
    assert out.code == 2, out.output
    assert f"{target}: {option} would overwrite one of the files to merge" in out.stderr, out.stderr
    assert {f: (shard_files / f).read_bytes() for f in before} == before
    assert not (shard_files / "m-runs.json").exists()


def test_merge_refuses_a_shard_compared_on_its_own(shard_files):
    one = json.loads((shard_files / "s1.json").read_text())
    one["comparison"] = {"summary": {"regressed": 1}}
    write_json(shard_files / "s1.json", one)
    _refused(shard_files, "s1.json", "s2.json", "s3.json", needle="this shard holds a comparison",
             named="s1.json")


def test_a_shard_holds_only_its_own_cases(repo, monkeypatch):
    """A shard's first look at the suite checks every case but keeps outlines (memory for
    one case at a time); then it loads its own cases, equal to a whole read's."""
    _suite(repo)
    from checker.inputs.discover import discover
    from checker.commands.stage_options import shard_options
    from checker.options import RunOptions
    from checker.scale.shards import shard_targets

    monkeypatch.chdir(repo)
    whole = {(t.eval_set_id, c.eval_id): c for t in discover(["evals"], root=repo).targets
             for c in t.loaded.eval_set.eval_cases}
    targets = discover(["evals"], root=repo, outline_only=True).targets
    assert all(not t.loaded.eval_set.eval_cases and len(t.loaded.outlines or []) == 11 for t in targets)
    assert [o.turns for o in targets[1].loaded.case_outlines()[:4]] == [2, 3, 4, 1]
    chosen, _ = shard_targets(targets, shard_options(RunOptions(paths=["evals"], replay=Path("r.json"), shard="2/3")))
    for target in chosen:
        target.loaded.keep_cases(target.case_ids)
        held = target.loaded.eval_set.eval_cases
        assert [c.eval_id for c in held] == target.case_ids and target.loaded.outlines is None
        assert all(c == whole[(target.eval_set_id, c.eval_id)] for c in held)
        assert len(target.loaded.case_ids) == 11  # all of the file's ids: other shards' runs are known
    assert 0 < sum(len(t.case_ids) for t in chosen) < 33


def test_an_eval_file_that_changes_under_a_shard_is_bad_input(repo, monkeypatch):
    _suite(repo)
    from checker.inputs.discover import discover

    monkeypatch.chdir(repo)
    target = discover(["evals/alpha"], root=repo, outline_only=True).targets[0]
    path = repo / "evals/alpha/alpha.evalset.json"
    path.write_text(path.read_text().replace("alpha_03", "alpha_003"))
    with pytest.raises(InputError, match="changed while evalcheck was reading it"):
        target.loaded.keep_cases(["alpha_04"])


def test_a_simulated_case_is_priced_by_its_simulator_limit(repo, monkeypatch):
    """A conversation_scenario case has no conversation to count: its outline has no turns,
    and the split prices it at the simulator's max_allowed_invocations (at most 5) x runs."""
    scenario = {"eval_id": "sim", "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "chat"}}
    write_json(repo / "evals/s.evalset.json", evalset("s", case("two", invocation(), invocation()), scenario))
    write_json(repo / "evals/test_config.json", {"criteria": {"response_match_score": 0.5},
                                                 "user_simulator_config": {"max_allowed_invocations": 3}})
    from checker.inputs.discover import discover
    from checker.scale.shards import expected_costs

    monkeypatch.chdir(repo)
    targets = discover(["evals"], root=repo, outline_only=True).targets
    assert [o.turns for o in targets[0].loaded.case_outlines()] == [2, None]
    assert expected_costs(targets, 2) == [(("s", "two"), 4.0), (("s", "sim"), 6.0)]


def _forge_pass(data: dict) -> dict:
    """What a surviving process of the agent's wrote into its shard's results: every case
    passed, the scores left as they were."""
    for eval_set in data["evalSets"]:
        for c in eval_set["cases"]:
            c["status"] = "passed"
            for m in c["metrics"]:
                if m["status"] == "failed":
                    m["status"] = "passed"
    data["passed"] = True
    data["summary"].update(passed=data["summary"]["cases"], failed=0, errored=0)
    return data


@pytest.mark.parametrize("forge, named", [
    (_forge_pass, "make it 'failed'"),
    (lambda d: (d["evalSets"][0]["cases"][0]["metrics"][0].update(score=5.0), d)[1], "its runs' mean is"),
])
def test_merge_refuses_a_shard_whose_verdicts_do_not_follow_from_its_scores(shard_files, forge, named):
    """Issue 22: a survivor forged its shard's statuses and the merge trusted them (green)."""
    failing = next(name for name in ("s1.json", "s2.json", "s3.json")
                   if not json.loads((shard_files / name).read_text())["passed"])
    path = shard_files / failing
    path.write_text(json.dumps(forge(json.loads(path.read_text()))))
    _refused(shard_files, "s1.json", "s2.json", "s3.json", needle=named, named=failing)


def test_shard_assignment_and_fingerprints_do_not_depend_on_the_hash_seed(repo):
    """Separate processes with other PYTHONHASHSEED values (each CI machine, each shard job
    has its own) put every case in the same shard and give it the same fingerprint: a tie
    broken by hash() or a set's order would split the suite differently per job."""
    import os
    import subprocess
    import sys

    keys = _suite(repo)  # cases of equal turns tie on cost: the tie-break decides
    write_json(repo / "runs.json", _recorded(keys))
    seen = {}
    for seed in ("0", "1", "123"):
        per_seed = {}
        for shard in (1, 2, 3):
            out = repo / f"s{shard}-{seed}.json"
            done = subprocess.run([sys.executable, "-m", "checker.cli", "run", "evals", "--replay",
                                   "runs.json", "--shard", f"{shard}/3", "--results", str(out)],
                                  cwd=repo, capture_output=True, text=True,
                                  env={**os.environ, "PYTHONHASHSEED": seed})
            assert done.returncode in (0, 1), done.stderr
            data = json.loads(out.read_text())
            for eval_set in data["evalSets"]:
                for c in eval_set["cases"]:
                    per_seed[(eval_set["evalSetId"], c["evalId"])] = (shard, c["fingerprint"])
        assert len(per_seed) == len(keys)
        seen[seed] = per_seed
    assert all(found == seen["0"] for found in seen.values())
