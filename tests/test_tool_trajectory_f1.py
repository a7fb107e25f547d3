"""tool_trajectory_f1 against an independent brute-force reference on many random small cases."""

from __future__ import annotations

import itertools
import random

import pytest

from checker.metrics.base import RunInput, ScoringContext
from checker.metrics.tool_trajectory_f1 import (
    ToolTrajectoryF1,
    TrajectoryF1Criterion,
    calls_match,
    f1_of,
    match_count,
)
from checker.models.evalset import Content, EvalCase, FunctionCall, IntermediateData, Invocation, Part

MODES = ("name_only", "name_and_args", "name_and_required_args")


def brute_ordered(actual, expected, mode) -> int:
    """Largest k with increasing index tuples in both lists that match pairwise."""
    for k in range(min(len(actual), len(expected)), 0, -1):
        for ia in itertools.combinations(range(len(actual)), k):
            for ie in itertools.combinations(range(len(expected)), k):
                if all(calls_match(actual[a], expected[e], mode) for a, e in zip(ia, ie)):
                    return k
    return 0


def brute_unordered(actual, expected, mode) -> int:
    """Largest set of disjoint matching pairs, by trying every assignment."""
    best = 0

    def go(j: int, used: frozenset[int], size: int) -> None:
        nonlocal best
        if size + (len(expected) - j) <= best:
            return
        if j == len(expected):
            best = max(best, size)
            return
        for i, call in enumerate(actual):
            if i not in used and calls_match(call, expected[j], mode):
                go(j + 1, used | {i}, size + 1)
        go(j + 1, used, size)

    go(0, frozenset(), 0)
    return best


def random_call(rng: random.Random) -> FunctionCall:
    name = rng.choice("abc")
    args = {}
    for key in rng.sample(["x", "y", "z"], rng.randint(0, 3)):
        args[key] = rng.choice([1, 1.0, 2, True, "1", [1, 2], {"k": 1}])
    return FunctionCall(name=name, args=args if args or rng.random() < 0.7 else None)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("ordered", [True, False])
def test_matches_brute_force_on_random_cases(mode, ordered):
    rng = random.Random(f"{mode}-{ordered}")
    for _ in range(400):
        actual = [random_call(rng) for _ in range(rng.randint(0, 6))]
        expected = [random_call(rng) for _ in range(rng.randint(0, 6))]
        pairs = match_count(actual, expected, mode, ordered)
        want = (brute_ordered if ordered else brute_unordered)(actual, expected, mode)
        assert len(pairs) == want, (actual, expected)
        # The pairs themselves are a valid alignment / matching.
        assert len({a for a, _ in pairs}) == len(pairs) == len({e for _, e in pairs})
        assert all(calls_match(actual[a], expected[e], mode) for a, e in pairs)
        if ordered:
            assert [a for a, _ in pairs] == sorted(a for a, _ in pairs)
            assert [e for _, e in sorted(pairs)] == sorted(e for _, e in pairs)


def test_greedy_would_be_wrong_for_required_args():
    # Expected b(x=1) could take either actual call; greedy pairing it with the first leaves
    # expected b(x=1, y=2) without its only partner.
    actual = [FunctionCall(name="b", args={"x": 1, "y": 2}), FunctionCall(name="b", args={"x": 1})]
    expected = [FunctionCall(name="b", args={"x": 1}), FunctionCall(name="b", args={"x": 1, "y": 2})]
    assert len(match_count(actual, expected, "name_and_required_args", ordered=False)) == 2


def test_empty_trajectory_rules():
    assert f1_of(0, 0, 0)[0] == 1.0
    assert f1_of(0, 3, 0)[0] == 0.0
    assert f1_of(0, 0, 2)[0] == 0.0
    f1, p, r = f1_of(3, 4, 6)
    assert (p, r) == (0.75, 0.5) and f1 == pytest.approx(0.6)


def _invocation(calls):
    return Invocation(user_content=Content(role="user", parts=[Part(text="q")]),
                      intermediate_data=IntermediateData(tool_uses=calls))


def test_metric_scores_and_details():
    expected = [FunctionCall(name="search", args={"q": "a"}), FunctionCall(name="book", args={"id": 1}),
                FunctionCall(name="email", args={})]
    actual = [FunctionCall(name="search", args={"q": "a"}), FunctionCall(name="search", args={"q": "b"}),
              FunctionCall(name="book", args={"id": 2})]
    case = EvalCase(eval_id="c", conversation=[_invocation(expected), _invocation([])])
    run = RunInput(case=case, actual=[_invocation(actual), _invocation([])], expected=case.conversation,
                   scenario=None)
    metric = ToolTrajectoryF1()
    result = metric.score(TrajectoryF1Criterion(threshold=0.5, match_mode="name_and_args"), run, ScoringContext())
    first = result.invocations[0]
    # M=1 (search q=a), P=1/3, R=1/3 -> F1=1/3; second invocation: both empty -> 1.0
    assert first.score == pytest.approx(1 / 3)
    assert [c["name"] for c in first.details["missing"]] == ["book", "email"]
    assert [c["args"] for c in first.details["unexpected"]] == [{"q": "b"}, {"id": 2}]
    assert result.invocations[1].score == 1.0
    assert result.score == pytest.approx((1 / 3 + 1) / 2)
    by_name = metric.score(TrajectoryF1Criterion(threshold=0.5, match_mode="NAME-ONLY"), run, ScoringContext())
    assert by_name.invocations[0].score == pytest.approx(2 / 3)  # search, book matched: P=R=2/3


def test_not_evaluated_without_reference():
    case = EvalCase.model_validate({"eval_id": "s", "conversation_scenario": {
        "starting_prompt": "hi", "conversation_plan": "ask"}})
    run = RunInput(case=case, actual=[_invocation([])], expected=None, scenario=case.conversation_scenario)
    result = ToolTrajectoryF1().score(TrajectoryF1Criterion(threshold=0.5), run, ScoringContext())
    assert result.score is None and result.not_evaluated_reason


def test_numeric_equality_is_python_equality():
    a = [FunctionCall(name="f", args={"n": 1, "flag": True})]
    e = [FunctionCall(name="f", args={"n": 1.0, "flag": 1})]
    for ordered in (True, False):
        assert len(match_count(a, e, "name_and_args", ordered)) == 1
    assert match_count(a, [FunctionCall(name="f", args={"n": "1", "flag": True})], "name_and_args", True) == []
