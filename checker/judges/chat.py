"""The judge client of ``provider/model`` judges (judges/providers.py): one request to the
provider's OpenAI-compatible chat-completions endpoint (Azure OpenAI's deployment URL, or
Anthropic's messages API), on httpx; retries and backoff as the Gemini judge's
(judges/retrying.py).

The request is what google-adk's LiteLlm model sends a judge (LiteLLM's conventions): one
user message with the prompt, the model name without its provider prefix, and the sampling
settings of ``judge_model_config`` (GenerateContentConfig fields) under OpenAI's names:
temperature, top_p, max_output_tokens (as ``max_completion_tokens``, or ``max_tokens`` where
LiteLLM sends that), seed, stop_sequences (``stop``), presence_penalty, frequency_penalty;
``http_options.headers`` and ``extra_body`` are sent as given. Differences, on purpose:
``top_k`` is not sent (no part of OpenAI's API: the OpenAI API refuses it, where LiteLLM
passes it on), thinking settings are not translated, and the answer is asked for as JSON
(``response_format``: a JSON schema, or ``json_object`` where the provider's models do not
all take one), as the Gemini judge asks with its response schema.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from collections.abc import Callable, Mapping
from typing import Any

from .base import CallStats, Guard, JudgeCredentialsRefused, JudgeReply, RetryPolicy
from .providers import ANTHROPIC_MAX_TOKENS, Endpoint

_SAMPLING = ("temperature", "top_p", "presence_penalty", "frequency_penalty")
_FINISH = {"stop": "STOP", "length": "MAX_TOKENS", "content_filter": "SAFETY",
           "end_turn": "STOP", "max_tokens": "MAX_TOKENS", "stop_sequence": "STOP",
           "tool_calls": "TOOL_CALLS", "refusal": "SAFETY"}
_REASONS = {408: "Request Timeout", 429: "Too Many Requests", 500: "Internal Server Error",
            502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
            529: "Overloaded"}
MAX_ANSWER = 8 * 1024 * 1024  # a judge answer is a few kB; a larger body is not read whole


def json_schema(schema: Any) -> Any:
    """A Gemini-style response schema (``"type": "OBJECT"``, ``property_ordering``) as JSON
    Schema: lower-case types, objects closed (``additionalProperties: false``)."""
    if isinstance(schema, list):
        return [json_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("property_ordering", "propertyOrdering"):
            continue
        if key == "type" and isinstance(value, str):
            out[key] = value.lower()
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: json_schema(v) for name, v in value.items()}
        else:
            out[key] = json_schema(value)
    if out.get("type") == "object":
        out.setdefault("additionalProperties", False)
    return out


def _strict(schema: Any) -> bool:
    """OpenAI's strict mode takes only schemas whose every object requires all its fields."""
    if isinstance(schema, list):
        return all(_strict(s) for s in schema)
    if not isinstance(schema, dict):
        return True
    if schema.get("type") == "object" and set(schema.get("required") or []) != set(
            schema.get("properties") or {}):
        return False
    return all(_strict(v) for k, v in schema.items() if k != "enum")


def response_format(endpoint: Endpoint, prompt: str, schema: Any) -> dict[str, Any] | None:
    if schema is None:
        return None
    if endpoint.provider.json_schema:
        converted = json_schema(schema)
        return {"type": "json_schema", "json_schema": {
            "name": "judge_answer", "schema": converted, "strict": _strict(converted)}}
    # json_object needs the word JSON in the messages (OpenAI's rule, Groq's too)
    return {"type": "json_object"} if "json" in prompt.lower() else None


def request_body(endpoint: Endpoint, model: str, prompt: str,
                 config: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON body of one judge request (see the module's docstring)."""
    provider = endpoint.provider
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": prompt}]}
    for name in _SAMPLING:
        if config.get(name) is not None and not (
                provider.api == "anthropic" and name.endswith("_penalty")):
            body[name] = config[name]
    if config.get("max_output_tokens") is not None:
        body[provider.max_tokens_param] = config["max_output_tokens"]
    if config.get("stop_sequences"):
        body["stop_sequences" if provider.api == "anthropic" else "stop"] = list(
            config["stop_sequences"])
    if provider.api == "anthropic":
        body.setdefault("max_tokens", ANTHROPIC_MAX_TOKENS)
        if config.get("top_k") is not None:  # Anthropic's API has top_k
            body["top_k"] = int(config["top_k"])
    else:
        if config.get("seed") is not None:
            body[provider.seed_param] = config["seed"]
        found = response_format(endpoint, prompt, config.get("response_schema"))
        if found is not None:
            body["response_format"] = found
    extra = (config.get("http_options") or {}).get("extra_body")
    if isinstance(extra, dict):
        body.update(extra)
    return body


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the service asked to wait: ``retry-after-ms`` (OpenAI), ``Retry-After`` (a
    number of seconds or an HTTP date)."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = (headers.get("retry-after") or "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        return max(0.0, parsed.timestamp() - time.time()) if parsed is not None else None


def error_message(status: int, text: str) -> str:
    """``HTTP 429 Too Many Requests: Rate limit reached ...`` from an error answer's body
    (OpenAI's ``{"error": {"message": ...}}``, Anthropic's, or plain text)."""
    detail = text.strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error", data)
        detail = str(error.get("message") or error) if isinstance(error, dict) else str(error)
    detail = " ".join(detail.split())[:300]
    head = f"HTTP {status} {_REASONS.get(status, '')}".rstrip()
    return f"{head}: {detail}" if detail else head


def read_reply(endpoint: Endpoint, data: Any) -> JudgeReply:
    """A judge answer's text, finish reason and tokens; ValueError if it is not one."""
    if not isinstance(data, dict):
        raise ValueError("the answer is not a JSON object")
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    if endpoint.provider.api == "anthropic":
        parts = data.get("content")
        if not isinstance(parts, list):
            raise ValueError("no content in the answer")
        text = "".join(p.get("text", "") for p in parts if isinstance(p, dict)
                       and p.get("type") == "text")
        thoughts = any(isinstance(p, dict) and p.get("type") == "thinking" for p in parts)
        finish = data.get("stop_reason")
        prompt, output = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
        total = prompt + output
    else:
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ValueError("no choices in the answer")
        message = choices[0].get("message") or {}
        content = message.get("content")
        if isinstance(content, list):  # content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        text = content if isinstance(content, str) else ""
        thoughts = bool(message.get("reasoning_content") or message.get("reasoning"))
        finish = choices[0].get("finish_reason")
        prompt = int(usage.get("prompt_tokens") or 0)
        output = int(usage.get("completion_tokens") or 0)
        total = int(usage.get("total_tokens") or 0) or prompt + output
    finish_text = _FINISH.get(str(finish), str(finish).upper()) if finish else None
    return JudgeReply(text=text, finish_reason=finish_text, prompt_tokens=prompt,
                      output_tokens=output, total_tokens=total, thoughts=thoughts)


class ChatClient:
    """One httpx client per endpoint; retries are judges/retrying.py's."""

    def __init__(self, endpoint: Endpoint, *, sleep: Callable[[float], Any] = asyncio.sleep,
                 rng: random.Random | None = None):
        import httpx

        self.endpoint = endpoint
        self.google_credentials: Any = None  # (the Gemini client's; none here)
        self._sleep = sleep
        self._rng = rng or random.Random()
        # trust_env: a proxy set in the environment is used, as LiteLLM's clients use it
        self._client = httpx.AsyncClient(timeout=None, follow_redirects=False)

    async def generate(self, model: str, prompt: str, config: dict[str, Any], policy: RetryPolicy,
                       stats: CallStats, limiter: Any, guard: Guard | None = None) -> JudgeReply:
        import httpx

        from .retrying import Rejected, Retryable, call_with_retries

        endpoint = self.endpoint
        body = request_body(endpoint, model, prompt, config)
        headers = {**endpoint.headers, "Content-Type": "application/json"}
        extra = (config.get("http_options") or {}).get("headers")
        if isinstance(extra, dict):
            headers.update({str(k): str(v) for k, v in extra.items()})
        url = endpoint.url_for(model)
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")

        async def send() -> JudgeReply:
            try:
                async with self._client.stream("POST", url, content=payload,
                                               headers=headers) as response:
                    raw = await _read_bounded(response)
            except httpx.TransportError as exc:
                raise Retryable(f"connection failed ({type(exc).__name__}: {exc})",
                                "connection") from None
            status = response.status_code
            text = raw.decode("utf-8", errors="replace")
            if status >= 400:
                message = error_message(status, text)
                if status in (401, 403):
                    raise JudgeCredentialsRefused(
                        f"judge request rejected ({message}): {endpoint.provider.name} refused "
                        f"the judge's credentials; check {self._key_hint()}")
                if status in policy.statuses or status == 529:
                    raise Retryable(message, f"{status} {_REASONS.get(status, '')}".rstrip(),
                                    retry_after(response.headers))
                raise Rejected(f"judge request rejected ({message})")
            try:
                return read_reply(endpoint, json.loads(text))
            except ValueError as exc:
                raise Rejected(f"unreadable answer from the judge ({exc}): "
                               f"{' '.join(text.split())[:200]}") from None

        return await call_with_retries(send, policy, stats, limiter, guard, sleep=self._sleep,
                                       rng=self._rng)

    def _key_hint(self) -> str:
        endpoint = self.endpoint
        if endpoint.key_var:
            return endpoint.key_var
        return endpoint.provider.key_label or "the provider's key"

    async def aclose(self) -> None:
        await self._client.aclose()


async def _read_bounded(response: Any) -> bytes:
    chunks, size = [], 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_ANSWER:
            break
        chunks.append(chunk)
    return b"".join(chunks)
