"""tool_trajectory_avg_score: ADK's binary per-invocation trajectory match.

Per invocation 1.0 when the actual tool calls match the expected ones under ``match_type``
(EXACT, IN_ORDER: expected is a subsequence of actual, ANY_ORDER: multiset inclusion), else
0.0; the run's score is the mean. Two calls match when the names are equal and, unless
``ignore_args``, the args are equal with Python equality (``1 == 1.0``, ``None != {}``).
"""

from __future__ import annotations

import enum
from functools import partial
from typing import Any

from pydantic import field_validator

from ..models.evalset import FunctionCall
from .base import Criterion, InvocationScore, Metric, RunInput, RunScore, ScoringContext, mean
from .base import paired_tool_calls, reference_problem


class MatchType(enum.Enum):
    EXACT = 0
    IN_ORDER = 1
    ANY_ORDER = 2


class TrajectoryCriterion(Criterion):
    match_type: MatchType = MatchType.EXACT
    ignore_args: bool = False

    @field_validator("match_type", mode="before")
    @classmethod
    def _coerce(cls, value: Any) -> Any:
        if isinstance(value, str):
            key = value.strip().upper().replace("-", "_").replace(" ", "_")
            if key not in MatchType.__members__:
                raise ValueError(f"match_type must be one of EXACT, IN_ORDER, ANY_ORDER, got '{value}'")
            return MatchType[key]
        return value


def trajectory_matches(actual: list[FunctionCall], expected: list[FunctionCall],
                       match_type: MatchType, ignore_args: bool) -> bool:
    # Comparisons written out, not in a helper: these loops are the hot path.
    if match_type is MatchType.EXACT:
        if len(actual) != len(expected):
            return False
        for call, want in zip(actual, expected, strict=False):
            if call.name != want.name or (not ignore_args and call.args != want.args):
                return False
        return True
    if not expected:
        return True
    if not actual:
        return False
    if match_type is MatchType.IN_ORDER:
        # Is expected a subsequence of actual? Stop as soon as every expected call is seen.
        pending = iter(expected)
        first = next(pending)
        name, args = first.name, first.args
        for call in actual:
            if call.name == name and (ignore_args or call.args == args):
                following = next(pending, None)
                if following is None:
                    return True
                name, args = following.name, following.args
        return False
    unused = list(actual)  # ANY_ORDER; greedy is optimal because matching is equality
    for exp in expected:
        name, args = exp.name, exp.args
        for i, call in enumerate(unused):
            if call.name == name and (ignore_args or call.args == args):
                del unused[i]
                break
        else:
            return False
    return True


def first_divergence(actual: list[FunctionCall], expected: list[FunctionCall],
                     ignore_args: bool) -> int | None:
    """Index of the first position where the two call lists differ (for reports)."""
    for i, (call, want) in enumerate(zip(actual, expected, strict=False)):
        if call.name != want.name or (not ignore_args and call.args != want.args):
            return i
    return None if len(actual) == len(expected) else min(len(actual), len(expected))


# Calls listed per failing turn: a window around the first divergence, as many as a report
# shows (listing every call of a long trajectory cost 20x more than matching it).
LISTED_CALLS = 25
# Above this many call pairs an IN_ORDER alignment matches greedily instead of by the
# longest common subsequence (a failing turn of the worst run only, but unbounded input).
ALIGN_CELLS = 250_000


def _same(call: FunctionCall, want: FunctionCall, ignore_args: bool) -> bool:
    return call.name == want.name and (ignore_args or call.args == want.args)


def _any_order_unmatched(actual: list[FunctionCall], expected: list[FunctionCall],
                         ignore_args: bool) -> tuple[list[int], list[int]]:
    """(expected calls no actual call matched, actual calls left over), as the ANY_ORDER
    match counts them: each expected call takes the first equal actual call not yet taken."""
    unused = list(range(len(actual)))
    missing = []
    for e, want in enumerate(expected):
        found = next((k for k, a in enumerate(unused) if _same(actual[a], want, ignore_args)), None)
        if found is None:
            missing.append(e)
        else:
            del unused[found]
    return missing, unused


def _in_order_unmatched(actual: list[FunctionCall], expected: list[FunctionCall],
                        ignore_args: bool) -> tuple[list[int], list[int]]:
    """(expected calls outside the longest common subsequence, actual calls outside it): IN_ORDER
    passes when expected is a subsequence of actual, so what it lacks is the expected calls no
    alignment in order can match."""
    n, m = len(expected), len(actual)
    if n * m > ALIGN_CELLS:  # greedy, as the match itself walks the calls
        matched_e, matched_a, a = set(), set(), 0
        for e, want in enumerate(expected):
            k = next((k for k in range(a, m) if _same(actual[k], want, ignore_args)), None)
            if k is not None:
                matched_e.add(e)
                matched_a.add(k)
                a = k + 1
    else:
        table = [[0] * (m + 1) for _ in range(n + 1)]
        for e in range(n - 1, -1, -1):
            for k in range(m - 1, -1, -1):
                table[e][k] = (table[e + 1][k + 1] + 1 if _same(actual[k], expected[e], ignore_args)
                               else max(table[e + 1][k], table[e][k + 1]))
        matched_e, matched_a, e, k = set(), set(), 0, 0
        while e < n and k < m:
            if _same(actual[k], expected[e], ignore_args):
                matched_e.add(e)
                matched_a.add(k)
                e, k = e + 1, k + 1
            elif table[e + 1][k] > table[e][k + 1]:  # ties: the earlier expected call is matched
                e += 1
            else:
                k += 1
    return [e for e in range(n) if e not in matched_e], [k for k in range(m) if k not in matched_a]


def _listed(calls: list[FunctionCall], indices: list[int]) -> list[dict[str, Any]]:
    return [{"index": i, "name": calls[i].name, "args": calls[i].args} for i in indices[:LISTED_CALLS]]


def unmatched_calls(actual: list[FunctionCall], expected: list[FunctionCall], match_type: MatchType,
                    ignore_args: bool) -> dict[str, Any]:
    """What an IN_ORDER or ANY_ORDER mismatch lacks, as that match type counts it: the
    ``missing`` expected calls, the ``extra`` actual calls (allowed by both, shown because an
    agent that called something else instead is what a reader looks for) and, for IN_ORDER,
    the calls made but ``outOfOrder`` (a missing call equal to an extra one, taken from both
    lists). Each listed with its 0-based ``index`` in its list, at most LISTED_CALLS, counted."""
    if match_type is MatchType.ANY_ORDER:
        missing, extra = _any_order_unmatched(actual, expected, ignore_args)
        out_of_order: list[int] = []
    else:
        missing, extra = _in_order_unmatched(actual, expected, ignore_args)
        out_of_order, left = [], list(extra)
        for e in list(missing):
            k = next((k for k in left if _same(actual[k], expected[e], ignore_args)), None)
            if k is not None:
                out_of_order.append(e)
                missing.remove(e)
                left.remove(k)
        extra = left
    found: dict[str, Any] = {"missing": _listed(expected, missing), "missingCount": len(missing),
                             "extra": _listed(actual, extra), "extraCount": len(extra)}
    if match_type is MatchType.IN_ORDER:
        found.update(outOfOrder=_listed(expected, out_of_order), outOfOrderCount=len(out_of_order))
    return found


def mismatch_window(actual: list[FunctionCall], expected: list[FunctionCall],
                    ignore_args: bool, match_type: MatchType = MatchType.EXACT) -> dict[str, Any]:
    """``firstDivergence`` (0-based) and the calls around it: ``expected``/``actual`` hold
    positions ``listedFrom`` to ``listedFrom + LISTED_CALLS - 1`` of each list. For IN_ORDER
    and ANY_ORDER, where a position is no reason to fail, no first divergence: the calls
    from the first on, and what is missing and extra (``unmatched_calls``)."""
    if match_type is not MatchType.EXACT:
        return {"firstDivergence": None, "listedFrom": 0,
                "expected": [{"name": c.name, "args": c.args} for c in expected[:LISTED_CALLS]],
                "actual": [{"name": c.name, "args": c.args} for c in actual[:LISTED_CALLS]],
                **unmatched_calls(actual, expected, match_type, ignore_args)}
    div = first_divergence(actual, expected, ignore_args)
    start = 0 if div is None else max(0, min(div - 2, max(len(actual), len(expected)) - LISTED_CALLS))
    end = start + LISTED_CALLS
    return {"firstDivergence": div, "listedFrom": start,
            "expected": [{"name": c.name, "args": c.args} for c in expected[start:end]],
            "actual": [{"name": c.name, "args": c.args} for c in actual[start:end]]}


class ToolTrajectoryAvgScore(Metric):
    name = "tool_trajectory_avg_score"
    description = "Tool calls match the expected trajectory (EXACT / IN_ORDER / ANY_ORDER), per turn 1 or 0."
    criterion_model = TrajectoryCriterion

    def score(self, criterion: TrajectoryCriterion, run: RunInput,
              context: ScoringContext) -> RunScore:
        problem = reference_problem(run)
        if problem:
            return problem
        per_invocation = []
        for a, e in paired_tool_calls(run):
            ok = trajectory_matches(a, e, criterion.match_type, criterion.ignore_args)
            # Only a mismatch needs explaining, and only if its run is the one reported.
            details: dict[str, Any] = {"expectedCount": len(e), "actualCount": len(a),
                                       "firstDivergence": None}
            explain = None if ok else partial(mismatch_window, a, e, criterion.ignore_args,
                                                         criterion.match_type)
            per_invocation.append(InvocationScore(score=1.0 if ok else 0.0, details=details,
                                                  explain=explain))
        score = mean([i.score for i in per_invocation if i.score is not None])
        return RunScore(score=score, invocations=per_invocation,
                        details={"matchType": criterion.match_type.name,
                                 "ignoreArgs": criterion.ignore_args})
