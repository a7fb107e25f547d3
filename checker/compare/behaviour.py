"""What the agent does differently: a compared case's ``behaviour`` (models/behaviour.py).

Main's side is every run pooled for the case (the results of main whose runs its comparison
pooled; for a ``changed`` case, the newest result that has it), counted per distinct
trajectory; main's *usual* trajectory is its most common (ties: the newer result's). This
run's shown trajectory is its most common one that differs from main's usual, else main's
usual as this run took it (same calls, its own answers). Each is counted on both sides, so
a reader sees how often main took what the PR does and the other way round. Only for
regressed, changed and flaky cases, and only when both sides kept their trajectories (a
results file of an evalcheck that did not write them has none). Pure.
"""

from __future__ import annotations

from ..models.behaviour import Behaviour, Divergence, ShownTrajectory, SideCounts, TrajectoryTurn, signature
from ..models.results import CaseResult


def wants_behaviour(case: CaseResult) -> bool:
    return case.change in ("regressed", "changed") or (case.flaky and case.change != "carried")


def _completed(case: CaseResult) -> int:
    return sum(1 for r in case.runs if r.status != "error")


def _counted(cases: list[CaseResult]) -> dict[str, tuple[int, list[TrajectoryTurn]]]:
    """Runs per trajectory over ``cases`` (newest first: the turns kept are the newest's)."""
    out: dict[str, tuple[int, list[TrajectoryTurn]]] = {}
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
        call = next((i for i, (x, y) in enumerate(zip(left, right)) if x != y), min(len(left), len(right)))
        return Divergence(turn=index + 1, call=call + 1)
    return None


def case_behaviour(head: CaseResult, baseline: list[CaseResult]) -> Behaviour | None:
    """``head``'s behaviour against main's results of the case (``baseline``, newest first)."""
    if not head.trajectories or not any(c.trajectories for c in baseline):
        return None
    main = _counted(baseline)
    here = _counted([head])
    usual = max(main, key=lambda key: main[key][0])  # first of the most common: the newest's
    shown = next((key for key in here if key != usual), None) or (usual if usual in here else next(iter(here)))
    main_turns, here_turns = main[usual][1], here[shown][1]
    return Behaviour(
        baseline=ShownTrajectory(turns=main_turns, runs=SideCounts(baseline=main[usual][0],
                                                                   here=here.get(usual, (0, []))[0])),
        here=ShownTrajectory(turns=here_turns, runs=SideCounts(baseline=main.get(shown, (0, []))[0],
                                                               here=here[shown][0])),
        runs=SideCounts(baseline=sum(_completed(c) for c in baseline if c.trajectories), here=_completed(head)),
        first_divergence=first_divergence(main_turns, here_turns))
