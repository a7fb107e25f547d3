"""A case's runs as the distinct tool trajectories they took (``CaseResult.trajectories``):
what a later comparison reads to say what main usually does (compare/behaviour.py).

A trajectory is the tool calls of every turn, names and arguments, in order; runs that made
the same calls share it, whatever they answered; the answers kept are those of the first
run that took it. Errored runs took none. Bounded: a results file of a large suite must
stay small (the limits of models/behaviour.py, which a results file read back is held to
too), and names, arguments or answers too long are cut, saying so.
"""

from __future__ import annotations

from typing import Any

from ..models.behaviour import (MAX_CALLS, MAX_RESPONSE, MAX_TRAJECTORIES, MAX_TURNS, Trajectory,
                                TrajectoryTurn, bounded_call, clip, signature)
from ..models.evalset import Invocation, content_text, tool_calls
from ..models.records import RecordedRun



def _call(call: Any) -> dict[str, Any]:
    return bounded_call(call.name, call.args)  # the limits: models/behaviour.py


def _turn(invocation: Invocation) -> TrajectoryTurn:
    calls = tool_calls(invocation)
    response = content_text(invocation.final_response) if invocation.final_response is not None else None
    return TrajectoryTurn(calls=[_call(c) for c in calls[:MAX_CALLS]],
                          response=None if response is None else clip(response, MAX_RESPONSE))


def summarise(runs: list[RecordedRun]) -> list[Trajectory] | None:
    """The distinct trajectories of ``runs`` (errored runs left out), most common first (ties:
    the one an earlier run took first); None when no run completed."""
    found: dict[str, Trajectory] = {}
    for run in sorted(runs, key=lambda r: r.run):
        if run.error is not None:
            continue
        turns = [_turn(i) for i in run.invocations[:MAX_TURNS]]
        key = signature(turns)
        if key in found:
            found[key].runs.append(run.run)
        else:
            found[key] = Trajectory(runs=[run.run], turns=turns)
    if not found:
        return None
    ranked = sorted(found.values(), key=lambda t: -len(t.runs))  # stable: first taken first
    return ranked[:MAX_TRAJECTORIES]


def merged(earlier: list[Trajectory] | None, later: list[Trajectory] | None) -> list[Trajectory] | None:
    """The distinct trajectories of two sets of runs of one case (rounds of fresh runs), most
    common first, as ``summarise`` keeps them."""
    if not earlier or not later:
        return earlier or later
    found: dict[str, Trajectory] = {}
    for trajectory in [*earlier, *later]:
        key = signature(trajectory.turns)
        if key in found:
            found[key] = found[key].model_copy(update={"runs": found[key].runs + trajectory.runs})
        else:
            found[key] = trajectory
    ranked = sorted(found.values(), key=lambda t: -len(t.runs))
    return ranked[:MAX_TRAJECTORIES]
