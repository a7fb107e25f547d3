"""The fake Gemini API, through google-genai's real client and a real ADK agent: what it
answers, how it refuses (Google's own bodies and error types), and what it counts."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

genai = pytest.importorskip("google.genai")
from google.genai import errors, types  # noqa: E402

from tests.fakes.gemini_api import FakeGeminiApi, FakeGeminiProcess, Quota, ServiceConfig, Storm  # noqa: E402
from tests.fakes.gemini_script import Call, Rule  # noqa: E402
from tests.fakes.weather_service import expected_answer, service_config  # noqa: E402

RULES = (Rule(text=r"weather in (?P<city>\w+)", after="",
              calls=(Call("get_weather", {"city": "{city}"}),)),
         Rule(text=r"weather in (?P<city>\w+)", after="get_weather",
              reply="It is {sky} in {city}."),
         Rule(text="hello", reply="Hello!"))


@pytest.fixture
def api() -> Iterator[FakeGeminiApi]:
    with FakeGeminiApi(ServiceConfig(rules=RULES)) as server:
        yield server


def client(api: FakeGeminiApi | FakeGeminiProcess) -> genai.Client:
    return genai.Client(api_key="fake", http_options=types.HttpOptions(base_url=api.url))


def after_tool(city: str, **response: Any) -> list[types.Content]:
    return [types.Content(role="user", parts=[types.Part(text=f"weather in {city}?")]),
            types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(
                name="get_weather", args={"city": city}))]),
            types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
                name="get_weather", response=response))])]


def test_rules_answer_function_calls_then_text_from_the_tool_result(api: FakeGeminiApi) -> None:
    gemini = client(api)  # kept: a Client closes its connections when collected
    model = gemini.models
    first = model.generate_content(model="gemini-2.5-flash", contents="What is the weather in Paris?")
    assert [(c.name, c.args) for c in first.function_calls or []] == [("get_weather", {"city": "Paris"})]
    second = model.generate_content(model="gemini-2.5-flash", contents=after_tool("Oslo", sky="rainy"))
    assert second.text == "It is rainy in Oslo."
    assert second.usage_metadata is not None and second.usage_metadata.prompt_token_count
    stats = api.stats()
    assert (stats.calls, stats.served, stats.refused) == (2, 2, 0)


def test_the_streaming_endpoint_answers_the_same(api: FakeGeminiApi) -> None:
    gemini = client(api)
    chunks = list(gemini.models.generate_content_stream(
        model="gemini-2.5-flash", contents=after_tool("Rome", sky="clear")))
    assert "".join(c.text or "" for c in chunks) == "It is clear in Rome."


def test_a_request_no_rule_matches_is_refused_naming_it(api: FakeGeminiApi) -> None:
    with pytest.raises(errors.ClientError) as raised:
        gemini = client(api)
        gemini.models.generate_content(model="gemini-2.5-flash", contents="tell me a joke")
    assert raised.value.code == 400 and "tell me a joke" in (raised.value.message or "")


def test_calls_over_the_in_flight_quota_get_googles_429_with_retry_info() -> None:
    config = ServiceConfig(rules=RULES, latency=0.3, quota=Quota(in_flight=2, retry_delay=2.0))
    with FakeGeminiApi(config) as api:
        gemini = client(api)  # kept: a Client closes its connections when collected
        aio = gemini.aio.models

        async def one() -> Any:
            try:
                return await aio.generate_content(model="gemini-2.5-flash", contents="hello")
            except errors.APIError as exc:
                return exc

        async def five() -> list[Any]:
            return await asyncio.gather(*(one() for _ in range(5)))

        results = asyncio.run(five())
        refused = [r for r in results if isinstance(r, errors.APIError)]
        assert len(refused) == 3 and all(isinstance(r, errors.ClientError) for r in refused)
        error = refused[0]
        assert (error.code, error.status) == (429, "RESOURCE_EXHAUSTED")
        assert {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2s"} \
            in error.details["error"]["details"]
        stats = api.stats()
        assert (stats.served, stats.refused, stats.max_in_flight) == (2, 3, 2)
        assert stats.refused_by == {"quota_in_flight": 3}
        assert all(end - start >= 0.29 for start, end in stats.served_at)  # the latency


def test_the_rate_quota_counts_any_one_second_window() -> None:
    with FakeGeminiApi(ServiceConfig(rules=RULES, quota=Quota(per_second=3))) as api:
        gemini = client(api)  # kept: a Client closes its connections when collected
        model = gemini.models
        outcomes = []
        for _ in range(5):
            try:
                model.generate_content(model="gemini-2.5-flash", contents="hello")
                outcomes.append("ok")
            except errors.ClientError as exc:
                outcomes.append(str(exc.code))
        assert outcomes == ["ok", "ok", "ok", "429", "429"]
        time.sleep(1.05)  # the window has moved on
        assert model.generate_content(model="gemini-2.5-flash", contents="hello").text == "Hello!"
        stats = api.stats()
        assert stats.refused_by == {"quota_rate": 2} and stats.busiest_second() == 3


def test_a_503_storm_window_raises_server_error_then_passes() -> None:
    config = ServiceConfig(rules=RULES, storms=(Storm(start=0.0, end=0.5, status=503),))
    with FakeGeminiApi(config) as api:
        gemini = client(api)  # kept: a Client closes its connections when collected
        model = gemini.models
        with pytest.raises(errors.ServerError) as raised:
            model.generate_content(model="gemini-2.5-flash", contents="hello")
        assert (raised.value.code, raised.value.status) == (503, "UNAVAILABLE")
        time.sleep(0.55)
        assert model.generate_content(model="gemini-2.5-flash", contents="hello").text == "Hello!"
        assert api.stats().refused_by == {"storm_503": 1}
        api.reset()  # the storm's clock starts again at the next call
        with pytest.raises(errors.ServerError):
            model.generate_content(model="gemini-2.5-flash", contents="hello")


def test_a_storm_refusing_a_share_of_calls() -> None:
    config = ServiceConfig(rules=RULES, storms=(Storm(start=0, end=60, status=429, share=0.4),))
    with FakeGeminiApi(config) as api:
        gemini = client(api)  # kept: a Client closes its connections when collected
        model = gemini.models
        for _ in range(50):
            try:
                model.generate_content(model="gemini-2.5-flash", contents="hello")
            except errors.ClientError as exc:
                assert exc.code == 429
        assert 10 <= api.stats().refused_by["storm_429"] <= 30


def test_latency_grows_with_the_load_beyond_the_knee() -> None:
    config = ServiceConfig(rules=RULES, latency=0.05, load_latency=0.05, knee=1)
    with FakeGeminiApi(config) as api:
        gemini = client(api)  # kept: a Client closes its connections when collected
        aio = gemini.aio.models

        async def four() -> None:
            await asyncio.gather(*(aio.generate_content(model="gemini-2.5-flash", contents="hello")
                                   for _ in range(4)))

        asyncio.run(four())
        durations = sorted(end - start for start, end in api.stats().served_at)
        assert durations[0] < 0.15 and durations[-1] >= 0.19  # 0.05 + 3 x 0.05 when 4 in flight


def test_the_service_in_a_process_of_its_own() -> None:
    with FakeGeminiProcess(ServiceConfig(rules=RULES, quota=Quota(in_flight=1))) as api:
        gemini = client(api)  # kept: a Client closes its connections when collected
        model = gemini.models
        assert model.generate_content(model="gemini-2.5-flash", contents="hello").text == "Hello!"
        api.configure(ServiceConfig(rules=RULES, storms=(Storm(0, 60, status=503),)))
        with pytest.raises(errors.ServerError):
            model.generate_content(model="gemini-2.5-flash", contents="hello")
        stats = api.stats()
        assert (stats.calls, stats.served, stats.refused_by) == (2, 1, {"storm_503": 1})
        process = api._proc
    assert process is not None and process.poll() is not None  # it stopped with the block


def _ask_adk(agent: Any, text: str) -> list[Any]:
    from google.adk.runners import InMemoryRunner

    async def run() -> list[Any]:
        runner = InMemoryRunner(agent, app_name="gemini_app")
        session = await runner.session_service.create_session(app_name="gemini_app", user_id="u")
        message = types.Content(role="user", parts=[types.Part(text=text)])
        return [event async for event in runner.run_async(user_id="u", session_id=session.id,
                                                          new_message=message)]

    return asyncio.run(run())


@pytest.fixture
def gemini_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGeminiApi]:
    with FakeGeminiApi(service_config()) as api:
        for name, value in api.env().items():
            monkeypatch.setenv(name, value)
        yield api


def test_an_ordinary_adk_app_runs_against_it_through_google_genai(gemini_env: FakeGeminiApi) -> None:
    pytest.importorskip("google.adk")
    from tests.adk_agent.gemini_app.agent import root_agent

    events = _ask_adk(root_agent, "What is the weather in Paris?")
    calls = [(c.name, c.args) for e in events for c in e.get_function_calls()]
    assert calls == [("transfer_to_agent", {"agent_name": "weather_desk"}),
                     ("get_weather", {"city": "Paris"})]
    assert events[-1].author == "weather_desk"
    assert events[-1].content.parts[0].text == expected_answer("Paris")
    assert gemini_env.stats().served == 3
    assert os.environ["GOOGLE_GEMINI_BASE_URL"] == gemini_env.url


def _weather_desk(retry: types.HttpRetryOptions | None) -> Any:
    from google.adk.agents import LlmAgent
    from google.adk.models import Gemini

    from tests.adk_agent.gemini_app.agent import get_weather

    return LlmAgent(name="weather_desk", model=Gemini(model="gemini-2.5-flash", retry_options=retry),
                    instruction="You answer weather questions.", tools=[get_weather])


def test_adks_retry_options_ride_out_a_short_storm(gemini_env: FakeGeminiApi) -> None:
    pytest.importorskip("google.adk")
    gemini_env.configure(service_config(storms=(Storm(start=0, end=0.3, status=429),)))
    retry = types.HttpRetryOptions(attempts=8, initial_delay=0.1, max_delay=0.2, jitter=0)
    events = _ask_adk(_weather_desk(retry), "What is the weather in Rome?")
    assert events[-1].content.parts[0].text == expected_answer("Rome")
    stats = gemini_env.stats()
    assert stats.refused_by["storm_429"] >= 2 and stats.served == 2


def test_adk_gives_up_after_its_attempts_with_the_429(gemini_env: FakeGeminiApi) -> None:
    pytest.importorskip("google.adk")
    gemini_env.configure(service_config(storms=(Storm(start=0, end=60, status=429),)))
    retry = types.HttpRetryOptions(attempts=3, initial_delay=0.05, max_delay=0.05, jitter=0)
    with pytest.raises(errors.ClientError) as raised:
        _ask_adk(_weather_desk(retry), "What is the weather in Rome?")
    assert raised.value.code == 429
    assert gemini_env.stats().calls == 3  # exactly its attempts, no more


def test_without_retry_options_adk_raises_the_first_refusal(gemini_env: FakeGeminiApi) -> None:
    pytest.importorskip("google.adk")
    gemini_env.configure(service_config(storms=(Storm(start=0, end=60, status=503),)))
    with pytest.raises(errors.ServerError):
        _ask_adk(_weather_desk(None), "What is the weather in Rome?")
    assert gemini_env.stats().calls == 1
