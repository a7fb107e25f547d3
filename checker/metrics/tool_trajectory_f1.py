"""tool_trajectory_f1: partial credit for tool trajectories (ADK has only a 1/0 match).

Per invocation with A actual calls, E expected calls and M matched calls: A = E = 0 -> 1.0;
exactly one of them 0 -> 0.0; else P = M/A, R = M/E, F1 = 2PR/(P+R). The run's score is the
mean over invocations. M is the size of an optimal pairing of actual with expected calls:
- ``ordered`` (default): the longest common subsequence under the match relation (a maximum
  monotonic alignment), computed bit-parallel so 1,000-call trajectories take milliseconds;
- unordered: a maximum-cardinality bipartite matching (Hopcroft-Karp where the relation is not
  an equivalence; greedy is wrong there when names repeat).

Match modes: ``name_only`` (default); ``name_and_args`` (args equal with Python equality,
missing args counting as ``{}``); ``name_and_required_args`` (every argument of the expected
call is present in the actual call with an equal value; extra actual arguments are ignored).
"""

from __future__ import annotations

from collections import defaultdict, deque
from typing import Any, Literal

from pydantic import field_validator

from ..models.evalset import FunctionCall
from .base import Criterion, InvocationScore, Metric, RunInput, RunScore, ScoringContext, mean
from .base import paired_tool_calls, reference_problem

MatchMode = Literal["name_only", "name_and_args", "name_and_required_args"]
DETAIL_LIMIT = 50  # calls listed per invocation in details; counts are always complete


class TrajectoryF1Criterion(Criterion):
    match_mode: MatchMode = "name_only"
    ordered: bool = True

    @field_validator("match_mode", mode="before")
    @classmethod
    def _normalise(cls, value: Any) -> Any:
        if isinstance(value, str):
            return value.strip().lower().replace("-", "_").replace(" ", "_")
        return value


def _freeze(value: Any) -> Any:
    """A hashable twin of a JSON value whose equality is Python equality (1 == 1.0 == True)."""
    if isinstance(value, dict):
        return frozenset((k, _freeze(v)) for k, v in value.items())
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


def _args(call: FunctionCall) -> dict[str, Any]:
    return call.args or {}


def call_key(call: FunctionCall, mode: MatchMode) -> Any:
    """Equivalence-class key for the modes whose match relation is an equivalence."""
    if mode == "name_only":
        return call.name
    return (call.name, _freeze(_args(call)))


def calls_match(actual: FunctionCall, expected: FunctionCall, mode: MatchMode) -> bool:
    if actual.name != expected.name:
        return False
    if mode == "name_only":
        return True
    a, e = _args(actual), _args(expected)
    if mode == "name_and_args":
        return a == e
    return all(k in a and a[k] == v for k, v in e.items())


def match_masks(actual: list[FunctionCall], expected: list[FunctionCall], mode: MatchMode) -> list[int]:
    """For each expected call, a bitmask of the actual positions it matches."""
    if mode != "name_and_required_args":
        by_key: dict[Any, int] = defaultdict(int)
        for i, call in enumerate(actual):
            by_key[call_key(call, mode)] |= 1 << i
        return [by_key.get(call_key(e, mode), 0) for e in expected]
    by_name: dict[str, list[int]] = defaultdict(list)
    for i, call in enumerate(actual):
        by_name[call.name].append(i)
    cache: dict[Any, int] = {}  # identical expected calls share one mask
    masks = []
    for exp in expected:
        key = (exp.name, _freeze(_args(exp)))
        if key not in cache:
            mask = 0
            for i in by_name.get(exp.name, ()):
                if calls_match(actual[i], exp, mode):
                    mask |= 1 << i
            cache[key] = mask
        masks.append(cache[key])
    return masks


def ordered_alignment(m: int, masks: list[int]) -> list[tuple[int, int]]:
    """Pairs (actual index, expected index) of a longest common subsequence.

    Bit-parallel LCS (Allison-Dix / Hyyro): bit i of ``v`` is 0 where the LCS of the first
    i+1 actual calls exceeds that of the first i. Keeping every column lets us trace back.
    """
    full = (1 << m) - 1
    v = full
    columns = [v]
    for mask in masks:
        u = v & mask
        v = ((v + u) | (v - u)) & full
        columns.append(v)

    def lcs(i: int, j: int) -> int:  # LCS of actual[:i] and expected[:j]
        return i - (columns[j] & ((1 << i) - 1)).bit_count()

    pairs: list[tuple[int, int]] = []
    i, j = m, len(masks)
    while i > 0 and j > 0:
        here = lcs(i, j)
        if (masks[j - 1] >> (i - 1)) & 1 and lcs(i - 1, j - 1) + 1 == here:
            pairs.append((i - 1, j - 1))
            i -= 1
            j -= 1
        elif lcs(i - 1, j) == here:
            i -= 1
        else:
            j -= 1
    pairs.reverse()
    return pairs


def _hopcroft_karp(adjacency: list[list[int]], n_right: int) -> list[tuple[int, int]]:  # noqa: C901 -- textbook, kept whole
    """Maximum matching of left vertices (expected) to right vertices (actual)."""
    INF = float("inf")
    match_left: list[int] = [-1] * len(adjacency)
    match_right: list[int] = [-1] * n_right
    for left, neighbours in enumerate(adjacency):  # greedy start: usually near-perfect
        for right in neighbours:
            if match_right[right] == -1:
                match_left[left], match_right[right] = right, left
                break
    while True:
        dist = [INF] * len(adjacency)
        queue = deque(u for u in range(len(adjacency)) if match_left[u] == -1)
        for u in queue:
            dist[u] = 0
        found = False
        while queue:
            u = queue.popleft()
            for right in adjacency[u]:
                w = match_right[right]
                if w == -1:
                    found = True
                elif dist[w] == INF:
                    dist[w] = dist[u] + 1
                    queue.append(w)
        if not found:
            break
        for start in range(len(adjacency)):
            if match_left[start] != -1:
                continue
            # Iterative DFS along the BFS layers.
            stack = [(start, iter(adjacency[start]))]
            path: list[tuple[int, int]] = []
            while stack:
                u, edges = stack[-1]
                advanced = False
                for right in edges:
                    w = match_right[right]
                    if w == -1:
                        path.append((u, right))
                        for pu, pr in path:
                            match_left[pu], match_right[pr] = pr, pu
                        stack = []
                        advanced = True
                        break
                    if dist[w] == dist[u] + 1:
                        path.append((u, right))
                        stack.append((w, iter(adjacency[w])))
                        advanced = True
                        break
                if not advanced and stack:
                    dist[u] = INF
                    stack.pop()
                    if path:
                        path.pop()
    return [(r, left) for left, r in enumerate(match_left) if r != -1]


def unordered_matching(actual: list[FunctionCall], expected: list[FunctionCall], mode: MatchMode,
                       masks: list[int]) -> list[tuple[int, int]]:
    if mode != "name_and_required_args":
        # An equivalence relation: pairing within each class is optimal.
        pools: dict[Any, deque[int]] = defaultdict(deque)
        for i, call in enumerate(actual):
            pools[call_key(call, mode)].append(i)
        pairs = []
        for j, exp in enumerate(expected):
            pool = pools.get(call_key(exp, mode))
            if pool:
                pairs.append((pool.popleft(), j))
        return sorted(pairs)
    adjacency = [[i for i in range(len(actual)) if (mask >> i) & 1] for mask in masks]
    return sorted(_hopcroft_karp(adjacency, len(actual)))


def f1_of(matched: int, n_actual: int, n_expected: int) -> tuple[float, float | None, float | None]:
    """(F1, precision, recall) with the empty-trajectory rules."""
    if n_actual == 0 and n_expected == 0:
        return 1.0, None, None
    if n_actual == 0 or n_expected == 0:
        return 0.0, (0.0 if n_actual else None), (0.0 if n_expected else None)
    p, r = matched / n_actual, matched / n_expected
    return (2 * p * r / (p + r) if p + r else 0.0), p, r


def match_count(actual: list[FunctionCall], expected: list[FunctionCall], mode: MatchMode,
                ordered: bool) -> list[tuple[int, int]]:
    if not actual or not expected:
        return []
    masks = match_masks(actual, expected, mode)
    if ordered:
        return ordered_alignment(len(actual), masks)
    return unordered_matching(actual, expected, mode, masks)


def _listed(calls: list[FunctionCall], indices: list[int]) -> list[dict[str, Any]]:
    return [{"index": i, "name": calls[i].name, "args": calls[i].args} for i in indices[:DETAIL_LIMIT]]


class ToolTrajectoryF1(Metric):
    name = "tool_trajectory_f1"
    description = "Partial credit for tool calls: F1 of precision and recall against the expected calls."
    criterion_model = TrajectoryF1Criterion

    def score(self, criterion: TrajectoryF1Criterion, run: RunInput,
              context: ScoringContext) -> RunScore:
        problem = reference_problem(run)
        if problem:
            return problem
        per_invocation = []
        for actual, expected in paired_tool_calls(run):
            pairs = match_count(actual, expected, criterion.match_mode, criterion.ordered)
            f1, precision, recall = f1_of(len(pairs), len(actual), len(expected))
            used_a = {a for a, _ in pairs}
            used_e = {e for _, e in pairs}
            missing = [j for j in range(len(expected)) if j not in used_e]
            unexpected = [i for i in range(len(actual)) if i not in used_a]
            per_invocation.append(InvocationScore(score=f1, details={
                "precision": precision, "recall": recall, "matched": len(pairs),
                "actualCount": len(actual), "expectedCount": len(expected),
                "missing": _listed(expected, missing), "missingCount": len(missing),
                "unexpected": _listed(actual, unexpected), "unexpectedCount": len(unexpected),
            }))
        return RunScore(score=mean([i.score for i in per_invocation if i.score is not None]),
                        invocations=per_invocation,
                        details={"matchMode": criterion.match_mode, "ordered": criterion.ordered})
