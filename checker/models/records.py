"""Recorded runs (the replay / inference file, CONTRACT section 3)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PrivateAttr

from .base import OutputModel
from .evalset import Invocation


class RecordedRun(OutputModel):
    eval_set_id: str
    eval_id: str
    run: int = Field(ge=1)
    invocations: list[Invocation] = Field(default_factory=list)
    error: str | None = None
    # Extra, optional: the tail of the agent's stderr when the run errored.
    stderr_tail: str | None = None
    duration_seconds: float | None = None
    # How many times the agent errored on this run before this attempt (--retries).
    retries: int | None = None
    # Not written: why the agent could not start at all (agents/failfast.py), when so.
    _cannot_start: str | None = PrivateAttr(default=None)


class RecordedRuns(OutputModel):
    version: Literal[1] = 1
    runs: list[RecordedRun] = Field(default_factory=list)
    metadata: dict[str, Any] | None = None
