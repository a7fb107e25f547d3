"""A repository holding three real ADK agents, for the tests of ``evalcheck-adk agents`` (one
command for all of them; tests/agents and tests/container):

- ``agents/weather_app``: the weather app (a forecast sub-agent reached by transfer), its eval
  set in ``agents/weather_app/evals/`` (the eval file lies in its agent's folder);
- ``agents/shop_app``: the shop app (a checkout sub-agent), its eval set in
  ``agents/shop_app/evals/``, whose cases name another app ("storefront": the folder wins);
- ``agents/greeter``: an agent without a model that greets by the session's name, its eval
  set in ``evals/`` at the top, found by its cases' ``session_input.app_name``.

Every agent's answers are its own (weather, products, greetings): a case run on another
agent fails its trajectory and its response. Each agent's package, when imported, appends
"NAME PID" to the file ``$AGENT_IMPORT_LOG`` names (when set).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

ADK_DIR = Path(__file__).resolve().parent
IMPORT_LOG = '''
import os as _os
if _os.environ.get("AGENT_IMPORT_LOG"):
    with open(_os.environ["AGENT_IMPORT_LOG"], "a") as _log:
        _log.write(f"{__name__} {_os.getpid()}\\n")
'''
GREETER = '''
from google.adk.agents import BaseAgent
from google.adk.events import Event
from google.genai import types


class Greeter(BaseAgent):
    async def _run_async_impl(self, ctx):
        name = ctx.session.state.get("name", "friend")
        yield Event(author=self.name, invocation_id=ctx.invocation_id,
                    content=types.Content(role="model", parts=[
                        types.Part(text=f"Hello {name}, I am the greeter.")]))


root_agent = Greeter(name="greeter")
'''
CRITERIA = {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}
AUTHORS = {"weather_app": {"weather_agent", "forecast_agent"},
           "shop_app": {"shop_assistant", "checkout_agent"}, "greeter": {"greeter"}}


def _cases(path: Path, keep: int | None = None) -> list[dict]:
    cases = json.loads(path.read_text())["eval_cases"]
    return [c for c in cases if c["eval_id"] != "wrong_expectation"][:keep]


def greeter_case(eval_id: str, name: str, app_name: str = "greeter") -> dict:
    return {"eval_id": eval_id,
            "conversation": [{"invocation_id": "inv-1",
                              "user_content": {"role": "user", "parts": [{"text": "Hi!"}]},
                              "final_response": {"role": "model", "parts": [
                                  {"text": f"Hello {name}, I am the greeter."}]}}],
            "session_input": {"app_name": app_name, "user_id": name.lower(),
                              "state": {"name": name}}}


def write_eval_set(path: Path, set_id: str, cases: list[dict], criteria: dict = CRITERIA) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"eval_set_id": set_id, "eval_cases": cases}, indent=1))
    (path.parent / "test_config.json").write_text(json.dumps(criteria))
    return path


def build(repo: Path) -> Path:
    """The repository at ``repo`` (made); returns it."""
    agents = repo / "agents"
    for name in ("weather_app", "shop_app"):
        shutil.copytree(ADK_DIR / name, agents / name,
                        ignore=shutil.ignore_patterns("__pycache__", ".adk"))
    (agents / "greeter").mkdir()
    (agents / "greeter" / "__init__.py").write_text("from . import agent  # noqa: F401\n")
    (agents / "greeter" / "agent.py").write_text(GREETER)
    for name in ("weather_app", "shop_app", "greeter"):
        init = agents / name / "__init__.py"
        init.write_text(IMPORT_LOG + init.read_text())
    write_eval_set(agents / "weather_app" / "evals" / "weather.evalset.json", "weather",
                   _cases(ADK_DIR / "evals" / "weather_app.evalset.json"),
                   json.loads((ADK_DIR / "evals" / "test_config.json").read_text()))
    shop = _cases(ADK_DIR / "shop_evals" / "shop_app.evalset.json")
    for case in shop:
        case["session_input"]["app_name"] = "storefront"
    write_eval_set(agents / "shop_app" / "evals" / "shop.evalset.json", "shop", shop)
    write_eval_set(repo / "evals" / "greetings.evalset.json", "greetings",
                   [greeter_case("hello_ada", "Ada"), greeter_case("hello_bo", "Bo")])
    return repo
