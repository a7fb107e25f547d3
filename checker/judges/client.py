"""The Gemini judge client: credentials, one request, retries with backoff.

Built on ``google-genai`` (imported lazily). google-genai's own retries are switched off
(``HttpRetryOptions(attempts=1)``, which also disables its implicit reconnect-and-retry), so
every HTTP request the judge makes is one counted call, and retry/backoff is decided here:
408, 429 and 5xx answers, timeouts and connection errors are retried with exponential backoff
plus jitter, waiting at least as long as the server's ``Retry-After`` (or ``RetryInfo``) asks.

Credentials, from the environment (the same variables google-genai and ADK read):
- Gemini API: ``GOOGLE_API_KEY`` or ``GEMINI_API_KEY``;
- Vertex AI: ``GOOGLE_GENAI_USE_VERTEXAI=true`` with ``GOOGLE_CLOUD_PROJECT`` and
  ``GOOGLE_CLOUD_LOCATION`` (application default credentials).
Base URL (proxies, tests): ``http_options.base_url`` in ``judge_model_config``, else
``EVALCHECK_GEMINI_BASE_URL``, else google-genai's own ``GOOGLE_GEMINI_BASE_URL`` /
``GOOGLE_VERTEX_BASE_URL``.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

# The shared types, imported from here by the metrics and the simulator as before.
from .base import (RETRY_STATUSES, CallStats, Guard, JudgeConfigError, JudgeCredentialsRefused,  # noqa: F401
                   JudgeError, JudgeReply, JudgeUnavailable, RetryPolicy)

CREDENTIALS_HELP = ("set GOOGLE_API_KEY (or GEMINI_API_KEY) for the Gemini API, or "
                    "GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT and "
                    "GOOGLE_CLOUD_LOCATION for Vertex AI")


@dataclass(frozen=True)
class Backend:
    """Where judge requests go, resolved from the environment."""

    vertexai: bool
    api_key: str | None = None
    project: str | None = None
    location: str | None = None
    base_url: str | None = None

    @property
    def label(self) -> str:
        return "vertex" if self.vertexai else "gemini-api"


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def backend_from_env(env: Mapping[str, str], base_url: str | None = None) -> Backend:
    """The judge backend for ``env``; JudgeConfigError names the variables to set."""
    base_url = base_url or env.get("EVALCHECK_GEMINI_BASE_URL") or None
    if _truthy(env.get("GOOGLE_GENAI_USE_VERTEXAI")):
        project, location = env.get("GOOGLE_CLOUD_PROJECT"), env.get("GOOGLE_CLOUD_LOCATION")
        missing = [n for n, v in (("GOOGLE_CLOUD_PROJECT", project),
                                  ("GOOGLE_CLOUD_LOCATION", location)) if not v]
        if missing and not base_url:
            raise JudgeConfigError(
                "no judge credentials: GOOGLE_GENAI_USE_VERTEXAI is set but "
                + " and ".join(missing) + (" is" if len(missing) == 1 else " are")
                + " not; set GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION (Vertex AI uses "
                "application default credentials), or unset GOOGLE_GENAI_USE_VERTEXAI and set "
                "GOOGLE_API_KEY")
        return Backend(vertexai=True, project=project, location=location, base_url=base_url)
    api_key = env.get("GOOGLE_API_KEY") or env.get("GEMINI_API_KEY")
    has_own_base = bool(base_url or env.get("GOOGLE_GEMINI_BASE_URL"))
    if not api_key and not has_own_base:
        raise JudgeConfigError("no judge credentials: " + CREDENTIALS_HELP)
    return Backend(vertexai=False, api_key=api_key, base_url=base_url)


def _retry_after(exc: Any) -> float | None:
    """Seconds the server asked us to wait: ``Retry-After`` header, else google.rpc.RetryInfo."""
    response = getattr(exc, "response", None)
    response = getattr(response, "_response", response)
    headers = getattr(response, "headers", None)
    value = None
    if headers is not None:
        try:
            value = headers.get("Retry-After") or headers.get("retry-after")
        except Exception:  # exotic header containers
            value = None
    if value:
        value = value.strip()
        try:
            return max(0.0, float(value))
        except ValueError:
            parsed = email.utils.parsedate_to_datetime(value) if value else None
            if parsed is not None:
                return max(0.0, parsed.timestamp() - time.time())
    details = getattr(exc, "details", None)
    found = re.search(r"'retryDelay': '([0-9.]+)s'|\"retryDelay\": \"([0-9.]+)s\"", str(details))
    if found:
        return float(found.group(1) or found.group(2))
    return None


def _reply_from_response(response: Any) -> JudgeReply:
    candidates = getattr(response, "candidates", None) or []
    finish = None
    texts: list[str] = []
    thoughts = False
    if candidates:
        first = candidates[0]
        finish = getattr(getattr(first, "finish_reason", None), "value", None) or (
            str(first.finish_reason) if getattr(first, "finish_reason", None) else None)
        content = getattr(first, "content", None)
        for part in getattr(content, "parts", None) or []:
            if getattr(part, "thought", False):
                thoughts = True
            elif getattr(part, "text", None):
                texts.append(part.text)
    usage = getattr(response, "usage_metadata", None)
    prompt = int(getattr(usage, "prompt_token_count", 0) or 0)
    output = int(getattr(usage, "candidates_token_count", 0) or 0) + int(
        getattr(usage, "thoughts_token_count", 0) or 0)
    total = int(getattr(usage, "total_token_count", 0) or 0) or prompt + output
    return JudgeReply(text="".join(texts), finish_reason=finish, prompt_tokens=prompt,
                      output_tokens=output, total_tokens=total, thoughts=thoughts)


def _import_genai() -> Any:
    try:
        from google import genai
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise JudgeConfigError(
            "LLM-judged metrics need the google-genai package: pip install google-genai (what "
            "evalcheck-adk's extra judges installs)"
        ) from exc
    return genai


class GeminiClient:
    """One google-genai client per (backend, base URL); retries are ours."""

    def __init__(self, backend: Backend, *, sleep: Callable[[float], Any] = asyncio.sleep,
                 rng: random.Random | None = None):
        self.backend = backend
        self._sleep = sleep
        self._rng = rng or random.Random()
        genai = _import_genai()
        from google.genai import types

        http_options = types.HttpOptions(
            retry_options=types.HttpRetryOptions(attempts=1),  # we retry, so calls count exactly
            base_url=backend.base_url or None)
        self.google_credentials: Any = None  # ADC of the Vertex AI backend (judges/adc.py)
        if backend.vertexai:
            from .adc import NoApplicationCredentials, application_default_credentials

            try:
                self.google_credentials = application_default_credentials()
            except NoApplicationCredentials as exc:
                raise JudgeConfigError(
                    f"no judge credentials: GOOGLE_GENAI_USE_VERTEXAI is set but there are no "
                    f"application default credentials ({exc}); run `gcloud auth "
                    "application-default login` or set GOOGLE_APPLICATION_CREDENTIALS, or unset "
                    "GOOGLE_GENAI_USE_VERTEXAI and set GOOGLE_API_KEY") from None
            self._client = genai.Client(vertexai=True, credentials=self.google_credentials,
                                        project=backend.project, location=backend.location,
                                        http_options=http_options)
        else:
            self._client = genai.Client(api_key=backend.api_key or "no-key-behind-proxy",
                                        http_options=http_options)

    async def generate(self, model: str, prompt: str, config: dict[str, Any], policy: RetryPolicy,
                       stats: CallStats, limiter: Any, guard: Guard | None = None) -> JudgeReply:
        """One judge answer. Raises JudgeError once the retries are spent, or at once when
        ``guard`` says the run's judging is over (budget spent, circuit open)."""
        from google.genai import errors, types

        from .retrying import Rejected, Retryable, call_with_retries

        config = dict(config)
        if isinstance(config.get("response_schema"), dict):  # sent with the API's field names
            config["response_schema"] = types.Schema.model_validate(config["response_schema"])
        request_config = types.GenerateContentConfig.model_validate(config)
        contents = [types.Content(role="user", parts=[types.Part(text=prompt)])]

        async def send() -> JudgeReply:
            try:
                response = await self._client.aio.models.generate_content(
                    model=model, contents=contents, config=request_config)
            except errors.APIError as exc:
                message = f"HTTP {exc.code} {exc.status or ''}: {exc.message or ''}".strip()
                if exc.code in (401, 403) and self.backend.api_key:
                    raise JudgeCredentialsRefused(
                        f"judge request rejected ({message}): the Gemini API refused the "
                        "judge's key; check GOOGLE_API_KEY (or GEMINI_API_KEY)") from None
                if exc.code not in policy.statuses:
                    raise Rejected(f"judge request rejected ({message})") from None
                raise Retryable(message, f"{exc.code} {exc.status or ''}".strip(),
                                _retry_after(exc)) from None
            except (OSError, ConnectionError) as exc:
                raise Retryable(f"connection failed ({type(exc).__name__}: {exc})",
                                "connection") from None
            except Exception as exc:  # aiohttp/httpx transport errors share no base class
                if isinstance(exc, (asyncio.TimeoutError, Retryable, JudgeError)):
                    raise
                if not _is_transport_error(exc):
                    raise Rejected(f"unreadable answer from the judge ({type(exc).__name__}: "
                                   f"{exc})") from None
                raise Retryable(f"connection failed ({type(exc).__name__}: {exc})",
                                "connection") from None
            return _reply_from_response(response)

        return await call_with_retries(send, policy, stats, limiter, guard, sleep=self._sleep,
                                       rng=self._rng)

    async def aclose(self) -> None:
        await self._client.aio.aclose()


def _is_transport_error(exc: BaseException) -> bool:
    module = type(exc).__module__ or ""
    return module.startswith(("aiohttp", "httpx", "httpcore"))
