"""Where a run's user turns come from: the case's static ``conversation``, or a simulated
user that reads the conversation so far (``conversation_scenario``).

Every runner drives its agent with the same loop::

    turns = user_turns(job)
    while (content := await turns.next(invocations)) is not None:
        ...send content, record the invocation...

so the agent protocols do not change: an agent only ever sees user turns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ..models.evalset import Content, Invocation
from .base import AgentFailure, RunJob
from .service_refusal import refusal_of_protocol

if TYPE_CHECKING:
    from ..simulation.simulator import LlmUserSimulator


class UserTurns(Protocol):
    async def next(self, so_far: list[Invocation]) -> Content | None:
        """The next user message given the invocations so far; None ends the conversation.
        Raises AgentFailure when the run cannot go on."""
        ...


class StaticTurns:
    """Each ``conversation[i].user_content`` in order."""

    def __init__(self, conversation: list[Invocation]):
        self._contents = [inv.user_content for inv in conversation]
        self._given = 0

    async def next(self, so_far: list[Invocation]) -> Content | None:
        if self._given >= len(self._contents):
            return None
        self._given += 1
        return self._contents[self._given - 1]


class SimulatedTurns:
    """The turns of an LLM-backed simulated user."""

    def __init__(self, simulator: LlmUserSimulator):
        self.simulator = simulator

    async def next(self, so_far: list[Invocation]) -> Content | None:
        from ..simulation.simulator import SimulatorError

        try:
            return await self.simulator.next_turn(so_far)
        except SimulatorError as exc:
            # The simulated user's model service kept refusing: the run is unavailable.
            refusal = refusal_of_protocol({"code": exc.refused}, str(exc)) if exc.refused else None
            raise AgentFailure(str(exc), refusal) from None


def user_turns(job: RunJob) -> UserTurns:
    """The source of ``job``'s user turns. Raises AgentFailure when a simulated user cannot
    run at all (no credentials), before the agent is started."""
    if job.case.conversation is not None:
        return StaticTurns(job.case.conversation)
    scenario = job.case.conversation_scenario
    assert scenario is not None  # EvalCase has exactly one of the two
    from ..simulation.config import UserSimulatorConfig
    from ..simulation.simulator import LlmUserSimulator, SimulatorError

    if job.user_model is None:
        raise AgentFailure("internal error: no model for the simulated user of a "
                           "conversation_scenario case")
    config = job.user_simulator or UserSimulatorConfig()
    simulator = LlmUserSimulator(scenario, config, job.user_model)
    check = getattr(job.user_model, "check_credentials", None)
    if check is not None and config.max_allowed_invocations != 1:
        http = (simulator.model_configuration.get("http_options") or {})
        try:
            check(http.get("base_url") if isinstance(http, dict) else None, config.model)
        except SimulatorError as exc:
            raise AgentFailure(str(exc)) from None
    return SimulatedTurns(simulator)
