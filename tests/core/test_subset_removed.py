"""A run of part of the suite against a baseline of all of it (issue 40): the cases outside the
run - those a case filter left out, those of eval files it was not given, those of other
shards or carried eval sets - are not "removed"; "removed" counts only cases gone from their
eval files, and every report that counts them names them."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from corehelpers import call, case, evalset, invocation, run_cli, write_json
from test_shards import AGENT  # a shell stdio agent: sunny in Paris

RIGHT = [call("weather", city="Paris")]
SUITE = {"alpha": ["a1", "a2", "a3"], "beta": ["b1", "b2"]}


def _write_suite(repo: Path, suite: dict[str, list[str]]) -> None:
    for name, ids in suite.items():
        write_json(repo / "evals" / f"{name}.evalset.json",
                   evalset(name, *[case(i, invocation("q", "sunny in Paris", RIGHT)) for i in ids]))
    write_json(repo / "evals" / "test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})


@pytest.fixture
def suite(repo: Path) -> Path:
    _write_suite(repo, SUITE)
    (repo / "agent.sh").write_text(AGENT)
    assert run_cli(["run", "evals", *_agent(repo), "--results", "base.json"], repo).code == 0
    return repo


def _agent(repo: Path) -> list[str]:
    return ["--agent-command", f"/bin/sh {shlex.quote(str(repo / 'agent.sh'))}", "--num-runs", "2"]


def _compared(repo: Path, *args: str, out: str = "pr.json"):
    done = run_cli(["run", *args, *_agent(repo), "--baseline", "base.json", "--results", out,
                    "--markdown", f"{out}.md", "--html", f"{out}.html"], repo)
    assert done.code == 0, done.output
    return done, json.loads((repo / out).read_text())["comparison"]


def test_a_case_filter_and_a_path_leave_the_other_cases_outside_not_removed(suite):
    done, comparison = _compared(suite, "evals/alpha.evalset.json:a1")
    assert comparison["summary"]["removed"] == 0 and comparison["removed"] == []
    assert comparison["summary"]["outside"] == 4  # a2, a3 (filtered out), b1, b2 (not given)
    assert "removed since the baseline" not in done.stdout
    assert ("note: 4 case(s) of the baseline are outside this run (eval files it was not given, or "
            "cases its selection left out): not compared, not counted as removed") in done.stdout
    assert "0 removed, 4 outside this run" in done.stdout
    assert "4 outside this run" in (suite / "pr.json.md").read_text()

    _, comparison = _compared(suite, "evals/alpha.evalset.json", out="path.json")
    assert (comparison["summary"]["removed"], comparison["summary"]["outside"]) == (0, 2)
    # `compare` of the subset's results reads what it ran from them: the same counts.
    again = run_cli(["compare", "base.json", "pr.json", "--results", "again.json"], suite)
    assert again.code == 0, again.output
    assert json.loads((suite / "again.json").read_text())["comparison"]["summary"]["outside"] == 4


def test_cases_gone_from_their_files_are_removed_and_named_wherever_counted(suite):
    _write_suite(suite, {"alpha": ["a1", "a2"]})  # a3 left its file; beta's file is gone
    (suite / "evals" / "beta.evalset.json").unlink()
    done, comparison = _compared(suite, "evals")
    names = [(r["evalSetId"], r["evalId"]) for r in comparison["removed"]]
    assert names == [("alpha", "a3"), ("beta", "b1"), ("beta", "b2")]
    assert comparison["summary"]["removed"] == 3 and "outside" not in comparison["summary"]
    for name in ("alpha/a3", "beta/b1", "beta/b2"):
        assert f"removed since the baseline: {name}" in done.stdout
    markdown = (suite / "pr.json.md").read_text()
    assert "**Removed since the baseline** (3): `alpha / a3`, `beta / b1`, `beta / b2`." in markdown
    page = (suite / "pr.json.html").read_text()
    assert re.search(r"Removed since the baseline \(3\): alpha / a3, beta / b1, beta / b2\.", page)
    # A filtered run still calls a case gone from its file removed, the filtered-out ones not.
    _, comparison = _compared(suite, "evals/alpha.evalset.json:a1", out="f.json")
    assert [r["evalId"] for r in comparison["removed"]] == ["a3"]
    assert comparison["summary"]["outside"] == 3  # a2, b1, b2


def test_shards_of_a_filtered_run_merge_without_false_removals(suite):
    files = []
    for i in (1, 2):
        out = run_cli(["run", "evals/alpha.evalset.json:a1,a2", "evals/beta.evalset.json", *_agent(suite),
                       "--shard", f"{i}/2", "--results", f"s{i}.json"], suite)
        assert out.code == 0, out.output
        files.append(f"s{i}.json")
    merged = run_cli(["merge", *files, "--baseline", "base.json", "--results", "m.json"], suite)
    assert merged.code == 0, merged.output
    summary = json.loads((suite / "m.json").read_text())["comparison"]["summary"]
    assert (summary["removed"], summary["outside"], summary["unchanged"]) == (0, 1, 4)
