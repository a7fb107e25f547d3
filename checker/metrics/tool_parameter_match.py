"""tool_parameter_match: partial credit for the arguments of the expected tool calls.

ADK's development-branch metric (``_ToolParameterMatchEvaluator``), same scores:
- per turn, each expected call is aligned with the next actual call of the same name,
  scanning forward from the last aligned call; an expected call that finds none scores 0
  and does not move the scan, so it cannot hide a later match;
- an aligned call scores the fraction of the expected call's arguments that the actual call
  has with an equal value (Python equality: ``1 == 1.0``, ``"1" != 1``; extra actual
  arguments are ignored), and 1.0 when the expected call has no arguments;
- the turn scores the mean over its expected calls; a turn with no expected calls is not
  scored; the run scores the mean over scored turns (not evaluated when there is none);
- the metric passes at ``score >= threshold``.
"""

from __future__ import annotations

from typing import Any

from ..models.evalset import FunctionCall
from .base import Criterion, InvocationScore, Metric, RunInput, RunScore, ScoringContext, mean
from .base import paired_tool_calls, reference_problem

LISTED_CALLS = 25  # expected calls described per turn in details; the score uses every call


def align_by_name(actual: list[FunctionCall], expected: list[FunctionCall]) -> list[int | None]:
    """For each expected call, the index of the actual call aligned with it (or None)."""
    aligned: list[int | None] = []
    start = 0
    for want in expected:
        found = next((i for i in range(start, len(actual)) if actual[i].name == want.name), None)
        aligned.append(found)
        if found is not None:
            start = found + 1
    return aligned


def argument_score(actual: FunctionCall, expected: FunctionCall) -> tuple[float, list[str]]:
    """The fraction of the expected arguments matched, and the names of those not matched."""
    want = expected.args or {}
    if not want:
        return 1.0, []
    got = actual.args or {}
    unmatched = [name for name, value in want.items() if not (name in got and got[name] == value)]
    return (len(want) - len(unmatched)) / len(want), unmatched


def turn_score(actual: list[FunctionCall], expected: list[FunctionCall]) -> float | None:
    """The turn's score: mean over expected calls; None when no call is expected."""
    if not expected:
        return None
    scores = [0.0 if i is None else argument_score(actual[i], want)[0]
              for i, want in zip(align_by_name(actual, expected), expected, strict=False)]
    return sum(scores) / len(scores)


def _call_json(call: FunctionCall) -> dict[str, Any]:
    return {"name": call.name, "args": call.args}


def describe_turn(actual: list[FunctionCall], expected: list[FunctionCall]) -> dict[str, Any]:
    """What a report shows for a turn: each expected call that lost credit, with its match."""
    calls = []
    for k, (index, want) in enumerate(zip(align_by_name(actual, expected), expected, strict=False)):
        if index is None:
            calls.append({"call": k + 1, "expected": _call_json(want), "actual": None,
                          "score": 0.0, "unmatchedArgs": sorted(want.args or {})})
            continue
        score, unmatched = argument_score(actual[index], want)
        if unmatched:
            calls.append({"call": k + 1, "expected": _call_json(want),
                          "actual": _call_json(actual[index]), "actualIndex": index + 1,
                          "score": score, "unmatchedArgs": unmatched})
    return {"parameterMismatches": calls[:LISTED_CALLS], "parameterMismatchCount": len(calls)}


class ToolParameterMatch(Metric):
    name = "tool_parameter_match"
    description = ("Expected tool-call arguments matched, per expected call; calls aligned "
                   "by name in order (ADK development branch).")
    criterion_model = Criterion

    def score(self, criterion: Criterion, run: RunInput, context: ScoringContext) -> RunScore:
        problem = reference_problem(run)
        if problem:
            return problem
        per_invocation = []
        for actual, expected in paired_tool_calls(run):
            score = turn_score(actual, expected)
            details: dict[str, Any] = {"expectedCount": len(expected), "actualCount": len(actual)}
            if score is not None and score < 1.0:
                details.update(describe_turn(actual, expected))
            per_invocation.append(InvocationScore(score=score, details=details))
        scored = [i.score for i in per_invocation if i.score is not None]
        if not scored:
            return RunScore(invocations=per_invocation,
                            not_evaluated_reason="no turn of the case expects a tool call")
        return RunScore(score=mean(scored), invocations=per_invocation)
