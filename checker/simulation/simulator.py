"""The LLM-backed simulated user of a ``conversation_scenario`` case (ADK's
``LlmBackedUserSimulator``), one per run.

Turn 1 is the scenario's ``starting_prompt``, without a model call. Every later turn renders
the instructions (``prompts``) from the plan, the persona and the conversation so far and asks
the ``user_simulator_config`` model through the judge service (credentials, base URL,
retries and the judge concurrency limit are the judges'; answers are never cached, so
every run is its own sample). A reply containing the stop signal (case-insensitive) ends the
conversation and is not sent; so does reaching ``max_allowed_invocations`` (the starting
prompt counts; -1 means no limit).

Differences from ADK, on purpose: the stop signal is ``user_simulator_config.stop_signal``
(ADK hard-codes ``</finished>`` while its metric's is configurable); an empty reply (only
thoughts, no text, a safety block) is asked again twice before the run errors (ADK errors at
once).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from .config import UserSimulatorConfig
from ..models.evalset import Content, ConversationScenario, Invocation, text_content
from .history import conversation_history
from .personas import resolve_persona
from .prompts import render

EMPTY_REPLY_ATTEMPTS = 3
# ADK's default model_configuration for the simulated user.
DEFAULT_MODEL_CONFIGURATION: dict[str, Any] = {
    "thinking_config": {"include_thoughts": True, "thinking_budget": 10240}}


class SimulatorError(Exception):
    """The simulated user cannot go on; the message is the reason shown for the run.
    ``refused``: what its model service said when it kept refusing the calls ("429
    RESOURCE_EXHAUSTED"): the run is then unavailable, not the agent's failure."""

    def __init__(self, message: str, refused: str | None = None):
        super().__init__(message)
        self.refused = refused


@dataclass(frozen=True)
class ModelReply:
    text: str
    finish_reason: str | None = None
    thoughts: bool = False


class UserModel(Protocol):
    """Asks the simulator's model one prompt. Raises SimulatorError when it cannot."""

    async def ask(self, model: str, prompt: str, config: dict[str, Any]) -> ModelReply: ...


def _no_text_reason(reply: ModelReply) -> str:
    finish = reply.finish_reason or "none given"
    if finish not in ("STOP", "none given"):
        return f"finish reason {finish} (blocked or cut off)"
    if reply.thoughts:
        return f"finish reason {finish}, only thoughts and no text"
    return f"finish reason {finish}, empty text"


class LlmUserSimulator:
    """Produces the user turns of one run of one scenario case."""

    def __init__(self, scenario: ConversationScenario, config: UserSimulatorConfig,
                 model: UserModel):
        self.scenario = scenario
        self.config = config
        self.model = model
        self.persona = resolve_persona(scenario.user_persona)
        self.produced = 0  # messages produced so far, the stop message included (as ADK)
        self.stopped_by: str | None = None  # "stop_signal" or "turn_limit" once over

    @property
    def model_configuration(self) -> dict[str, Any]:
        given = self.config.model_configuration
        return dict(DEFAULT_MODEL_CONFIGURATION if given is None else given)

    def prompt(self, so_far: list[Invocation]) -> str:
        return render(conversation_plan=self.scenario.conversation_plan,
                      conversation_history=conversation_history(
                          so_far, self.config.include_function_calls),
                      stop_signal=self.config.stop_signal, persona=self.persona,
                      custom_template=self.config.custom_instructions)

    async def next_turn(self, so_far: list[Invocation]) -> Content | None:
        """The next user message, or None when the conversation is over."""
        limit = self.config.max_allowed_invocations
        if limit >= 0 and self.produced >= limit:
            self.stopped_by = "turn_limit"
            return None
        if self.produced == 0:
            text = self.scenario.starting_prompt
        else:
            text = await self._generate(self.prompt(so_far))
        self.produced += 1
        if self.produced > 1 and self.config.stop_signal.lower() in text.lower():
            self.stopped_by = "stop_signal"
            return None
        return text_content(text, "user")

    async def _generate(self, prompt: str) -> str:
        reason = ""
        for _ in range(EMPTY_REPLY_ATTEMPTS):
            reply = await self.model.ask(self.config.model, prompt, self.model_configuration)
            if reply.text.strip():
                return reply.text
            reason = _no_text_reason(reply)
        raise SimulatorError(f"simulated user gave no reply after {EMPTY_REPLY_ATTEMPTS} "
                             f"attempts: {reason}")
