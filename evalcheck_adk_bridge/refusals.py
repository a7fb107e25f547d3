"""Whether what a run raised is the model service's refusal, not the agent's error: the
``unavailable`` field of the bridge's error message (docs/agent-protocol.md).

google-genai raises ``google.genai.errors.ClientError`` / ``ServerError`` (``APIError``:
``code``, ``status``, ``details``, ``response``) for the service's answers; ADK wraps a 429 in
its ``_ResourceExhaustedError`` (a ClientError). A reset or refused connection raised inside
google-genai's client (httpx's or aiohttp's error, not wrapped) is the model's host going
away; the same error raised by a tool is the agent's, and so is a connection that could not
be made at all (a wrong base URL: setup). LiteLLM's and the OpenAI / Anthropic
SDKs' errors (ADK's LiteLlm models) carry ``status_code``. Standard library only: the SDKs'
types are recognised by name and module, never imported here.
"""

from __future__ import annotations

import re
from email.utils import parsedate_to_datetime
from typing import Any

REFUSED = {429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 502: "BAD_GATEWAY", 503: "UNAVAILABLE",
           504: "DEADLINE_EXCEEDED"}
_BY_NAME = {name: code for code, name in REFUSED.items()}
_SDKS = ("google", "litellm", "openai", "anthropic")
# A connection the model's host reset or closed mid-call. Not a connection that could not be
# made (ConnectError: a wrong base URL or proxy fails every run the same way; that is setup).
_CONNECTION_TYPES = ("ReadError", "WriteError", "RemoteProtocolError",
                     "ServerDisconnectedError", "ClientOSError", "ConnectionResetError",
                     "ConnectionAbortedError", "BrokenPipeError")
# A model's answer that did not come in time (the SDK's own timeout): the service's deadline.
_TIMEOUT_TYPES = ("ReadTimeout", "APITimeoutError")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)s$")


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and what caused it (``from``, or raised while handling), at most 10."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 10:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _root(exc: BaseException) -> str:
    return type(exc).__module__.split(".")[0]


def _through_model_client(exc: BaseException) -> bool:
    """Raised inside a model SDK's client (google-genai, LiteLLM, openai, anthropic)."""
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_globals.get("__name__", "")
        if isinstance(name, str) and (name.startswith(("google.genai", "litellm", "openai",
                                                       "anthropic"))):
            return True
        tb = tb.tb_next
    return False


def error_details(details: Any, kind: str) -> list[dict[str, Any]]:
    """The items of type ``google.rpc.<kind>`` (RetryInfo, QuotaFailure, ...) of Google's
    error body (google-genai's ``APIError.details``: the body, or its ``error``)."""
    body = details.get("error", details) if isinstance(details, dict) else None
    items = body.get("details") if isinstance(body, dict) else None
    return [item for item in items if isinstance(item, dict)
            and str(item.get("@type", "")).endswith(f"google.rpc.{kind}")] \
        if isinstance(items, list) else []


def _retry_info(details: Any) -> float | None:
    for item in error_details(details, "RetryInfo"):
        found = _DURATION.match(str(item.get("retryDelay", "")).strip())
        if found:
            return float(found.group(1))
    return None


def _retry_after(response: Any) -> float | None:
    headers = getattr(response, "headers", None)
    value = None
    try:
        value = headers.get("retry-after") if headers is not None else None
    except Exception:  # an SDK's own header type: the hint is optional
        return None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        import datetime

        when = parsedate_to_datetime(str(value))
        return max(0.0, (when - datetime.datetime.now(when.tzinfo)).total_seconds())
    except (TypeError, ValueError, IndexError):
        return None


def _named(code: int, status: Any, retry: float | None) -> dict[str, Any]:
    name = status if isinstance(status, str) and status.isupper() else REFUSED[code]
    out: dict[str, Any] = {"code": f"{code} {name}"}
    if retry is not None:
        out["retryAfter"] = retry
    return out


def service_refusal(exc: BaseException) -> dict[str, Any] | None:
    """The ``unavailable`` field for what a run raised, or None when it is the agent's own."""
    for error in _chain(exc):
        if _root(error) not in _SDKS and not (type(error).__name__ in _CONNECTION_TYPES
                                              + _TIMEOUT_TYPES and _through_model_client(error)):
            continue
        code = getattr(error, "code", None)
        if not isinstance(code, int) or isinstance(code, bool):
            code = getattr(error, "status_code", None)
        status = getattr(error, "status", None)
        if not isinstance(code, int) and isinstance(status, str) and status in _BY_NAME:
            code = _BY_NAME[status]
        if isinstance(code, int) and code in REFUSED:
            retry = _retry_info(getattr(error, "details", None))
            if retry is None:
                retry = _retry_after(getattr(error, "response", None))
            return _named(code, status, retry)
        if type(error).__name__ in _CONNECTION_TYPES and _through_model_client(error):
            return {"code": "connection"}
        if type(error).__name__ in _TIMEOUT_TYPES and _through_model_client(error):
            return {"code": "504 DEADLINE_EXCEEDED"}
    return None
