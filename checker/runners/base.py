"""The interface between the pipeline and the agent runners."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..models.evalset import EvalCase
from ..models.records import RecordedRun


@dataclass(frozen=True)
class RunJob:
    """One run of one eval case."""

    eval_set_id: str
    case: EvalCase
    run: int  # 1-based
    turn_timeout: float = 300.0
    app_name: str | None = None  # --app-name override

    @property
    def eval_id(self) -> str:
        return self.case.eval_id


class AgentRunner(Protocol):
    """Runs one job and always returns a RecordedRun: failures set ``error``, never raise."""

    async def run(self, job: RunJob) -> RecordedRun: ...

    async def aclose(self) -> None: ...
