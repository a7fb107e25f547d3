"""ADK events -> Invocation: the same result as ADK's own convert_events_to_eval_invocations."""

from __future__ import annotations

import pytest

from checker.models.evalset import FunctionCall, FunctionResponse, text_content
from checker.agents.events import ConversionError, events_to_invocation, fields_to_invocation

USER = text_content("Weather in Paris?", "user")


def call(name, args, id_="c1"):
    return {"functionCall": {"id": id_, "name": name, "args": args}}


def resp(name, response, id_="c1"):
    return {"functionResponse": {"id": id_, "name": name, "response": response}}


def ev(author, parts, role="model", **extra):
    return {"invocationId": "e-1", "author": author, "content": {"role": role, "parts": parts}, **extra}


USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 2}
SCENARIOS = {
    "tool then answer": [
        ev("agent", [call("get_weather", {"city": "Paris"})], usageMetadata=USAGE, modelVersion="m1"),
        ev("agent", [resp("get_weather", {"t": 21})], role="user"),
        ev("agent", [{"text": "Sunny."}], usageMetadata=USAGE, modelVersion="m1"),
    ],
    "two agents, the last final wins": [
        ev("root", [{"text": "Asking the specialist."}, call("transfer_to_agent", {"agent_name": "sub"})]),
        ev("root", [resp("transfer_to_agent", {"result": None})], role="user"),
        ev("sub", [{"text": "Intermediate closing text."}]),
        ev("sub", [{"text": "The real answer."}]),
    ],
    "text-less final does not replace a text one": [
        ev("agent", [{"text": "Answer."}]),
        ev("agent", [{"inlineData": {"mimeType": "audio/pcm", "data": "AAAA"}}]),
    ],
    "partial events are not final": [
        ev("agent", [{"text": "Ans"}], partial=True),
        ev("agent", [{"text": "Answer."}]),
    ],
    "skip summarization makes a tool response final": [
        ev("agent", [call("lookup", {})]),
        ev("agent", [resp("lookup", {"x": 1})], role="user", actions={"skipSummarization": True}),
    ],
    "thought parts and unknown fields": [
        ev("agent", [{"text": "thinking", "thought": True, "someFutureField": 1}]),
        ev("agent", [{"text": "Done."}], customMetadata={"k": "v"}, nodeInfo={"path": "a"}),
    ],
    "no events": [],
    "error event": [
        {"invocationId": "e-1", "author": "agent", "errorCode": "SAFETY", "errorMessage": "blocked",
         "content": {"role": "model", "parts": [{"text": "blocked"}]}},
    ],
    "grounding without content": [
        {"invocationId": "e-1", "author": "agent", "groundingMetadata": {"webSearchQueries": ["q"]}},
        ev("agent", [{"text": "Found it."}]),
    ],
}


def adk_invocation(events):
    from google.adk.evaluation.evaluation_generator import EvaluationGenerator
    from google.adk.events.event import Event
    from google.genai import types

    adk_events = [Event.model_validate({"invocationId": "e-1", "author": "user",
                                        "content": USER.model_dump(mode="json", by_alias=True)})]
    adk_events += [Event.model_validate({k: v for k, v in e.items() if k != "someFutureField"})
                   for e in events]
    invocations = EvaluationGenerator.convert_events_to_eval_invocations(adk_events)
    assert isinstance(types.Content, type)
    return invocations[0].model_dump(mode="json", by_alias=True, exclude_none=True)


def strip_unknown(events):
    for e in events:
        for p in (e.get("content") or {}).get("parts", []):
            p.pop("someFutureField", None)
    return events


@pytest.mark.parametrize("name", [n for n in SCENARIOS if n != "no events"])
def test_same_invocation_as_adk(name):
    pytest.importorskip("google.adk")
    events = SCENARIOS[name]
    ours = events_to_invocation(events, invocation_id="e-1", user_content=USER)
    theirs = adk_invocation(strip_unknown([dict(e) for e in events]))
    dumped = ours.model_dump(mode="json", by_alias=True, exclude_none=True)
    for key in ("creationTimestamp",):
        dumped.pop(key, None)
        theirs.pop(key, None)
    assert dumped == theirs


def test_a_turn_without_events_is_still_one_invocation():
    invocation = events_to_invocation([], invocation_id="inv-1", user_content=USER, duration=0.5)
    assert invocation.final_response is None and invocation.duration == 0.5
    assert invocation.intermediate_data.invocation_events == []


@pytest.mark.parametrize("events, message", [
    ({"not": "a list"}, "$.events: must be a list of ADK events"),
    ([42], "$.events[0]: an ADK event must be an object"),
    ([{"author": "a", "content": {"parts": [{"functionCall": {"args": {}}}]}}],
     "$.events[0].content.parts[0].function_call.name: Field required"),
    ([{"author": "a", "content": {"parts": "text"}}], "$.events[0].content.parts: must be a list"),
])
def test_bad_events_name_the_json_path(events, message):
    with pytest.raises(ConversionError) as err:
        events_to_invocation(events, invocation_id="i", user_content=USER)
    assert str(err.value) == message


def test_explicit_fields_become_invocation_events():
    invocation = fields_to_invocation(
        invocation_id="inv-1", user_content=USER, final_response="Sunny, 21 C.",
        tool_uses=[FunctionCall(name="get_weather", args={"city": "Paris"}),
                   FunctionCall(name="get_weather", args={"city": "Rome"})],
        tool_responses=[FunctionResponse(name="get_weather", response={"t": 21}),
                        FunctionResponse(name="get_weather", response={"t": 24})],
        intermediate_responses=["Let me check.", ("sub", [{"text": "Sub text"}])],
        usage=[USAGE, {"promptTokenCount": 5}], duration=1.25)
    from checker.models.evalset import intermediate_texts, tool_calls, tool_responses, usage_metadata

    assert invocation.final_response.parts[0].text == "Sunny, 21 C."
    assert [c.args["city"] for c in tool_calls(invocation)] == ["Paris", "Rome"]
    assert [r.response["t"] for r in tool_responses(invocation)] == [21, 24]
    assert intermediate_texts(invocation) == [("agent", "Let me check."), ("sub", "Sub text")]
    assert usage_metadata(invocation) == [USAGE, {"promptTokenCount": 5}]
    events = invocation.intermediate_data.invocation_events
    # Each response right after its call, as in an ADK event stream.
    kinds = ["call" if e.content and e.content.parts[0].function_call else
             "response" if e.content and e.content.parts[0].function_response else "other"
             for e in events]
    assert kinds[:4] == ["call", "response", "call", "response"]
