"""Recorded runs (the replay / inference file, CONTRACT section 3)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PrivateAttr

from .base import OutputModel
from .evalset import Invocation
from .refusal import ServiceRefusal
from .setkey import set_key
from .usage import Tokens


class RecordedRun(OutputModel):
    eval_set_id: str
    # Extra, optional: the eval file, when another file of the run has the same eval set id
    # (a monorepo; checker/models/setkey.py).
    eval_set_path: str | None = None
    eval_id: str
    run: int = Field(ge=1)
    invocations: list[Invocation] = Field(default_factory=list)
    error: str | None = None
    # Extra, optional: the tail of the agent's stderr when the run errored.
    stderr_tail: str | None = None
    duration_seconds: float | None = None
    # How many times the agent errored on this run before this attempt (--retries).
    retries: int | None = None
    # Extra, optional: the model service refused or failed this run (not the agent's failure:
    # never counted as a failing run), when it still did after evalcheck's waits; then
    # ``error`` says so. ``refusals``: the attempts of this run the service refused before,
    # and the model calls of it that the agent retried itself and told ({"type": "refused"}).
    unavailable: ServiceRefusal | None = None
    refusals: int | None = None
    # Extra, optional: the tokens of the run's simulated user (conversation_scenario), every
    # attempt's (--retries) included; absent when it made no model call.
    simulator_usage: Tokens | None = None
    # Not written: why the agent could not start at all (agents/failfast.py), when so.
    _cannot_start: str | None = PrivateAttr(default=None)

    @property
    def key(self) -> str:
        """The eval set's key (its id, qualified by its path when it carries one)."""
        return set_key(self.eval_set_id, self.eval_set_path,
                       {self.eval_set_id} if self.eval_set_path is not None else set())


class RecordedRuns(OutputModel):
    version: Literal[1] = 1
    runs: list[RecordedRun] = Field(default_factory=list)
    metadata: dict[str, Any] | None = None
