"""What the agent did on a case, as the results file keeps it (optional keys of version 1).

Every case scored from runs keeps ``trajectories``: each distinct tool trajectory its runs
took (the tool calls, names and arguments, turn by turn), the runs that took it and one
run's answers, so that a later comparison can tell what main usually does. A compared case
that regressed or changed, or whose behaviour changed beyond noise whatever its label
(``shift``), carries ``behaviour``: main's most common trajectory beside this run's, the
first divergence and the share of runs on each side taking each (compare/behaviour.py;
shown by report/behaviour.py).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ConfigDict, Field

from .base import OutputModel


class BehaviourModel(OutputModel):
    model_config = ConfigDict(extra="ignore")


class TrajectoryTurn(BehaviourModel):
    """One user turn: the tool calls in order (``{name, args}``) and the final response."""

    calls: list[dict[str, Any]] = Field(default_factory=list)
    response: str | None = None


class Trajectory(BehaviourModel):
    """One distinct trajectory of a case: the runs that took it (run numbers) and the turns
    (calls as that trajectory, answers as its first run gave them)."""

    runs: list[int] = Field(default_factory=list)
    turns: list[TrajectoryTurn] = Field(default_factory=list)


class SideCounts(BehaviourModel):
    """How many runs of main (pooled) and of this run took a trajectory."""

    baseline: int = 0
    here: int = 0


class ShownTrajectory(BehaviourModel):
    turns: list[TrajectoryTurn] = Field(default_factory=list)
    runs: SideCounts = Field(default_factory=SideCounts)


class Divergence(BehaviourModel):
    """Where two trajectories first differ: 1-based turn and call (a call one past the end
    of the shorter list when one is the other's beginning)."""

    turn: int
    call: int


class CallShare(BehaviourModel):
    """A tool call (``{name, args}``) and the runs on each side that made it at least once."""

    call: dict[str, Any] = Field(default_factory=dict)
    runs: SideCounts = Field(default_factory=SideCounts)


class BehaviourShift(BehaviourModel):
    """How the behaviour changed in distribution: main's most common trajectory is not this
    run's (``usual``), and the calls made in most runs of one side and few of the other's."""

    usual: bool = False
    calls: list[CallShare] = Field(default_factory=list)


class Behaviour(BehaviourModel):
    """Main's most common trajectory (``baseline``; None for a case main does not have)
    beside this run's (``here``: the most common one that differs from main's, else main's
    own with this run's answers), the runs summarised on each side, the first divergence
    (None: the same tool calls), and how the behaviour changed beyond noise (None: not)."""

    baseline: ShownTrajectory | None = None
    here: ShownTrajectory
    runs: SideCounts
    first_divergence: Divergence | None = None
    # Optional (newer evalchecks): the change in distribution, when beyond noise; the fresh
    # confirmation runs of this run counted in ``here`` and ``runs.here``.
    shift: BehaviourShift | None = None
    fresh_runs: int | None = None


def signature(turns: list[TrajectoryTurn]) -> str:
    """What makes two trajectories the same: every turn's calls, names and arguments."""
    return json.dumps([t.calls for t in turns], ensure_ascii=False, sort_keys=True, default=str)
