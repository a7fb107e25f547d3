"""The bridge makes the google-genai client of each Gemini model of an agent when it loads the
agent (evalcheck_adk_bridge/loading.py, ``make_model_clients``), not on the model's first call,
where it would hold up every run in flight and send that call late for its paced turn."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("google.adk")

from google.adk.agents.llm_agent import LlmAgent  # noqa: E402
from google.adk.apps.app import App  # noqa: E402
from google.adk.models.google_llm import Gemini  # noqa: E402
from google.adk.tools.agent_tool import AgentTool  # noqa: E402
from google import genai  # noqa: E402

from evalcheck_adk_bridge.loading import make_model_clients  # noqa: E402


def test_every_gemini_model_of_the_tree_has_its_client_once_loaded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Made on the loop the runs use (ADK keeps a model's client per event loop): the runs'
    calls make none."""
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
    clients: list[object] = []

    class CountedClient(genai.Client):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)
            clients.append(self)

    monkeypatch.setattr(genai, "Client", CountedClient)
    tooled = LlmAgent(name="tooled", model="gemini-2.5-flash")
    deep = LlmAgent(name="deep", model=Gemini(model="gemini-2.5-pro"))
    inherits = LlmAgent(name="inherits")  # no model of its own: the parent's
    broken = LlmAgent(name="broken", model="no-such-model-anywhere")  # fails on its first call
    desk = LlmAgent(name="desk", model="gemini-2.5-flash", sub_agents=[deep, broken],
                    tools=[AgentTool(agent=tooled)])
    root = LlmAgent(name="root", model="gemini-2.5-flash", sub_agents=[desk, inherits])

    async def load_then_call(loaded: object) -> tuple[int, int]:
        make_model_clients(loaded)
        at_load = len(clients)
        for agent in (root, desk, deep, tooled, inherits):
            model = agent.canonical_model
            assert isinstance(model, Gemini)
            assert model.api_client is not None  # what a call uses
        return at_load, len(clients)

    assert asyncio.run(load_then_call(root)) == (4, 4)  # root's model serves inherits too
    clients.clear()
    assert asyncio.run(load_then_call(App(name="app", root_agent=root))) == (4, 4)  # a new loop
    with pytest.raises(ValueError):
        _ = broken.canonical_model  # left as it was: its run fails as under ADK


def test_anything_else_loaded_is_left_alone() -> None:
    make_model_clients(object())
    make_model_clients(None)


def test_the_bridge_makes_them_as_it_loads_the_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once for each agent folder loaded, with what ADK's loader gave."""
    from pathlib import Path

    from evalcheck_adk_bridge.loading import Agents

    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
    made: list[object] = []
    monkeypatch.setattr("evalcheck_adk_bridge.loading.make_model_clients", made.append)
    app = Path(__file__).resolve().parents[1] / "adk_agent" / "gemini_app"
    loaded, _ = Agents(app).for_run({})
    assert made == [loaded]
