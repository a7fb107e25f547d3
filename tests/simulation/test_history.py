"""The conversation history the simulated user reads: the same text as ADK's
``LlmBackedUserSimulator._summarize_conversation`` on the same events."""

from __future__ import annotations

import pytest

from checker.models.evalset import Content, text_content
from checker.agents.events import events_to_invocation, fields_to_invocation
from checker.simulation.history import conversation_history

pytest.importorskip("google.adk")


def adk_events():
    """Two turns of a real multi-agent ADK conversation, as ADK Events."""
    from google.adk.events.event import Event
    from google.genai import types

    def event(author, inv, *parts, role="model"):
        return Event(author=author, invocation_id=inv, content=types.Content(role=role, parts=list(parts)))

    text = types.Part.from_text
    return [
        event("user", "e-1", text(text="Weather in Paris and Oslo?"), role="user"),
        event("weather_agent", "e-1", types.Part(text="thinking...", thought=True),
              types.Part(function_call=types.FunctionCall(name="get_weather", args={"city": "Paris"})),
              types.Part(function_call=types.FunctionCall(name="get_weather", args={"city": "Oslo"}))),
        event("weather_agent", "e-1",
              types.Part(function_response=types.FunctionResponse(
                  name="get_weather", response={"city": "Paris", "temp": 21})),
              types.Part(function_response=types.FunctionResponse(
                  name="get_weather", response={"city": "Oslo", "temp": 9})), role="user"),
        event("weather_agent", "e-1", text(text="Paris is warmer: 21 against 9.")),
        event("user", "e-2", text(text="And the forecast for Tokyo?"), role="user"),
        event("weather_agent", "e-2", text(text="Let me ask our forecast specialist."),
              types.Part(function_call=types.FunctionCall(
                  name="transfer_to_agent", args={"agent_name": "forecast_agent"}))),
        event("weather_agent", "e-2", types.Part(function_response=types.FunctionResponse(
            name="transfer_to_agent", response={"result": None})), role="user"),
        event("forecast_agent", "e-2", text(text="Tokyo: cloudy, then windy.")),
    ]


def as_invocations(events):
    """The events as the runners record them: one invocation per turn, the user event as
    user_content, the agent events folded as ADK folds them."""
    invocations = []
    for inv_id in dict.fromkeys(e.invocation_id for e in events):
        group = [e for e in events if e.invocation_id == inv_id]
        user = Content.model_validate(group[0].content.model_dump(mode="json", exclude_none=True))
        invocations.append(events_to_invocation(
            [e.model_dump(mode="json", by_alias=True, exclude_none=True) for e in group[1:]],
            invocation_id=inv_id, user_content=user))
    return invocations


@pytest.mark.parametrize("include_function_calls", [False, True])
def test_history_equals_adks_summary(include_function_calls):
    from google.adk.evaluation.simulation.llm_backed_user_simulator import LlmBackedUserSimulator

    events = adk_events()
    expected = LlmBackedUserSimulator._summarize_conversation(events, include_function_calls)
    assert conversation_history(as_invocations(events), include_function_calls) == expected
    if include_function_calls:
        assert "weather_agent called tool 'get_weather' with args: {'city': 'Paris'}" in expected
        assert "Tool 'get_weather' returned: {'city': 'Oslo', 'temp': 9}" in expected
    else:
        assert expected == (
            "user: Weather in Paris and Oslo?\n\nweather_agent: Paris is warmer: 21 against 9.\n\n"
            "user: And the forecast for Tokyo?\n\n"
            "weather_agent: Let me ask our forecast specialist.\n\n"
            "forecast_agent: Tokyo: cloudy, then windy.")


def test_history_of_an_agent_answering_with_protocol_fields():
    from checker.models.evalset import FunctionCall, FunctionResponse

    inv = fields_to_invocation(
        invocation_id="inv-1", user_content=text_content("Weather in Paris?", "user"),
        final_response="Sunny, 21 C.",
        tool_uses=[FunctionCall(name="get_weather", args={"city": "Paris"})],
        tool_responses=[FunctionResponse(name="get_weather", response={"temp_c": 21})],
        intermediate_responses=["Checking."], usage={"promptTokenCount": 3})
    assert conversation_history([inv]) == "user: Weather in Paris?\n\nagent: Checking.\n\nagent: Sunny, 21 C."
    assert conversation_history([inv], include_function_calls=True) == (
        "user: Weather in Paris?\n\n"
        "agent called tool 'get_weather' with args: {'city': 'Paris'}\n\n"
        "Tool 'get_weather' returned: {'temp_c': 21}\n\n"
        "agent: Checking.\n\nagent: Sunny, 21 C.")
