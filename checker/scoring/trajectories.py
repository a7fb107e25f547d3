"""A case's runs as the distinct tool trajectories they took (``CaseResult.trajectories``):
what a later comparison reads to say what main usually does (compare/behaviour.py).

A trajectory is the tool calls of every turn, names and arguments, in order; runs that made
the same calls share it, whatever they answered; the answers kept are those of the first
run that took it. Errored runs took none. Bounded: a results file of a large suite must
stay small (the limits below), and arguments or answers too long are cut, saying so.
"""

from __future__ import annotations

import json
from typing import Any

from ..models.behaviour import Trajectory, TrajectoryTurn, signature
from ..models.evalset import Invocation, content_text, tool_calls
from ..models.records import RecordedRun

MAX_TRAJECTORIES = 5   # distinct trajectories kept a case (the most common)
MAX_TURNS = 20         # turns kept of a trajectory
MAX_CALLS = 20         # tool calls kept of a turn
MAX_ARGS = 400         # characters of a call's arguments as JSON
MAX_RESPONSE = 1000    # characters of an answer


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\u2026 [{len(text) - limit:,} more characters]"


def _call(call: Any) -> dict[str, Any]:
    args = call.args if isinstance(call.args, dict) else {}
    shown = json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)
    # Too long to keep: its JSON, cut, as one string (it still tells the calls apart).
    return {"name": call.name or "", "args": args if len(shown) <= MAX_ARGS else {"\u2026": _clip(shown, MAX_ARGS)}}


def _turn(invocation: Invocation) -> TrajectoryTurn:
    calls = tool_calls(invocation)
    response = content_text(invocation.final_response) if invocation.final_response is not None else None
    return TrajectoryTurn(calls=[_call(c) for c in calls[:MAX_CALLS]],
                          response=None if response is None else _clip(response, MAX_RESPONSE))


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
