"""What the agent did on a case, as the results file keeps it (optional keys of version 1).

Every case scored from runs keeps ``trajectories``: each distinct tool trajectory its runs
took (the tool calls, names and arguments, turn by turn), the runs that took it and one
run's answers, so that a later comparison can tell what main usually does. A compared case
that regressed or changed, or whose behaviour changed beyond noise whatever its label
(``shift``), carries ``behaviour``: main's most common trajectory beside this run's, the
first divergence and the share of runs on each side taking each (compare/behaviour.py;
shown by report/behaviour.py).

The limits below are the writer's (scoring/trajectories.py) and the reader's: a results file
read back (a shard by ``merge``, a side of ``compare``, a baseline) is held to them as it is
validated, whatever wrote it - cut the way the writer cuts, saying so - so that no later
stage (the behaviour diff, the word diff of answers, the report) sees more than a run of
evalcheck would have written.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ConfigDict, Field, field_validator
from pydantic_core import to_json

from .base import OutputModel

MAX_TRAJECTORIES = 5   # distinct trajectories kept a case (the most common)
MAX_TURNS = 20         # turns kept of a trajectory
MAX_CALLS = 20         # tool calls kept of a turn
MAX_NAME = 128         # characters of a tool's name (Gemini allows 64)
MAX_ARGS = 400         # characters of a call's arguments as JSON
MAX_RESPONSE = 1000    # characters of an answer
_CUT = "\u2026 ["
_CUT_ROOM = 40         # characters of the cut's mark: "… [1,234,567 more characters]"


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters and a mark saying how many more there were.
    Text this cut already (its mark just past ``limit``) is kept as it is: reading a file
    back changes nothing the writer wrote."""
    if len(text) <= limit or (len(text) <= limit + _CUT_ROOM and text.startswith(_CUT, limit)):
        return text
    return text[:limit] + f"\u2026 [{len(text) - limit:,} more characters]"


def bounded_call(name: Any, args: Any) -> dict[str, Any]:
    """A tool call as a trajectory keeps it: its name cut to MAX_NAME, its arguments (an
    object; anything else is none) kept when their JSON is at most MAX_ARGS characters, else
    that JSON cut, as one string (it still tells the calls apart)."""
    named = clip(name, MAX_NAME) if isinstance(name, str) else ""
    if not isinstance(args, dict):
        return {"name": named, "args": {}}
    cut = args.get("\u2026") if len(args) == 1 else None
    if isinstance(cut, str) and clip(cut, MAX_ARGS) is cut:
        return {"name": named, "args": args}
    # Fast for the usual small call: its JSON as json.dumps writes it is under twice as long.
    if 2 * len(to_json(args, serialize_unknown=True)) <= MAX_ARGS:
        return {"name": named, "args": args}
    shown = json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)
    return {"name": named, "args": args if len(shown) <= MAX_ARGS else {"\u2026": clip(shown, MAX_ARGS)}}


class BehaviourModel(OutputModel):
    model_config = ConfigDict(extra="ignore")


class TrajectoryTurn(BehaviourModel):
    """One user turn: the tool calls in order (``{name, args}``) and the final response."""

    calls: list[dict[str, Any]] = Field(default_factory=list)
    response: str | None = None

    _first_calls = field_validator("calls", mode="before")(lambda calls: _first(calls, MAX_CALLS))

    @field_validator("calls")
    @classmethod
    def _bounded_calls(cls, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [bounded_call(c.get("name"), c.get("args")) for c in calls]

    @field_validator("response")
    @classmethod
    def _bounded_response(cls, response: str | None) -> str | None:
        return None if response is None else clip(response, MAX_RESPONSE)


def _first(items: Any, limit: int) -> Any:
    """The first ``limit`` items of a list, cut before they are validated: a crafted file's
    thousands more are never made into models."""
    return items[:limit] if isinstance(items, list) else items


def _turns(turns: Any) -> Any:
    return _first(turns, MAX_TURNS)


class Trajectory(BehaviourModel):
    """One distinct trajectory of a case: the runs that took it (run numbers) and the turns
    (calls as that trajectory, answers as its first run gave them)."""

    runs: list[int] = Field(default_factory=list)
    turns: list[TrajectoryTurn] = Field(default_factory=list)
    _bounded_turns = field_validator("turns", mode="before")(_turns)


class SideCounts(BehaviourModel):
    """How many runs of main (pooled) and of this run took a trajectory."""

    baseline: int = 0
    here: int = 0


class ShownTrajectory(BehaviourModel):
    turns: list[TrajectoryTurn] = Field(default_factory=list)
    runs: SideCounts = Field(default_factory=SideCounts)
    _bounded_turns = field_validator("turns", mode="before")(_turns)


class Divergence(BehaviourModel):
    """Where two trajectories first differ: 1-based turn and call (a call one past the end
    of the shorter list when one is the other's beginning)."""

    turn: int
    call: int


class CallShare(BehaviourModel):
    """A tool call (``{name, args}``) and the runs on each side that made it at least once."""

    call: dict[str, Any] = Field(default_factory=dict)
    runs: SideCounts = Field(default_factory=SideCounts)

    @field_validator("call")
    @classmethod
    def _bounded(cls, call: dict[str, Any]) -> dict[str, Any]:
        return bounded_call(call.get("name"), call.get("args"))


class BehaviourShift(BehaviourModel):
    """How the behaviour changed in distribution: main's most common trajectory is not this
    run's (``usual``), and the calls made in most runs of one side and few of the other's."""

    usual: bool = False
    calls: list[CallShare] = Field(default_factory=list)

    _bounded = field_validator("calls", mode="before")(lambda calls: _first(calls, MAX_CALLS))


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
