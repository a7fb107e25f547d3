"""Judge models by ADK's names: ``provider/model`` (google-adk's registry hands such names to
LiteLLM), called through the provider's own OpenAI-compatible chat-completions API (or
Anthropic's messages API), with LiteLLM's provider names and environment variables, since
ADK's users already set those. Pure: no network, no heavy imports.

A name without a known ``provider/`` is a Gemini model (``gemini-2.5-flash``,
``[gemini]:gemini-2.5-pro``), judged by the Gemini client as before; ``gemini/x`` is LiteLLM's
name for the same Gemini API model ``x``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

ANTHROPIC_VERSION = "2023-06-01"
ANTHROPIC_MAX_TOKENS = 4096  # LiteLLM's default: the messages API needs max_tokens
AZURE_API_VERSION = "2025-02-01-preview"  # LiteLLM's AZURE_DEFAULT_API_VERSION (1.106)


@dataclass(frozen=True)
class Provider:
    """One provider: where its API is and which variables hold its key and base URL, in
    LiteLLM's order of preference."""

    name: str
    api: str  # "chat" (OpenAI chat completions), "azure", "anthropic"
    key_vars: tuple[str, ...]
    base_vars: tuple[str, ...]
    default_base: str | None
    needs_key: bool = True
    max_tokens_param: str = "max_completion_tokens"  # what max_output_tokens is sent as
    seed_param: str = "seed"
    # OpenAI's json_schema response format, or only json_object where the provider's models
    # do not all take a schema (Groq's Llama models, DeepSeek): the answer is checked anyway.
    json_schema: bool = True
    extra_key_vars: tuple[str, ...] = field(default=())  # other credentials (Azure AD)
    main_key: str | None = None  # the variable a message names (else the first of key_vars)

    @property
    def key_label(self) -> str:
        """``GROQ_API_KEY``, ``OPENROUTER_API_KEY (or OR_API_KEY)``: what a message names."""
        main = self.main_key or (self.key_vars[0] if self.key_vars else "")
        others = [v for v in self.key_vars if v != main]
        return main + (f" (or {', '.join(others)})" if others else "")


PROVIDERS: dict[str, Provider] = {p.name: p for p in (
    Provider("openai", "chat", ("OPENAI_API_KEY",), ("OPENAI_BASE_URL", "OPENAI_API_BASE"),
             "https://api.openai.com/v1"),
    Provider("azure", "azure", ("AZURE_OPENAI_API_KEY", "AZURE_API_KEY"), ("AZURE_API_BASE",),
             None, extra_key_vars=("AZURE_AD_TOKEN",), main_key="AZURE_API_KEY"),
    Provider("groq", "chat", ("GROQ_API_KEY",), ("GROQ_API_BASE",),
             "https://api.groq.com/openai/v1", max_tokens_param="max_tokens", json_schema=False),
    Provider("ollama", "chat", (), ("OLLAMA_API_BASE",), "http://localhost:11434",
             needs_key=False, max_tokens_param="max_tokens"),
    Provider("ollama_chat", "chat", (), ("OLLAMA_API_BASE",), "http://localhost:11434",
             needs_key=False, max_tokens_param="max_tokens"),
    Provider("openrouter", "chat", ("OPENROUTER_API_KEY", "OR_API_KEY"), ("OPENROUTER_API_BASE",),
             "https://openrouter.ai/api/v1"),
    Provider("together_ai", "chat", ("TOGETHER_API_KEY", "TOGETHER_AI_API_KEY",
                                     "TOGETHERAI_API_KEY", "TOGETHER_AI_TOKEN"),
             ("TOGETHER_AI_API_BASE",), "https://api.together.ai/v1", json_schema=False),
    Provider("deepseek", "chat", ("DEEPSEEK_API_KEY",), ("DEEPSEEK_API_BASE",),
             "https://api.deepseek.com/beta", json_schema=False),
    Provider("mistral", "chat", ("MISTRAL_AZURE_API_KEY", "MISTRAL_API_KEY"),
             ("MISTRAL_AZURE_API_BASE", "MISTRAL_API_BASE"), "https://api.mistral.ai/v1",
             max_tokens_param="max_tokens", seed_param="random_seed", main_key="MISTRAL_API_KEY"),
    Provider("anthropic", "anthropic", ("ANTHROPIC_API_KEY",),
             ("ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL"), "https://api.anthropic.com",
             max_tokens_param="max_tokens"),
)}
# Names ADK's registry (or LiteLLM) routes that no judge here can call.
_ELSEWHERE = ("vertex_ai", "bedrock", "azure_ai", "fireworks_ai", "cohere", "databricks", "ai21",
              "huggingface", "apigee", "sagemaker", "watsonx", "xai")
_PREFIX = re.compile(r"^\[(?P<cls>[A-Za-z_]\w*)\]:(?P<rest>.*)$")
_PROVIDER = re.compile(r"^(?P<provider>[a-z][a-z0-9_]*)/(?P<model>.*)$")
_BARE_OTHERS = re.compile(r"^(gpt-|o\d+(-|$)|chatgpt-|claude-)", re.I)


class UnknownJudgeModel(ValueError):
    """A judge_model no judge here can call; the text names what can."""


@dataclass(frozen=True)
class JudgeModel:
    """A judge_model as written (``name``), its provider (None: Gemini) and the model name
    sent to the provider (``model``: the provider prefix stripped, as LiteLLM sends it; for
    Azure, the deployment)."""

    name: str
    provider: Provider | None
    model: str

    @property
    def label(self) -> str:
        return self.provider.name if self.provider else "gemini"


def known_providers() -> str:
    return ", ".join(sorted(PROVIDERS))


def parse_judge_model(name: str) -> JudgeModel:
    """``name`` as a judge model; UnknownJudgeModel for a provider no judge here can call."""
    text = name.strip()
    prefixed = _PREFIX.match(text)
    if prefixed:  # ADK's [ClassName]:model forces a class: Gemini, or LiteLlm's provider/model
        cls, text = prefixed.group("cls").lower(), prefixed.group("rest").strip()
        if cls == "gemini":
            return JudgeModel(name, None, text)
        if cls != "litellm":
            raise UnknownJudgeModel(
                f"judge_model '{name}' names ADK's model class [{prefixed.group('cls')}], which "
                f"evalcheck's judges do not have; use a Gemini model (e.g. gemini-2.5-flash) or "
                f"provider/model with one of: {known_providers()}")
    found = _PROVIDER.match(text)
    if found is None:
        if not text:
            raise UnknownJudgeModel("judge_model is empty")
        if _BARE_OTHERS.match(text):
            hint = "anthropic" if text.lower().startswith("claude") else "openai"
            raise UnknownJudgeModel(
                f"judge_model '{name}' is not a Gemini model; name its provider as ADK and "
                f"LiteLLM do: {hint}/{text} (providers: {known_providers()})")
        return JudgeModel(name, None, text)
    provider, model = found.group("provider"), found.group("model").strip()
    if provider == "gemini":
        return JudgeModel(name, None, model)
    if provider in PROVIDERS:
        if not model:
            raise UnknownJudgeModel(f"judge_model '{name}' names no model after '{provider}/'")
        return JudgeModel(name, PROVIDERS[provider], model)
    if provider in _ELSEWHERE:
        raise UnknownJudgeModel(
            f"judge_model '{name}': the provider '{provider}' is not one evalcheck's judges "
            f"call; use a Gemini model (e.g. gemini-2.5-flash) or one of: {known_providers()} "
            "(openai/ with OPENAI_API_BASE reaches any OpenAI-compatible server)")
    if text.startswith(("projects/", "models/")):  # Vertex AI / Gemini resource names
        return JudgeModel(name, None, text)
    raise UnknownJudgeModel(
        f"judge_model '{name}': unknown provider '{provider}'; the providers known are: "
        f"{known_providers()} (or a Gemini model such as gemini-2.5-flash)")


@dataclass(frozen=True)
class Endpoint:
    """Where one provider's requests go and how they authenticate."""

    provider: Provider
    url: str  # the full URL of the chat-completions (or messages) endpoint, minus the model
    headers: dict[str, str]
    key: str | None  # the credential sent (redacted everywhere)
    key_var: str | None  # the variable it came from
    custom_base: bool  # the base URL is not the provider's own (a proxy, a local server)

    def url_for(self, model: str) -> str:
        if self.provider.api == "azure":
            base, _, query = self.url.partition("?")
            return f"{base.rstrip('/')}/openai/deployments/{model}/chat/completions?{query}"
        return self.url


class MissingCredentials(ValueError):
    """The provider's key (or base URL) is not set; the text names the variables."""


def _first(env: Mapping[str, str], names: tuple[str, ...]) -> tuple[str | None, str | None]:
    for name in names:
        value = (env.get(name) or "").strip()
        if value:
            return value, name
    return None, None


def endpoint(provider: Provider, env: Mapping[str, str], base_url: str | None = None) -> Endpoint:
    """The provider's endpoint from ``env`` (``base_url``: judge_model_config's
    http_options.base_url, first); MissingCredentials naming what to set."""
    base, _ = (base_url.strip(), "base_url") if base_url and base_url.strip() else \
        _first(env, provider.base_vars)
    custom = base is not None
    base = (base or provider.default_base or "").rstrip("/")
    key, key_var = _first(env, provider.key_vars)
    if provider.api == "azure":
        if not base:
            raise MissingCredentials(
                "AZURE_API_BASE is not set: the judge needs the Azure OpenAI resource's endpoint "
                "(https://<resource>.openai.azure.com), with AZURE_API_KEY and optionally "
                "AZURE_API_VERSION")
        token, token_var = _first(env, provider.extra_key_vars)
        if not key and not token:
            raise MissingCredentials("AZURE_API_KEY is not set (or AZURE_AD_TOKEN): the judge "
                                     "needs the Azure OpenAI key")
        version = (env.get("AZURE_API_VERSION") or "").strip() or AZURE_API_VERSION
        headers = {"api-key": key} if key else {"Authorization": f"Bearer {token}"}
        return Endpoint(provider, f"{base}?api-version={version}", headers, key or token,
                        key_var or token_var, True)
    if not key and provider.needs_key and not (custom and provider.name == "openai"):
        raise MissingCredentials(f"{provider.key_label} is not set: the {provider.name}/ judge "
                                 "needs the provider's API key in the environment")
    if provider.api == "anthropic":
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if key:
            headers["x-api-key"] = key
        return Endpoint(provider, f"{base}/v1/messages", headers, key, key_var, custom)
    if provider.name == "mistral" and not base.endswith("/v1"):  # as LiteLLM: always /v1
        base += "/v1"
    if provider.name.startswith("ollama"):  # Ollama's OpenAI-compatible API
        base = base if base.endswith("/v1") else base + "/v1"
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return Endpoint(provider, f"{base}/chat/completions", headers, key, key_var, custom)
