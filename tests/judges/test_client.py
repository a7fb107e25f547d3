"""The judge client and service against a real HTTP fake of the Gemini API."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from checker.metrics.base import ScoringServices
from checker.judges.client import JudgeConfigError, JudgeError, RetryPolicy, backend_from_env
from checker.judges.service import JudgeRequest, JudgeService, UnreadableReply

from .conftest import service_for
from .fake_gemini import empty_reply, error_reply, json_reply

SCHEMA = {"type": "OBJECT", "properties": {"answer": {"type": "STRING"}}, "required": ["answer"]}


def request(prompt: str = "question one", **config) -> JudgeRequest:
    return JudgeRequest(model="gemini-2.5-flash", prompt=prompt,
                        config={"response_mime_type": "application/json",
                                "response_schema": SCHEMA, **config})


def ask(service: JudgeService, req: JudgeRequest, index: int = 0):
    async def go():
        try:
            return await service.sample(req, index, lambda text: text)
        finally:
            await service.aclose()
    return asyncio.run(go())


# ---------------------------------------------------------------- credentials


def test_missing_credentials_names_the_variables():
    with pytest.raises(JudgeConfigError) as err:
        backend_from_env({})
    assert str(err.value) == (
        "no judge credentials: set GOOGLE_API_KEY (or GEMINI_API_KEY) for the Gemini API, or "
        "GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION "
        "for Vertex AI")


def test_vertex_without_location_says_which_variable_is_missing():
    with pytest.raises(JudgeConfigError, match="GOOGLE_CLOUD_LOCATION is not; set "
                                               "GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION"):
        backend_from_env({"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "p"})


def test_credential_sources():
    assert backend_from_env({"GEMINI_API_KEY": "k"}).api_key == "k"
    vertex = backend_from_env({"GOOGLE_GENAI_USE_VERTEXAI": "1", "GOOGLE_CLOUD_PROJECT": "p",
                               "GOOGLE_CLOUD_LOCATION": "us-central1"})
    assert (vertex.vertexai, vertex.project, vertex.location) == (True, "p", "us-central1")
    assert backend_from_env({"GOOGLE_API_KEY": "k", "EVALCHECK_GEMINI_BASE_URL": "http://x"}).base_url == "http://x"


def test_missing_credentials_fail_the_sample_without_any_request(fake):
    service = service_for({})
    with pytest.raises(JudgeConfigError, match="no judge credentials"):
        ask(service, request())
    assert fake.requests == [] and service.stats.calls == 0


# ---------------------------------------------------------------- requests


def test_structured_output_and_user_config_are_sent(fake, env):
    fake.on("question one", json_reply({"answer": "42"}, prompt_tokens=11, output_tokens=4))
    service = service_for(env)
    text = ask(service, request(temperature=0.25))
    assert text == '{"answer": "42"}'
    [sent] = fake.requests
    assert sent.model == "gemini-2.5-flash"
    assert sent.headers.get("x-goog-api-key") == "test-key"
    assert sent.generation_config["responseMimeType"] == "application/json"
    assert sent.generation_config["responseSchema"]["properties"] == {"answer": {"type": "STRING"}}
    assert sent.generation_config["temperature"] == 0.25
    assert service.stats.as_metadata()["tokens"] == 15
    assert (service.stats.calls, service.stats.cache_misses) == (1, 1)


def test_google_gemini_base_url_is_honoured(fake, monkeypatch):
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
    fake.on("question one", json_reply({"answer": "a"}))
    service = service_for({"GOOGLE_API_KEY": "k"})  # no EVALCHECK_GEMINI_BASE_URL
    assert ask(service, request()) == '{"answer": "a"}'
    assert len(fake.requests) == 1


def test_base_url_from_judge_model_config(fake):
    fake.on("question one", json_reply({"answer": "b"}))
    service = service_for({"GOOGLE_API_KEY": "k"})
    assert ask(service, request(http_options={"base_url": fake.url})) == '{"answer": "b"}'


# ---------------------------------------------------------------- retries


def test_429_with_retry_after_is_honoured_then_succeeds(fake, env):
    fake.on("question one", error_reply(429, "slow down", retry_after="1"),
            json_reply({"answer": "ok"}))
    service = service_for(env)
    assert ask(service, request()) == '{"answer": "ok"}'
    assert len(fake.requests) == 2
    assert (service.stats.calls, service.stats.retries, service.stats.failed_requests) == (2, 1, 1)
    assert service.stats.retry_delays == [1.0]  # the server's wait, not the 0.01 s backoff
    assert fake.requests[1].received - fake.requests[0].received >= 0.95


def test_retry_info_in_the_error_body_is_honoured(fake, env):
    body = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "quota",
                      "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                                   "retryDelay": "0.2s"}]}}
    import json

    from .fake_gemini import Reply

    fake.on("question one", Reply(status=429, body=json.dumps(body).encode(),
                                  headers={"Content-Type": "application/json"}),
            json_reply({"answer": "ok"}))
    service = service_for(env)
    assert ask(service, request()) == '{"answer": "ok"}'
    assert service.stats.retry_delays == [0.2]


def test_500s_until_retries_run_out(fake, env):
    fake.on("question one", error_reply(500, "boom"))
    service = service_for(env, retry=RetryPolicy(attempts=4, initial_delay=0.01, exp_base=2.0,
                                                 jitter=0.0, timeout=5.0))
    with pytest.raises(JudgeError) as err:
        ask(service, request())
    assert str(err.value) == "judge call failed after 4 attempt(s): HTTP 500 INTERNAL: boom"
    assert len(fake.requests) == 4 == service.stats.calls  # google-genai made no hidden retries
    assert service.stats.retry_delays == [0.01, 0.02, 0.04]


def test_exponential_backoff_with_jitter_is_bounded():
    import random

    policy = RetryPolicy(initial_delay=1.0, exp_base=2.0, max_delay=40.0, jitter=0.5)
    rng = random.Random(7)
    delays = [policy.backoff(k, rng) for k in range(6)]
    for k, delay in enumerate(delays):
        base = min(40.0, 2.0 ** k)
        assert base <= delay <= min(40.0, base + 0.5)
    assert len(set(delays)) == len(delays)  # jittered
    assert policy.backoff(9, rng) == 40.0  # capped


def test_retry_after_longer_than_the_limit_gives_up_at_once(fake, env):
    fake.on("question one", error_reply(429, "quota", retry_after="3600"))
    service = service_for(env)
    with pytest.raises(JudgeError, match="asked to retry after 3600 s, more than the 5 s limit"):
        ask(service, request())
    assert len(fake.requests) == 1


def test_client_errors_are_not_retried(fake, env):
    fake.on("question one", error_reply(403, "API key not valid"))
    service = service_for(env)
    with pytest.raises(JudgeError, match=r"judge request rejected \(HTTP 403 PERMISSION_DENIED: API key not valid\): the Gemini API refused the judge.s key"):
        ask(service, request())
    assert len(fake.requests) == 1


def test_slow_replies_time_out_and_are_retried(fake, env):
    fake.on("question one", json_reply({"answer": "late"}, delay=2.0), json_reply({"answer": "on time"}))
    service = service_for(env, retry=RetryPolicy(attempts=3, initial_delay=0.01, jitter=0.0,
                                                 timeout=0.6))
    assert ask(service, request()) == '{"answer": "on time"}'
    assert (service.stats.calls, service.stats.retries) == (2, 1)


def test_retry_options_in_judge_model_config_override_the_defaults(fake, env):
    fake.on("question one", error_reply(503, "busy"))
    service = service_for(env)  # FAST_RETRY: 3 attempts
    req = request(http_options={"retry_options": {"attempts": 2, "initial_delay": 0.0,
                                                  "jitter": 0.0}})
    with pytest.raises(JudgeError, match="after 2 attempt"):
        ask(service, req)
    assert len(fake.requests) == 2


# ---------------------------------------------------------------- answers


def test_empty_reply_is_unreadable_with_its_finish_reason(fake, env):
    fake.on("question one", empty_reply())
    service = service_for(env)
    parsed = []

    async def go():
        try:
            await service.sample(request(), 0, parsed.append)
        finally:
            await service.aclose()

    with pytest.raises(UnreadableReply) as err:
        asyncio.run(go())
    assert (err.value.reason, err.value.reply) == ("the judge returned no text (finish reason: SAFETY)", "")
    assert parsed == []


def test_malformed_http_body_is_a_judge_error(fake, env):
    from .fake_gemini import Reply

    fake.on("question one", Reply(body=b"{not json", headers={"Content-Type": "application/json"}))
    service = service_for(env)
    with pytest.raises(JudgeError, match="unreadable answer from the judge"):
        ask(service, request())


# ---------------------------------------------------------------- concurrency


def test_one_concurrency_limit_across_all_callers(fake, env):
    fake.on("q", json_reply({"answer": "x"}, delay=0.1))
    service = service_for(env, concurrency=3)
    requests = [request(f"q{i}") for i in range(12)]

    async def go():
        try:
            return await asyncio.gather(*(service.sample(r, s, str) for r in requests for s in range(2)))
        finally:
            await service.aclose()

    assert len(asyncio.run(go())) == 24
    assert fake.max_in_flight == 3
    assert service.stats.calls == 24 == len(fake.requests)


def test_identical_requests_in_one_run_are_asked_once(fake, env):
    fake.on("question one", json_reply({"answer": "x"}, delay=0.05))
    service = service_for(env)

    async def go():
        try:
            return await asyncio.gather(*(service.sample(request(), 0, str) for _ in range(3)))
        finally:
            await service.aclose()

    assert len(set(asyncio.run(go()))) == 1
    assert len(fake.requests) == 1
    assert (service.stats.reused, service.stats.line()) == (2, "judge: 1 call, 0 cache hits, 2 identical requests not sent again, 120 tokens")


def test_importing_metrics_and_main_does_not_import_the_sdk():
    code = ("import sys, checker.metrics, checker.commands.run, checker.cli\n"
            "checker.metrics.registry()\n"
            "assert not [m for m in sys.modules if m.startswith('google.genai')], 'genai imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_limit_is_the_runs_shared_judge_semaphore(fake, env):
    """Vertex AI metrics take slots from services.judge_semaphore; Gemini judges share it."""
    fake.on("q", json_reply({"answer": "x"}, delay=0.05))
    services = ScoringServices(judge_concurrency=8)
    service = service_for(env, concurrency=8, shared=services)

    async def go():
        services.judge_semaphore = asyncio.Semaphore(2)  # e.g. created by a Vertex metric
        try:
            await asyncio.gather(*(service.sample(request(f"q{i}"), 0, str) for i in range(8)))
        finally:
            await service.aclose()

    asyncio.run(go())
    assert fake.max_in_flight == 2


def test_build_context_makes_one_judge_service_per_run(tmp_path):
    from checker.commands.stage_options import scoring_options
    from checker.options import RunOptions
    from checker.scoring.services import build_context

    context = build_context(scoring_options(RunOptions(judge_concurrency=3, judge_cache=tmp_path)))
    judge = context.services.judge
    assert isinstance(judge, JudgeService)
    assert (judge.concurrency, judge.cache.directory) == (3, tmp_path)
    assert build_context(scoring_options(RunOptions())).services.judge is not judge


# ---------------------------------------------------------------- documented defaults


class RecordedSleep:
    """Stands in for asyncio.sleep: records each backoff, waits for nothing."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def default_service(env) -> tuple[JudgeService, RecordedSleep]:
    """The service as a run builds it (default RetryPolicy), with sleeps recorded, not slept."""
    sleep = RecordedSleep()
    return JudgeService(8, None, env=env, sleep=sleep), sleep


def test_the_documented_retry_defaults():
    """docs/metrics.md: 6 attempts, 2 s doubling, never more than 60 s, up to 1 s of jitter,
    180 s per attempt; 408, 429, 500, 502, 503, 504 retried."""
    policy = RetryPolicy()
    assert (policy.attempts, policy.initial_delay, policy.exp_base, policy.max_delay,
            policy.jitter, policy.timeout) == (6, 2.0, 2.0, 60.0, 1.0, 180.0)
    assert policy.statuses == (408, 429, 500, 502, 503, 504)


def test_408_and_5xx_are_retried_with_the_default_backoff(fake, env):
    fake.on("question one", error_reply(408, "deadline"), error_reply(408, "deadline"),
            error_reply(500), error_reply(502), error_reply(504), json_reply({"answer": "ok"}))
    service, sleep = default_service(env)
    assert ask(service, request()) == '{"answer": "ok"}'
    assert len(fake.requests) == 6 == service.stats.calls  # the sixth and last attempt
    assert len(sleep.delays) == 5
    for k, delay in enumerate(sleep.delays):  # 2, 4, 8, 16, 32 s, each plus up to 1 s
        assert 2.0 * 2 ** k <= delay <= 2.0 * 2 ** k + 1.0


def test_the_default_gives_up_after_6_attempts(fake, env):
    fake.on("question one", error_reply(503, "busy"))
    service, sleep = default_service(env)
    with pytest.raises(JudgeError, match=r"after 6 attempt\(s\): HTTP 503"):
        ask(service, request())
    assert len(fake.requests) == 6 and len(sleep.delays) == 5


def test_a_wait_up_to_60_s_is_waited_a_longer_one_abandoned(fake, env):
    fake.on("question one", error_reply(429, "quota", retry_after="60"), json_reply({"answer": "ok"}))
    service, sleep = default_service(env)
    assert ask(service, request()) == '{"answer": "ok"}'
    assert sleep.delays == [60.0]
    fake.reset()
    fake.on("question one", error_reply(429, "quota", retry_after="61"))
    service, sleep = default_service(env)
    with pytest.raises(JudgeError, match="asked to retry after 61 s, more than the 60 s limit"):
        ask(service, request())
    assert len(fake.requests) == 1 and sleep.delays == []


def test_the_judge_over_vertex_ai_with_application_default_credentials(fake, tmp_path, monkeypatch):
    """GOOGLE_GENAI_USE_VERTEXAI=true: the real google-genai client, the real ADC lookup (an
    authorized-user file whose token is still valid, so no token endpoint is needed), the
    Vertex AI path for the project and location, the credentials' bearer token."""
    import json

    from .fake_gemini import VERTEX_TOKEN

    adc = tmp_path / "adc.json"
    adc.write_text(json.dumps({"type": "authorized_user", "client_id": "id", "client_secret": "s",
                               "refresh_token": "r", "token": VERTEX_TOKEN,
                               "expiry": "2099-01-01T00:00:00Z"}))
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_CLOUD_QUOTA_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    env = {"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "my-project",
           "GOOGLE_CLOUD_LOCATION": "europe-west4", "EVALCHECK_GEMINI_BASE_URL": fake.url}
    fake.on("question one", error_reply(429, "quota", retry_after="0"), json_reply({"answer": "ok"}))
    service = service_for(env)
    assert ask(service, request()) == '{"answer": "ok"}'
    assert [r.vertex for r in fake.requests] == [("my-project", "europe-west4")] * 2
    assert {r.model for r in fake.requests} == {"gemini-2.5-flash"}
    assert fake.requests[1].generation_config["responseMimeType"] == "application/json"
    assert service.stats.calls == 2 and service.stats.retries == 1
    # The token it sent is a credential to redact (judges/adc.py), though no variable holds it.
    assert VERTEX_TOKEN in service.credentials



def test_the_fake_refuses_bodies_google_genai_would_not_send(fake):
    """The fake checks request bodies against google-genai's types, so a test cannot pass
    on a request the real API would refuse."""
    import httpx

    from .fake_gemini import body_problem

    good = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "generationConfig": {"responseMimeType": "application/json", "temperature": 0.2}}
    assert body_problem(good) is None
    assert "unknown field(s) ['generation_cfg']" in body_problem({**good, "generation_cfg": {}})
    assert "generationConfig" in body_problem({**good, "generationConfig": {"temprature": 1}})
    assert "contents" in body_problem({"contents": [{"parts": [{"txt": "hi"}]}]})
    answer = httpx.post(f"{fake.url}/v1beta/models/gemini-2.5-flash:generateContent",
                        json={**good, "generationConfig": {"thinkingConfig": {"budget": 5}}})
    assert answer.status_code == 400 and "google-genai's types" in answer.text
    assert fake.requests == []
