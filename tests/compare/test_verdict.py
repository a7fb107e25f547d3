"""Verdict rules, flaky cases, pass counts, fingerprints."""

from __future__ import annotations

import asyncio

import pytest

from checker.inputs.fingerprint import case_fingerprint
from checker.compare.verdict import baseline_pass_counts, case_pass_counts
from checker.models.verdict_rule import MEAN, parse_verdict_rule
from checker.inputs.criteria import build_config
from checker.errors import InputError
from checker.metrics.base import ScoringContext
from checker.models.evalset import EvalCase
from checker.models.records import RecordedRun
from checker.scoring.case import score_case
from comparehelpers import case_result, metric
from corehelpers import call, case, invocation

RIGHT = invocation("Weather in Paris?", "Sunny", [call("get_weather", city="Paris")])
WRONG = invocation("Weather in Paris?", "Rain", [call("get_weather", city="Lyon")])
EXPECTED = case("c", RIGHT)


def score(rule_text: str, *outcomes: bool, criteria=None):
    cfg = build_config({"criteria": criteria or {"tool_trajectory_avg_score": 0.5}}, None, None)
    runs = [RecordedRun.model_validate({"evalSetId": "s", "evalId": "c", "run": n,
                                        "invocations": [RIGHT if ok else WRONG]})
            for n, ok in enumerate(outcomes, start=1)]
    return asyncio.run(score_case(EvalCase.model_validate(EXPECTED), cfg, runs, 1, ScoringContext(),
                                  parse_verdict_rule(rule_text)))


@pytest.mark.parametrize("rule,outcomes,status", [
    ("mean", (True, False), "passed"),          # mean 0.5 >= 0.5: ADK's rule
    ("all-runs", (True, False), "failed"),
    ("all-runs", (True, True, True), "passed"),
    ("majority", (True, False), "failed"),      # 1 of 2 is not more than half
    ("majority", (True, False, True), "passed"),
    ("k-of-n:2", (True, False, True), "passed"),
    ("k-of-n:3", (True, False, True), "failed"),
])
def test_verdict_rules(rule, outcomes, status):
    result = score(rule, *outcomes)
    assert result.status == status
    (trajectory,) = [m for m in result.metrics if m.name == "tool_trajectory_avg_score"]
    assert trajectory.score == sum(outcomes) / len(outcomes)  # the score stays the mean


def test_flaky_when_a_gating_metrics_runs_disagree():
    assert score("mean", True, False, True).flaky
    assert not score("mean", True, True).flaky
    assert not score("mean", False, False).flaky


def test_case_pass_counts_with_wilson():
    counts = case_pass_counts(case_result("c", metric([1.0, 0.0, 1.0])))
    assert (str(counts), round(counts.low, 4), round(counts.high, 4)) == ("2/3", 0.2077, 0.9385)
    both = case_result("c", metric([1.0, 1.0, None]), metric([1.0, 0.0, None], name="m2"))
    assert str(case_pass_counts(both)) == "1/2"  # run 3 errored: not counted
    assert baseline_pass_counts(both) is None  # not compared
    compared = both.model_copy(update={"metrics": [m.model_copy(update={"baseline_runs": [1.0, 1.0, 0.0]})
                                                   for m in both.metrics]})
    before = baseline_pass_counts(compared)
    assert before is not None and (str(before), round(before.high, 4)) == ("2/3", 0.9385)


@pytest.mark.parametrize("text", ["sometimes", "k-of-n:0", "k-of-n:x", "k-of-n"])
def test_bad_verdict_rule(text):
    with pytest.raises(InputError, match="mean, all-runs, majority or k-of-n:K"):
        parse_verdict_rule(text)


def test_uncertain_verdicts():
    majority, all_runs, two_of_n = (parse_verdict_rule(r) for r in ("majority", "all-runs", "k-of-n:3"))
    assert MEAN.uncertain([1.0, 0.0], 0.5)                  # 0.5 passes; another 0.0 fails
    assert not MEAN.uncertain([1.0, 1.0, 1.0, 1.0, 0.0], 0.5)  # 0.8: a 0.0 run leaves 0.67
    assert not MEAN.uncertain([1.0, 1.0], 1.0)               # agreeing runs are settled,
    assert not MEAN.uncertain([0.0, 0.0], 0.5)               # even at threshold 1.0
    assert majority.uncertain([1.0, 0.0], 0.5)              # 1/2 fails; 2/3 would pass
    assert not majority.uncertain([1.0, 1.0, 1.0, 0.0], 0.5)  # 3/4; 3/5 still passes
    assert not all_runs.uncertain([1.0, 0.0], 0.5)          # a failed run settles all-runs
    assert not all_runs.uncertain([1.0, 1.0], 0.5)
    assert two_of_n.uncertain([1.0, 1.0], 0.5)              # one passing run short of K
    assert not two_of_n.uncertain([1.0, 1.0, 1.0], 0.5)
    assert not MEAN.uncertain([None, None], 0.5)


def _cfg(criteria):
    return build_config({"criteria": criteria}, None, None)


def test_fingerprint_covers_content_criteria_and_judge_model():
    ec = EvalCase.model_validate(EXPECTED)
    base = case_fingerprint(ec, _cfg({"tool_trajectory_avg_score": 1.0}))
    assert base.startswith("sha256:") and len(base) == 7 + 64
    assert case_fingerprint(ec, _cfg({"tool_trajectory_avg_score": 1.0})) == base
    restamped = EvalCase.model_validate({**EXPECTED, "creation_timestamp": 123.0})
    assert case_fingerprint(restamped, _cfg({"tool_trajectory_avg_score": 1.0})) == base
    assert case_fingerprint(ec, _cfg({"tool_trajectory_avg_score": 0.9})) != base
    edited = EvalCase.model_validate(case("c", WRONG))
    assert case_fingerprint(edited, _cfg({"tool_trajectory_avg_score": 1.0})) != base
    judged = {"final_response_match_v2": {"threshold": 0.5,
                                          "judge_model_options": {"judge_model": "gemini-2.5-flash"}}}
    other = {"final_response_match_v2": {"threshold": 0.5,
                                         "judge_model_options": {"judge_model": "gemini-2.5-pro"}}}
    assert case_fingerprint(ec, _cfg(judged)) != case_fingerprint(ec, _cfg(other))
    # Metric order is not content.
    two = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
    assert case_fingerprint(ec, _cfg(two)) == case_fingerprint(ec, _cfg(dict(reversed(two.items()))))


def test_scoring_writes_the_fingerprint():
    result = score("mean", True, True)
    ec = EvalCase.model_validate(EXPECTED)
    assert result.fingerprint == case_fingerprint(ec, _cfg({"tool_trajectory_avg_score": 0.5}))
