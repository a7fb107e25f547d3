"""The results file is written a case at a time (checker/report/results_json.py): the same
bytes as dumping the whole document at once (with its reliability figures, computed as it is
written), whatever the results hold."""

from __future__ import annotations

import json

import pytest

from checker.compare.reliability import case_reliability, suite_k, suite_reliability
from checker.models.results import Results
from checker.report.results_json import results_json
from corehelpers import call, case, evalset, invocation, replay, run_cli, write_json


def _case(eval_id: str, **extra) -> dict:
    return {"evalId": eval_id, "status": "failed", "line": 3,
            "runs": [{"run": 1, "status": "failed", "error": "boom\n  \"cases\": []"}],
            "metrics": [{"name": "m", "threshold": 0.5, "score": 0.25, "status": "failed",
                         "runs": [0.25, None], "details": {
                             # keys and text that look like the spliced lists, deeper down
                             "cases": [], "evalSets": [], "nested": {"cases": [{"a": []}]},
                             "text": "é ü 日本 \u2028 \t tab", "empty": {}, "list": [[], [1, [2]]]}}],
            "fingerprint": "sha256:00", **extra}


RESULTS = [
    {"passed": True, "summary": {}},  # no eval sets at all
    {"passed": False, "summary": {"cases": 3}, "verdictRule": "mean",
     "evalSets": [{"evalSetId": "a", "path": "e/a.evalset.json", "cases": [_case("c1"), _case("c2", flaky=True)]},
                  {"evalSetId": "empty", "path": "e/empty.evalset.json", "cases": []},
                  {"evalSetId": "b", "path": "e/b.evalset.json", "cases": [_case("c3", change="regressed")]}],
     "fileErrors": [{"path": "x.json", "error": "bad"}],
     "metadata": {"evalSets": [], "cases": [], "deep": {"evalSets": [{"cases": []}]}}},
]


def _with_reliability(results: Results) -> Results:
    cases = [c for s in results.eval_sets for c in s.cases]
    k = suite_k(cases)
    results.summary.reliability = suite_reliability(cases, k)
    for c in cases:
        c.reliability = case_reliability(c, k)
    return results


@pytest.mark.parametrize("data", RESULTS)
def test_pieces_are_the_whole_dump(data):
    results = Results.model_validate(data)
    written = b"".join(results_json(results))
    assert results.summary.reliability is None  # the writer's copies carry it, not the caller's
    assert written == (_with_reliability(results).model_dump_json(indent=2) + "\n").encode()
    if results.eval_sets:  # one failed run a case: pass^1 0 of 3 cases
        assert json.loads(written)["summary"]["reliability"]["passHatK"]["rate"] == 0.0


def test_a_run_writes_the_whole_dump(repo):
    write_json(repo / "e/s.evalset.json", evalset("s", case("a"), case("b", invocation("q", "no"))))
    write_json(repo / "e/t.evalset.json", evalset("t", case("c", invocation("q", "ü", [call("f")]))))
    write_json(repo / "runs.json", replay(("s", "a", 1, [invocation()]), ("s", "b", 1, [invocation("q", "yes")]),
                                          ("t", "c", 1, [invocation("q", "ü", [call("g")])])))
    out = run_cli(["run", "e", "--replay", "runs.json", "--results", "r.json"], repo)
    assert out.code == 1, out.output
    written = (repo / "r.json").read_bytes()
    results = Results.model_validate(json.loads(written))
    assert len(results.eval_sets) == 2 and results.summary.cases == 3
    assert written == (results.model_dump_json(indent=2) + "\n").encode()
