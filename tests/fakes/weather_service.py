"""The fake Gemini API's script for tests/adk_agent/gemini_app (a travel desk handing weather
questions to a weather desk with a tool), and eval sets for it: what the tests and
bench/bench_model_service.py run against the fake service."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.fakes.gemini_api import ServiceConfig
from tests.fakes.gemini_script import Call, Rule

APP = Path(__file__).resolve().parents[1] / "adk_agent" / "gemini_app"
CITIES = ("Paris", "Rome", "Oslo", "Tokyo", "Lima", "Cairo", "Quito", "Perth", "Turin", "Dakar")
CALLS_PER_TURN = 3  # the travel desk's transfer, the weather desk's tool call, its answer

# The weather desk declares get_weather; the travel desk only transfer_to_agent.
RULES = (
    Rule(declares="get_weather", after="get_weather",
         reply="It is {condition} and {temperature} degrees in {city}."),
    Rule(declares="get_weather", text=r"weather in (?P<city>\w+)",
         calls=(Call("get_weather", {"city": "{city}"}),)),
    Rule(declares="transfer_to_agent", text=r"weather", after="",
         calls=(Call("transfer_to_agent", {"agent_name": "weather_desk"}),)),
)


def service_config(**fields: Any) -> ServiceConfig:
    return ServiceConfig(rules=RULES, **fields)


def expected_answer(city: str) -> str:
    from tests.adk_agent.gemini_app.agent import WEATHER

    condition, celsius = WEATHER[city]
    return f"It is {condition} and {celsius} degrees in {city}."


def eval_set(cases: int, eval_set_id: str = "gemini_app") -> dict[str, Any]:
    """``cases`` one-turn weather questions, the cities in turn, with what the app answers."""
    from tests.adk_agent.gemini_app.agent import WEATHER

    items = []
    for i in range(cases):
        city = CITIES[i % len(CITIES)]
        condition, celsius = WEATHER[city]
        items.append({
            "eval_id": f"case_{i + 1:03d}_{city.lower()}",
            "conversation": [{
                "invocation_id": "inv-1",
                "user_content": {"role": "user",
                                 "parts": [{"text": f"What is the weather in {city}?"}]},
                "final_response": {"role": "model", "parts": [{"text": expected_answer(city)}]},
                "intermediate_data": {"tool_uses": [
                    {"name": "transfer_to_agent", "args": {"agent_name": "weather_desk"}},
                    {"name": "get_weather", "args": {"city": city}}]},
            }],
            "session_input": {"app_name": "gemini_app", "user_id": "traveller", "state": {}},
        })
    return {"eval_set_id": eval_set_id, "name": eval_set_id, "eval_cases": items}


def write_eval_set(folder: Path, cases: int) -> Path:
    """The eval set and its criteria (test_config.json) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "gemini_app.evalset.json"
    path.write_text(json.dumps(eval_set(cases), indent=1))
    (folder / "test_config.json").write_text(json.dumps(
        {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}))
    return path
