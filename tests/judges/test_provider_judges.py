"""provider/model judges (issue 41): ADK's (LiteLLM's) names, variables and base URLs, the
requests each provider gets, retries honouring Retry-After, credentials missing or refused,
the cache key, against the fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from checker.judges.cache import cache_key
from checker.judges.client import JudgeConfigError, JudgeCredentialsRefused, JudgeUnavailable, RetryPolicy
from checker.judges.providers import (MissingCredentials, UnknownJudgeModel, endpoint,
                                      parse_judge_model)
from checker.judges.service import JudgeRequest, JudgeService

from .fake_openai import FakeOpenAI, anthropic_reply, error, json_answer

KEY = "sk-test-0123456789abcdef"
FAST = RetryPolicy(attempts=3, initial_delay=0.01, max_delay=5.0, jitter=0.0, timeout=5.0)
SCHEMA = {"type": "OBJECT", "properties": {"verdict": {"type": "STRING", "enum": ["valid", "invalid"]}},
          "required": ["verdict"], "property_ordering": ["verdict"]}
CONFIG = {"temperature": 0.2, "top_p": 0.9, "top_k": 5.0, "max_output_tokens": 300, "seed": 7,
          "stop_sequences": ["END"], "presence_penalty": 0.1, "frequency_penalty": 0.3,
          "thinking_config": {"thinking_budget": 512}, "response_mime_type": "application/json",
          "response_schema": SCHEMA}


@pytest.fixture
def fake():
    with FakeOpenAI(KEY) as server:
        yield server


def ask(env: dict[str, str], model: str, config: dict[str, Any] | None = None,
        prompt: str = "Grade this. Answer with a JSON object.", **kwargs: Any) -> tuple[Any, JudgeService]:
    service = JudgeService(4, kwargs.pop("cache_dir", None), env=env, retry=kwargs.pop("retry", FAST),
                           **kwargs)

    async def go() -> Any:
        try:
            return await service.sample(JudgeRequest(model, prompt, dict(config or CONFIG)), 0, json.loads)
        finally:
            await service.aclose()

    return asyncio.run(go()), service


# ---------------------------------------------------------------- names and endpoints


@pytest.mark.parametrize("name, provider, model", [
    ("gemini-2.5-flash", None, "gemini-2.5-flash"),
    ("[Gemini]:gemini-2.5-pro", None, "gemini-2.5-pro"),
    ("gemini/gemini-2.5-flash", None, "gemini-2.5-flash"),  # LiteLLM's name of the Gemini API
    ("groq/llama-3.3-70b-versatile", "groq", "llama-3.3-70b-versatile"),
    ("groq/openai/gpt-oss-120b", "groq", "openai/gpt-oss-120b"),  # only the first prefix goes
    ("openai/gpt-4o-mini", "openai", "gpt-4o-mini"),
    ("[LiteLlm]:openai/gpt-4o-mini", "openai", "gpt-4o-mini"),
    ("azure/my-gpt4o-deployment", "azure", "my-gpt4o-deployment"),
    ("ollama_chat/llama3.1", "ollama_chat", "llama3.1"),
    ("ollama/qwen2.5:7b", "ollama", "qwen2.5:7b"),
    ("openrouter/meta-llama/llama-3.3-70b-instruct", "openrouter", "meta-llama/llama-3.3-70b-instruct"),
    ("together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo", "together_ai",
     "meta-llama/Llama-3.3-70B-Instruct-Turbo"),
    ("deepseek/deepseek-chat", "deepseek", "deepseek-chat"),
    ("mistral/mistral-large-latest", "mistral", "mistral-large-latest"),
    ("anthropic/claude-3-5-haiku-latest", "anthropic", "claude-3-5-haiku-latest"),
])
def test_judge_model_names_as_adk_and_litellm_read_them(name, provider, model):
    judge = parse_judge_model(name)
    assert (judge.provider.name if judge.provider else None, judge.model) == (provider, model)


@pytest.mark.parametrize("name, said", [
    ("acme/model", "unknown provider 'acme'; the providers known are: anthropic, azure, deepseek, "
                   "groq, mistral, ollama, ollama_chat, openai, openrouter, together_ai"),
    ("bedrock/anthropic.claude-3", "the provider 'bedrock' is not one evalcheck's judges call"),
    ("gpt-4o", "name its provider as ADK and LiteLLM do: openai/gpt-4o"),
    ("claude-3-5-sonnet", "anthropic/claude-3-5-sonnet"),
    ("groq/", "names no model after 'groq/'"),
])
def test_a_name_no_judge_can_call_is_refused_naming_what_can(name, said):
    with pytest.raises(UnknownJudgeModel, match=__import__("re").escape(said)):
        parse_judge_model(name)


@pytest.mark.parametrize("provider, env, url, headers", [
    ("openai", {"OPENAI_API_KEY": "k1"}, "https://api.openai.com/v1/chat/completions",
     {"Authorization": "Bearer k1"}),
    ("openai", {"OPENAI_API_KEY": "k1", "OPENAI_BASE_URL": "http://vllm:8000/v1/", "OPENAI_API_BASE": "x"},
     "http://vllm:8000/v1/chat/completions", {"Authorization": "Bearer k1"}),
    ("openai", {"OPENAI_API_BASE": "http://127.0.0.1:1234/v1"},  # a local server without a key
     "http://127.0.0.1:1234/v1/chat/completions", {}),
    ("groq", {"GROQ_API_KEY": "g"}, "https://api.groq.com/openai/v1/chat/completions",
     {"Authorization": "Bearer g"}),
    ("ollama_chat", {}, "http://localhost:11434/v1/chat/completions", {}),
    ("ollama", {"OLLAMA_API_BASE": "http://gpu-box:11434"}, "http://gpu-box:11434/v1/chat/completions", {}),
    ("openrouter", {"OR_API_KEY": "o"}, "https://openrouter.ai/api/v1/chat/completions",
     {"Authorization": "Bearer o"}),
    ("together_ai", {"TOGETHERAI_API_KEY": "t"}, "https://api.together.ai/v1/chat/completions",
     {"Authorization": "Bearer t"}),
    ("deepseek", {"DEEPSEEK_API_KEY": "d"}, "https://api.deepseek.com/beta/chat/completions",
     {"Authorization": "Bearer d"}),
    ("mistral", {"MISTRAL_API_KEY": "m", "MISTRAL_API_BASE": "https://eu.mistral.example"},
     "https://eu.mistral.example/v1/chat/completions", {"Authorization": "Bearer m"}),
    ("anthropic", {"ANTHROPIC_API_KEY": "a"}, "https://api.anthropic.com/v1/messages",
     {"x-api-key": "a", "anthropic-version": "2023-06-01"}),
])
def test_each_provider_is_reached_where_litellm_reaches_it(provider, env, url, headers):
    from checker.judges.providers import PROVIDERS

    found = endpoint(PROVIDERS[provider], env)
    assert (found.url_for("m"), found.headers) == (url, headers)


def test_azure_calls_the_deployment_with_its_api_version_and_api_key_header():
    from checker.judges.providers import PROVIDERS

    env = {"AZURE_API_KEY": "az", "AZURE_API_BASE": "https://res.openai.azure.com/"}
    found = endpoint(PROVIDERS["azure"], env)
    assert found.url_for("gpt4o-prod") == ("https://res.openai.azure.com/openai/deployments/gpt4o-prod/"
                                           "chat/completions?api-version=2025-02-01-preview")
    assert found.headers == {"api-key": "az"}
    env["AZURE_API_VERSION"] = "2024-10-21"
    assert endpoint(PROVIDERS["azure"], env).url_for("d").endswith("?api-version=2024-10-21")


@pytest.mark.parametrize("provider, env, said", [
    ("groq", {}, "GROQ_API_KEY is not set"),
    ("openai", {}, "OPENAI_API_KEY is not set"),
    ("openrouter", {}, "OPENROUTER_API_KEY (or OR_API_KEY) is not set"),
    ("mistral", {}, "MISTRAL_API_KEY (or MISTRAL_AZURE_API_KEY) is not set"),
    ("azure", {"AZURE_API_KEY": "k"}, "AZURE_API_BASE is not set"),
    ("azure", {"AZURE_API_BASE": "https://r.openai.azure.com"}, "AZURE_API_KEY is not set"),
])
def test_a_missing_key_names_the_variable(provider, env, said):
    from checker.judges.providers import PROVIDERS

    with pytest.raises(MissingCredentials, match=__import__("re").escape(said)):
        endpoint(PROVIDERS[provider], env)


# ---------------------------------------------------------------- requests


def test_openai_request_is_chat_completions_with_openai_names_and_a_json_schema(fake):
    fake.on("Grade", json_answer({"verdict": "valid"}))
    env = {"OPENAI_API_KEY": KEY, "OPENAI_API_BASE": fake.url + "/v1"}
    answer, service = ask(env, "openai/gpt-4o-mini")
    assert answer == {"verdict": "valid"}
    [request] = fake.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    assert request.model == "gpt-4o-mini"  # the provider prefix stripped, as LiteLLM sends it
    assert request.body["messages"] == [{"role": "user", "content": "Grade this. Answer with a JSON object."}]
    # top_k is not part of OpenAI's API (the fake refuses it as OpenAI does); thinking is not sent
    assert request.sampling() == {"temperature": 0.2, "top_p": 0.9, "max_completion_tokens": 300,
                                  "seed": 7, "stop": ["END"], "presence_penalty": 0.1,
                                  "frequency_penalty": 0.3}
    assert request.body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "judge_answer", "strict": True, "schema": {
            "type": "object", "properties": {"verdict": {"type": "string", "enum": ["valid", "invalid"]}},
            "required": ["verdict"], "additionalProperties": False}}}
    assert service.stats.models == {"openai/gpt-4o-mini"}
    assert (service.stats.prompt_tokens, service.stats.output_tokens) == (100, 20)
    assert KEY in service.credentials  # redacted from everything written


def test_groq_gets_max_tokens_and_json_object_as_litellm_sends_them(fake):
    fake.on("Grade", json_answer({"verdict": "invalid"}))
    env = {"GROQ_API_KEY": KEY, "GROQ_API_BASE": fake.url + "/groq/v1"}
    answer, _ = ask(env, "groq/llama-3.3-70b-versatile")
    assert answer == {"verdict": "invalid"}
    [request] = fake.requests
    assert (request.path, request.model) == ("/groq/v1/chat/completions", "llama-3.3-70b-versatile")
    assert request.sampling()["max_tokens"] == 300 and "max_completion_tokens" not in request.body
    assert request.body["response_format"] == {"type": "json_object"}


def test_azure_deployment_url_api_version_and_key_header(fake):
    fake.on("Grade", json_answer({"verdict": "valid"}))
    env = {"AZURE_API_KEY": KEY, "AZURE_API_BASE": fake.url, "AZURE_API_VERSION": "2024-10-21"}
    ask(env, "azure/gpt4o-judge")
    [request] = fake.requests
    assert request.deployment == "gpt4o-judge" and request.query == {"api-version": ["2024-10-21"]}
    assert request.headers["api-key"] == KEY and "Authorization" not in request.headers


def test_ollama_needs_no_key_and_mistral_gets_its_own_names():
    with FakeOpenAI(key=None) as fake:
        fake.on("Grade", json_answer({"verdict": "valid"}))
        ask({"OLLAMA_API_BASE": fake.url}, "ollama_chat/llama3.1")
        [request] = fake.requests
        assert request.path == "/v1/chat/completions" and "Authorization" not in request.headers
        assert request.model == "llama3.1"
    with FakeOpenAI(KEY) as fake:  # (random_seed is Mistral's, not OpenAI's: not sent here)
        fake.on("Grade", json_answer({"verdict": "valid"}))
        config = {k: v for k, v in CONFIG.items() if k != "seed"}
        ask({"MISTRAL_API_KEY": KEY, "MISTRAL_API_BASE": fake.url}, "mistral/mistral-small-latest", config)
        assert fake.requests[0].path == "/v1/chat/completions"
        assert fake.requests[0].body["max_tokens"] == 300
    from checker.judges.chat import request_body
    from checker.judges.providers import PROVIDERS

    mistral = endpoint(PROVIDERS["mistral"], {"MISTRAL_API_KEY": "m"})
    assert request_body(mistral, "m", "p", {"seed": 7})["random_seed"] == 7  # as LiteLLM sends it


def test_anthropic_messages_api(fake):
    fake.on("Grade", anthropic_reply('{"verdict": "valid"}', input_tokens=70, output_tokens=9))
    answer, service = ask({"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_API_BASE": fake.url},
                          "anthropic/claude-3-5-haiku-latest")
    assert answer == {"verdict": "valid"}
    [request] = fake.requests
    assert request.path == "/v1/messages" and request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.body == {"model": "claude-3-5-haiku-latest", "max_tokens": 300,
                            "messages": [{"role": "user", "content": "Grade this. Answer with a JSON object."}],
                            "temperature": 0.2, "top_p": 0.9, "top_k": 5, "stop_sequences": ["END"]}
    assert (service.stats.prompt_tokens, service.stats.output_tokens) == (70, 9)


def test_headers_and_extra_body_of_http_options_are_sent(fake):
    fake.on("Grade", json_answer({"verdict": "valid"}))
    config = {"http_options": {"headers": {"X-Team": "evals"}, "extra_body": {"user": "ci"}}}
    ask({"OPENAI_API_KEY": KEY, "OPENAI_API_BASE": fake.url + "/v1"}, "openai/gpt-4o-mini", config)
    assert fake.requests[0].headers["X-Team"] == "evals" and fake.requests[0].body["user"] == "ci"


# ---------------------------------------------------------------- retries, refusals, credentials


def test_429_is_retried_after_what_retry_after_asks(fake):
    fake.on("Grade", error(429, "Rate limit reached", retry_after="0.3", kind="requests"),
            json_answer({"verdict": "valid"}))
    env = {"GROQ_API_KEY": KEY, "GROQ_API_BASE": fake.url + "/groq/v1"}
    answer, service = ask(env, "groq/llama-3.3-70b-versatile")
    assert answer == {"verdict": "valid"}
    assert len(fake.requests) == 2 and fake.requests[1].received - fake.requests[0].received >= 0.3
    assert service.stats.retry_delays == [0.3] and service.stats.retries == 1


def test_a_service_that_keeps_refusing_is_unavailable_counted_by_code(fake):
    fake.on("Grade", error(503, "overloaded"))
    env = {"GROQ_API_KEY": KEY, "GROQ_API_BASE": fake.url + "/groq/v1"}
    with pytest.raises(JudgeUnavailable, match=r"after 3 attempt\(s\): HTTP 503 Service Unavailable: overloaded"):
        ask(env, "groq/llama-3.3-70b-versatile")
    assert len(fake.requests) == 3


def test_a_400_is_not_retried(fake):
    env = {"OPENAI_API_KEY": KEY, "OPENAI_API_BASE": fake.url + "/v1"}
    with pytest.raises(Exception, match=r"judge request rejected \(HTTP 400: fake_openai: no rule matches"):
        ask(env, "openai/gpt-4o-mini")
    assert len(fake.requests) == 1


def test_a_refused_key_is_a_setup_error_naming_the_variable_never_the_key(fake):
    env = {"GROQ_API_KEY": "gsk-wrong-key-0000000000", "GROQ_API_BASE": fake.url + "/groq/v1"}
    with pytest.raises(JudgeCredentialsRefused) as caught:
        ask(env, "groq/llama-3.3-70b-versatile")
    assert "groq refused the judge's credentials; check GROQ_API_KEY" in str(caught.value)
    assert "HTTP 401" in str(caught.value)
    assert "gsk-wrong-key-0000000000" not in str(caught.value)


def test_a_missing_key_fails_every_call_at_once_with_the_variable(fake):
    service = JudgeService(2, None, env={}, retry=FAST)
    with pytest.raises(JudgeConfigError, match="no judge credentials: GROQ_API_KEY is not set"):
        service.ensure_client(model="groq/llama-3.3-70b-versatile")
    with pytest.raises(JudgeConfigError, match="GROQ_API_KEY is not set"):
        ask({}, "groq/llama-3.3-70b-versatile")
    assert fake.requests == []


# ---------------------------------------------------------------- cache


def test_the_cache_key_holds_the_provider_and_a_server_of_its_own(tmp_path, fake):
    args = ("llama-3", "prompt", {"temperature": 0.0}, 0)
    gemini = cache_key(*args)
    assert gemini == cache_key("llama-3", "prompt", {"temperature": 0.0}, 0)  # Gemini's as before
    assert len({gemini, cache_key(*args, provider="groq"), cache_key(*args, provider="openai"),
                cache_key(*args, provider="openai", base_url="http://a:1/v1")}) == 4
    fake.on("Grade", json_answer({"verdict": "valid"}))
    env = {"OPENAI_API_KEY": KEY, "OPENAI_API_BASE": fake.url + "/v1"}
    ask(env, "openai/gpt-4o-mini", cache_dir=tmp_path / "cache")
    _, again = ask(env, "openai/gpt-4o-mini", cache_dir=tmp_path / "cache")
    assert len(fake.requests) == 1 and again.stats.cache_hits == 1
    other = {"OPENAI_API_KEY": KEY, "OPENAI_API_BASE": fake.url + "/other/v1"}
    ask(other, "openai/gpt-4o-mini", cache_dir=tmp_path / "cache")  # another server: asked
    assert len(fake.requests) == 2
