"""The interface between the pipeline and the agent runners."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..models.evalset import EvalCase
from ..models.records import RecordedRun
from ..models.refusal import ServiceRefusal
from ..models.setkey import set_key

if TYPE_CHECKING:
    from ..simulation.config import UserSimulatorConfig
    from ..simulation.simulator import UserModel


@dataclass(frozen=True)
class RunJob:
    """One run of one eval case."""

    eval_set_id: str
    case: EvalCase
    run: int  # 1-based
    turn_timeout: float = 300.0
    app_name: str | None = None  # --app-name override
    # conversation_scenario cases: the simulated user's settings and model.
    user_simulator: UserSimulatorConfig | None = None
    user_model: UserModel | None = None
    # The eval file, when another selected file has the same eval set id (models/setkey.py).
    eval_set_path: str | None = None
    # The eval file relative to the working directory, for the agent (the start message's
    # evalSetPath: an agent serving several, e.g. evalcheck-adk, picks by it).
    eval_file: str | None = None

    @property
    def eval_id(self) -> str:
        return self.case.eval_id

    @property
    def key(self) -> str:
        return set_key(self.eval_set_id, self.eval_set_path,
                       {self.eval_set_id} if self.eval_set_path is not None else set())

    def record(self, **fields: Any) -> RecordedRun:
        """This job's recorded run."""
        return RecordedRun(eval_set_id=self.eval_set_id, eval_set_path=self.eval_set_path,
                           eval_id=self.eval_id, run=self.run, **fields)


class AgentRunner(Protocol):
    """Runs one job and always returns a RecordedRun: failures set ``error``, never raise."""

    async def run(self, job: RunJob) -> RecordedRun: ...

    async def aclose(self) -> None: ...


DEFAULT_USER_ID = "user"


@dataclass(frozen=True)
class SessionSpec:
    """The session an agent starts each run with (a fresh one every run: pinned
    ``session_id``s are not reused, so runs never see each other's history)."""

    app_name: str
    user_id: str
    state: dict


def session_spec(job: RunJob) -> SessionSpec:
    given = job.case.session_input
    app_name = job.app_name or (given.app_name if given and given.app_name else job.eval_set_id)
    user_id = given.user_id if given and given.user_id else DEFAULT_USER_ID
    return SessionSpec(app_name=app_name, user_id=user_id, state=dict(given.state) if given else {})


class AgentFailure(Exception):
    """Ends one run as an error; the message is the short reason shown to the user. With
    ``refusal``, the run is unavailable instead: the model service refused or failed it
    (agents/service_refusal.py), which is not the agent's failure."""

    def __init__(self, message: str = "", refusal: ServiceRefusal | None = None):
        super().__init__(message)
        self.refusal = refusal


def mark_cannot_start(run: RecordedRun, how: str) -> RecordedRun:
    """Note on a failed run that the agent failed before answering anything, and ``how``
    (runs that fail the same ``how`` at the start stop the whole run: agents/failfast.py)."""
    run._cannot_start = how
    return run


def cannot_start(run: RecordedRun) -> str | None:
    return run._cannot_start
