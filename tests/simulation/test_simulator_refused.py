"""A simulated user whose model service kept refusing (429 past the judge client's retries):
the run is unavailable - waited for and run again, never the agent's failure - not an error."""

from __future__ import annotations

import asyncio

from checker.agents.base import AgentFailure
from checker.agents.turns import SimulatedTurns

from judges.fake_gemini import error_reply
from .conftest import invocation, simulator

PARIS = [invocation("What is the weather in Paris?", "It is sunny in Paris, 21 degrees Celsius.")]


def next_turn_failure(sim) -> AgentFailure:
    async def go() -> AgentFailure:
        user = SimulatedTurns(sim)
        await user.next([])  # the starting prompt: no model call
        try:
            await user.next(PARIS)
        except AgentFailure as exc:
            return exc
        finally:
            await sim.model.service.aclose()
        raise AssertionError("the simulated user answered")
    return asyncio.run(go())


def test_a_refused_simulated_user_makes_the_run_unavailable(env, fake):
    fake.on("# Conversation History", error_reply(429, "Resource has been exhausted"))
    failure = next_turn_failure(simulator(env))
    assert failure.refusal is not None and failure.refusal.code.startswith("429"), failure
    assert str(failure).startswith("simulated user:")


def test_a_rejected_simulated_user_is_still_the_runs_error(env, fake):
    fake.on("# Conversation History", error_reply(400, "model not found"))
    failure = next_turn_failure(simulator(env))
    assert failure.refusal is None
