"""What the agent does differently: a compared case's ``behaviour`` (models/behaviour.py).

Main's side is every run pooled for the case (the results of main whose runs its comparison
pooled; for a ``changed`` case, the newest result that has it), counted per distinct
trajectory; main's *usual* trajectory is its most common (ties: the newer result's). This
run's side is its runs, with the fresh confirmation runs when it had some (they are this
PR's runs too). This run's shown trajectory is its most common one that differs from main's
usual, else main's usual as this run took it (same calls, its own answers). Each is counted
on both sides, so a reader sees how often main took what the PR does and the other way round.

Made for every compared case whose behaviour changed beyond noise in distribution (``shift``),
whatever its label: main's most common trajectory is not this run's (each the one most
common on its side, no tie), or a tool call is made in most runs of one side (more than
half) and few of the other's (at most a quarter). A regressed or changed case gets one
too, changed or not: the reader looks there for why. A case whose runs only vary as main's
did gets none. Only when both sides kept their trajectories (a results file of an evalcheck
that did not write them has none). Pure.
"""

from __future__ import annotations

import json
from typing import Any

from ..models.behaviour import (Behaviour, BehaviourShift, CallShare, Divergence, ShownTrajectory,
                                SideCounts, TrajectoryTurn, signature)
from ..models.results import CaseResult

MOST = 0.5   # a call made in more than this share of one side's runs ...
FEW = 0.25   # ... and at most this share of the other's is a change beyond noise
MAX_CALLS_SHOWN = 3  # calls that moved, kept a case (the largest moves)

Counted = dict[str, tuple[int, list[TrajectoryTurn]]]


def always_shown(case: CaseResult) -> bool:
    """A case whose behaviour diff is made whether or not it changed: the reader of a
    regression, or of a case whose eval data changed, looks there for why."""
    return case.change in ("regressed", "changed")


def compared(case: CaseResult) -> bool:
    return case.change not in (None, "new", "carried")


def _completed(case: CaseResult) -> int:
    return sum(1 for r in case.runs if r.status != "error")


def _counted(cases: list[CaseResult]) -> Counted:
    """Runs per trajectory over ``cases`` (newest first: the turns kept are the newest's)."""
    out: Counted = {}
    for case in cases:
        for trajectory in case.trajectories or []:
            key = signature(trajectory.turns)
            runs, turns = out.get(key, (0, trajectory.turns))
            out[key] = (runs + len(trajectory.runs), turns)
    return out


def first_divergence(a: list[TrajectoryTurn], b: list[TrajectoryTurn]) -> Divergence | None:
    """The first (turn, call) where the two trajectories' calls differ; None if they agree."""
    for index in range(max(len(a), len(b))):
        if index >= len(a) or index >= len(b):
            return Divergence(turn=index + 1, call=1)
        left, right = a[index].calls, b[index].calls
        if left == right:
            continue
        call = next((i for i, (x, y) in enumerate(zip(left, right, strict=False)) if x != y),
                    min(len(left), len(right)))
        return Divergence(turn=index + 1, call=call + 1)
    return None


def _most_common(counted: Counted) -> str | None:
    """The one trajectory taken by more runs than any other; None on a tie for the top."""
    ranked = sorted(counted.items(), key=lambda item: -item[1][0])
    if not ranked or (len(ranked) > 1 and ranked[0][1][0] == ranked[1][1][0]):
        return None
    return ranked[0][0]


def _call_key(call: dict[str, Any]) -> str:
    return json.dumps(call, ensure_ascii=False, sort_keys=True, default=str)


def _runs_per_call(counted: Counted) -> dict[str, tuple[int, dict[str, Any]]]:
    """Per distinct call (name and arguments), the runs that made it at least once."""
    out: dict[str, tuple[int, dict[str, Any]]] = {}
    for runs, turns in counted.values():
        made = {_call_key(c): c for t in turns for c in t.calls}
        for key, call in made.items():
            out[key] = (out.get(key, (0, call))[0] + runs, call)
    return out


def shift(main: Counted, here: Counted, main_runs: int, here_runs: int) -> BehaviourShift | None:
    """How the behaviour changed beyond noise in distribution (module docstring); None when
    it did not. ``main_runs``/``here_runs``: the runs each side completed (the shares'
    denominators: a run that took no trajectory kept still counts)."""
    if not main_runs or not here_runs:
        return None
    usual_main, usual_here = _most_common(main), _most_common(here)
    usual = usual_main is not None and usual_here is not None and usual_main != usual_here
    on_main, on_here = _runs_per_call(main), _runs_per_call(here)
    moved = []
    for key in {**on_main, **on_here}:
        a, call = on_main.get(key, (0, None))
        b, call_here = on_here.get(key, (0, None))
        share_a, share_b = a / main_runs, b / here_runs
        if (share_a > MOST and share_b <= FEW) or (share_b > MOST and share_a <= FEW):
            moved.append((abs(share_a - share_b), CallShare(call=call or call_here or {},
                                                            runs=SideCounts(baseline=a, here=b))))
    moved.sort(key=lambda m: -m[0])  # stable: the calls in the order first seen
    if not usual and not moved:
        return None
    return BehaviourShift(usual=usual, calls=[c for _, c in moved[:MAX_CALLS_SHOWN]])


def case_behaviour(head: CaseResult, baseline: list[CaseResult],
                   fresh: CaseResult | None = None) -> Behaviour | None:
    """``head``'s behaviour against main's results of the case (``baseline``, newest first),
    this run's fresh confirmation runs of it (``fresh``) counted on its side; None when it is
    not to be shown (module docstring)."""
    if not compared(head) or not head.trajectories or not any(c.trajectories for c in baseline):
        return None
    ours = [head] + ([fresh] if fresh is not None and fresh.trajectories else [])
    main = _counted(baseline)
    here = _counted(ours)
    main_runs = sum(_completed(c) for c in baseline if c.trajectories)
    here_runs = sum(_completed(c) for c in ours)
    moved = shift(main, here, main_runs, here_runs)
    if moved is None and not always_shown(head):
        return None
    usual = max(main, key=lambda key: main[key][0])  # first of the most common: the newest's
    others = [key for key in here if key != usual]  # this run's most common that is not main's usual
    shown = max(others, key=lambda key: here[key][0]) if others else usual
    main_turns, here_turns = main[usual][1], here[shown][1]  # (others empty: usual is here)
    return Behaviour(
        baseline=ShownTrajectory(turns=main_turns, runs=SideCounts(baseline=main[usual][0],
                                                                   here=here.get(usual, (0, []))[0])),
        here=ShownTrajectory(turns=here_turns, runs=SideCounts(baseline=main.get(shown, (0, []))[0],
                                                               here=here[shown][0])),
        runs=SideCounts(baseline=main_runs, here=here_runs),
        first_divergence=first_divergence(main_turns, here_turns), shift=moved,
        fresh_runs=_completed(ours[1]) if len(ours) > 1 else None)
