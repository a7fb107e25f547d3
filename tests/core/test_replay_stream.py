"""Replay mode reads a case's recorded runs when the case is scored (checker/inputs/replay.py):
the same results and the same errors as reading the whole file, less memory."""

from __future__ import annotations

import json
import re

import pytest

from checker.inputs.discover import discover
from checker.inputs.replay import ReplayRuns, index_replay
from corehelpers import case, evalset, invocation, replay, run_cli, write_json


def _suite(repo, runs):
    write_json(repo / "e/s.evalset.json", evalset("s", case("a"), case("b", invocation("q", "no"))))
    write_json(repo / "runs.json", runs, indent=None)


def test_runs_are_decoded_case_by_case(repo, monkeypatch):
    _suite(repo, replay(("s", "b", 2, [invocation("q", "no")]), ("s", "a", 1, [invocation()]),
                        ("s", "b", 1, [invocation("q", "yes")])))
    monkeypatch.chdir(repo)
    runs = index_replay(repo / "runs.json", discover(["e"], root=repo).targets)
    assert isinstance(runs, ReplayRuns)
    assert sorted(runs) == [("s", "a"), ("s", "b")] and sorted(runs.run_counts()) == [1, 2]
    assert [r.run for r in runs[("s", "b")]] == [2, 1]  # file order; scoring sorts by run
    assert runs[("s", "b")][1].invocations[0].final_response.parts[0].text == "yes"


def test_results_equal_the_whole_file_reader(repo, monkeypatch):
    _suite(repo, replay(("s", "a", 1, [invocation()]), ("s", "b", 1, [invocation("q", "yes")]),
                        ("s", "b", 2, [invocation("q", "no")])))
    out = run_cli(["run", "e", "--replay", "runs.json", "--results", "lazy.json"], repo)
    assert out.code == 1, out.output
    # A top-level array is not the shape the scanner reads: the whole-file reader runs.
    import checker.inputs.replay as module

    monkeypatch.setattr(module, "_scan", lambda *args: (_ for _ in ()).throw(module.Irregular()))
    again = run_cli(["run", "e", "--replay", "runs.json", "--results", "whole.json"], repo)
    # The same lines but for how long each run took ("in 0.3 s").
    def lines(text: str) -> list[str]:
        return [re.sub(r" in [0-9.]+ s\b", " in _ s", line) for line in text.splitlines()[:-1]]
    assert lines(again.stdout) == lines(out.stdout)
    lazy, whole = (json.loads((repo / f).read_text()) for f in ("lazy.json", "whole.json"))
    assert lazy["evalSets"] == whole["evalSets"] and lazy["summary"] == whole["summary"]


@pytest.mark.parametrize("text, message", [
    # a run's content is checked when its case is scored, with the same path as before
    ('{"version": 1, "runs": [{"evalSetId": "s", "evalId": "a", "run": 1, "invocations": [{"bogus": 1}]},'
     ' {"evalSetId": "s", "evalId": "b", "run": 1}]}', "runs.json at $.runs[0].invocations[0]"),
    ('{"version": 1, "runs": [{"evalSetId": "s", "evalId": "a", "run": 1, "error": null, "error": "x"},'
     ' {"evalSetId": "s", "evalId": "b", "run": 1}]}', "runs.json at $.runs[0]: duplicate key 'error'"),
    ('{"version": 1, "runs": [{"evalSetId": "s", "evalId": "a", "run": 1}, {"evalSetId": "s", "evalId": "a", "run": 1}]}',
     "runs.json at $.runs[1].run: run 1 of 'a' is recorded twice"),
    ('{"version": 1, "runs": [{"evalSetId": "s", "evalId": "zz", "run": 1}]}',
     "runs.json at $.runs[0]: run for eval case 'zz' of eval set 's', which is not in the evaluated"),
    ('{"version": 1, "runs": [{"evalSetId": "s", "evalId": "a", "run": 1}]}',
     "no recorded run for eval case 'b'"),
    ('{"version": 2, "runs": []}', "runs.json at $.version: unsupported replay file version 2"),
    ('{"version": 1, "runs": [], "extra": 1}', "runs.json at $: unknown key 'extra'"),
    ('{"version": 1, "runs": [{"evalSetId": "s", "evalId": 5, "run": 1}]}', "runs.json at $.runs[0].evalId"),
    ('{"version": 1, "runs": [{"evalSetId": "s", "evalId": "a", "run": 1}', "runs.json:1: invalid JSON"),
    ('[1, 2]', "runs.json"),
    ('{"runs": [], "runs": []}', "duplicate key 'runs'"),
])
def test_bad_replay_files_are_bad_input(repo, text, message):
    _suite(repo, {})
    (repo / "runs.json").write_text(text)
    out = run_cli(["run", "e", "--replay", "runs.json", "--results", "r.json"], repo)
    assert out.code == 2, out.output
    assert message in out.stderr and "Traceback" not in out.output
    assert not (repo / "r.json").exists()


def test_unselected_cases_runs_are_not_decoded(repo):
    """Selecting cases (or a shard) reads only their runs: another case's bad run is not
    this run's problem, but an unknown case still is."""
    _suite(repo, {})
    (repo / "runs.json").write_text(
        '{"version": 1, "runs": [{"evalSetId": "s", "evalId": "a", "run": 1, "invocations": "junk"},'
        ' {"evalSetId": "s", "evalId": "b", "run": 1, "invocations": []}]}')
    out = run_cli(["run", "e/s.evalset.json:b", "--replay", "runs.json"], repo)
    assert out.code in (0, 1), out.output
    out = run_cli(["run", "e/s.evalset.json:a", "--replay", "runs.json"], repo)
    assert out.code == 2 and "$.runs[0].invocations" in out.stderr
