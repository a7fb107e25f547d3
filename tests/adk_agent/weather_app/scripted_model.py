"""TEST ONLY: an offline, deterministic stand-in for an LLM.

It reads the request the way a model would (system instruction, tools offered, the
conversation so far) and scripts the next step: a function call while information is
missing, a text answer once the tool results are in. No network, no randomness.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

CITIES = ("Paris", "Rome", "Oslo", "Tokyo", "Lima")


def _texts(content: types.Content) -> str:
    return " ".join(p.text for p in content.parts or [] if p.text)


def _responses(content: types.Content) -> list[types.FunctionResponse]:
    return [p.function_response for p in content.parts or [] if p.function_response]


def _cities(text: str) -> list[str]:
    return sorted((c for c in CITIES if c in text), key=text.index)


def _last_user_request(request: LlmRequest) -> str:
    """The latest real user text (ADK shows other agents' turns as 'For context:' text)."""
    for content in reversed(request.contents):
        text = _texts(content)
        if content.role == "user" and text and not text.startswith("For context"):
            return text
    return ""


class ScriptedWeatherModel(BaseLlm):
    model: str = "scripted-weather"

    @classmethod
    def supported_models(cls) -> list[str]:
        return [r"scripted-weather.*"]

    async def generate_content_async(self, llm_request: LlmRequest,
                                     stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        parts = self._next_parts(llm_request)
        prompt_size = sum(len(_texts(c)) for c in llm_request.contents)
        yield LlmResponse(
            content=types.Content(role="model", parts=parts),
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=100 + prompt_size // 4,
                candidates_token_count=10 * len(parts),
                total_token_count=100 + prompt_size // 4 + 10 * len(parts)),
            model_version="scripted-weather-1")

    def _next_parts(self, request: LlmRequest) -> list[types.Part]:
        instruction = str(request.config.system_instruction or "")
        user = (re.search(r"The user is (\w+)", instruction) or [None, "friend"])[1]
        last = request.contents[-1] if request.contents else types.Content(parts=[])
        results = _responses(last)
        if "get_forecast" in request.tools_dict:
            return self._forecast_step(request, results)
        if results and results[0].name == "get_weather":
            sentences = [f"it is {r.response['condition']} in {r.response['city']}, "
                         f"{r.response['temperature']} degrees {r.response['units']}"
                         for r in results]
            if len(results) > 1:
                warmest = max(results, key=lambda r: r.response["temperature"])
                return [types.Part(text=f"{user}, " + " and ".join(sentences)
                                   + f". {warmest.response['city']} is warmer.")]
            return [types.Part(text=f"{user}, {sentences[0]}.")]
        text = _last_user_request(request)
        if "forecast" in text.lower():
            return [types.Part(text="Let me ask our forecast specialist."),
                    types.Part(function_call=types.FunctionCall(
                        name="transfer_to_agent", args={"agent_name": "forecast_agent"}))]
        cities = _cities(text)
        if not cities:
            return [types.Part(text=f"Sorry {user}, which city do you mean?")]
        return [types.Part(function_call=types.FunctionCall(name="get_weather", args={"city": c}))
                for c in cities]

    def _forecast_step(self, request: LlmRequest,
                       results: list[types.FunctionResponse]) -> list[types.Part]:
        if results and results[0].name == "get_forecast":
            r = results[0].response
            days = ", ".join(r["days"])
            return [types.Part(text=f"The forecast for {r['city']}: {days}.")]
        text = _last_user_request(request)
        cities = _cities(text) or ["Paris"]
        days = int((re.search(r"(\d+) days?", text) or [None, "2"])[1])
        return [types.Part(function_call=types.FunctionCall(
            name="get_forecast", args={"city": cities[0], "days": days}))]
