"""Fixtures of the simulation tests: the fake Gemini server and a simulator pointed at it."""

from __future__ import annotations

import asyncio
from typing import Any


from checker.inputs.criteria import UserSimulatorConfig
from checker.judges.service import JudgeService
from checker.models.evalset import ConversationScenario, Invocation
from checker.simulation.model import JudgeServiceModel, SimulatorStats
from checker.simulation.simulator import LlmUserSimulator

# The judge tests' fake Gemini server and environment pointed at it (fixtures).
from judges.conftest import FAST_RETRY, env, fake, invocation  # noqa: F401


def scenario(persona: Any = None, **extra: Any) -> ConversationScenario:
    data = {"starting_prompt": "What is the weather in Paris?",
            "conversation_plan": "Ask for the weather in Paris, then in Oslo.", **extra}
    if persona is not None:
        data["user_persona"] = persona
    return ConversationScenario.model_validate(data)


def simulator(env: dict[str, str], the_scenario: ConversationScenario | None = None,
              **config: Any) -> LlmUserSimulator:
    service = JudgeService(8, None, env=env, retry=FAST_RETRY)
    model = JudgeServiceModel(service, SimulatorStats())
    return LlmUserSimulator(the_scenario or scenario(), UserSimulatorConfig(**config), model)


def turns(sim: LlmUserSimulator, histories: list[list[Invocation]]) -> list[Any]:
    """``sim.next_turn`` for each history in turn (one event loop), as texts; None = over.
    An exception is returned in place of the turn that raised it."""
    async def go() -> list[Any]:
        out: list[Any] = []
        try:
            for history in histories:
                try:
                    content = await sim.next_turn(history)
                except Exception as exc:
                    out.append(exc)
                    break
                out.append(None if content is None else "".join(p.text or "" for p in content.parts))
        finally:
            await sim.model.service.aclose()
        return out
    return asyncio.run(go())


