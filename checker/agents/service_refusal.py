"""Which failures of a run are the model service's refusals, not the agent's errors.

A run ends *unavailable* (checker/models/refusal.py) when its agent's model service refused
or failed the call - 429 RESOURCE_EXHAUSTED, 503 UNAVAILABLE, 500 INTERNAL, 504
DEADLINE_EXCEEDED, a reset connection to the model's host - and the agent says so, or its
answer shows it:

- a stdio agent's error message names it in its optional ``unavailable`` field (the ADK
  bridge and evalcheck-adk-ts set it from their SDKs' error types; docs/agent-protocol.md);
- an error message of an agent that does not set the field, and the log of an ADK API server
  (whose answer to a model's exception is a bare HTTP 500), are read for google-genai's own
  words ("429 RESOURCE_EXHAUSTED. {...}"), case-sensitive, so an agent's prose does not match;
- an ADK event whose ``errorCode`` is such a status (@google/adk makes an event of a model's
  error instead of raising it), and an agent server's own 429 or 503.

The delay the service asked for (``Retry-After``, google.rpc.RetryInfo's ``retryDelay``) is
kept: the run is tried again after it (agents/service_wait.py).
"""

from __future__ import annotations

import re
from email.utils import parsedate_to_datetime
from typing import Any

from ..models.refusal import RefusalKind, ServiceRefusal, refusal_kind

__all__ = ["ServiceRefusal", "refusal_in_events", "refusal_in_text",
           "refusal_of_protocol", "refusal_of_status", "retry_after_header"]

MAX_MESSAGE = 300
# A delay asked for beyond this is taken as this (a day-long Retry-After is an outage: the
# run's bound on waiting, --max-service-wait, decides then).
MAX_RETRY_AFTER = 3600.0


def _delay(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value \
            or value < 0:
        return None
    return min(float(value), MAX_RETRY_AFTER)


def refusal_of_status(status: int | None, name: str | None = None, message: str = "",
                      retry_after: float | None = None) -> ServiceRefusal | None:
    """The refusal an HTTP status and/or google.rpc status name stands for, or None."""
    found = refusal_kind(status, name)
    if found is None:
        return None
    kind, code = found
    return ServiceRefusal(kind=kind, code=code, retry_after=_delay(retry_after),
                          message=message[:MAX_MESSAGE])


def retry_after_header(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header: a number of seconds, or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return _delay(float(value))
    except ValueError:
        pass
    try:
        import datetime

        when = parsedate_to_datetime(value)
        now = datetime.datetime.now(when.tzinfo or datetime.UTC)
        return _delay(max(0.0, (when - now).total_seconds()))
    except (TypeError, ValueError, IndexError):
        return None


_DURATION = re.compile(r"^(\d+(?:\.\d+)?)s$")


def retry_info_delay(details: Any) -> float | None:
    """google.rpc.RetryInfo's ``retryDelay`` ("2s", "0.5s") in an error body's ``details``."""
    for item in details if isinstance(details, list) else []:
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("google.rpc.RetryInfo"):
            found = _DURATION.match(str(item.get("retryDelay", "")).strip())
            if found:
                return _delay(float(found.group(1)))
    return None


def refusal_of_protocol(value: Any, message: str) -> ServiceRefusal | None:
    """The ``unavailable`` field of a stdio agent's error message: ``true``, or an object
    with an optional ``code`` ("429 RESOURCE_EXHAUSTED", "503", 429, "UNAVAILABLE",
    "connection") and ``retryAfter`` (seconds). Validated by protocol.py; None for false."""
    if value is False or value is None:
        return None
    given = value if isinstance(value, dict) else {}
    code = given.get("code")
    retry_after = _delay(given.get("retryAfter", given.get("retry_after")))
    text = str(code).strip() if code is not None else ""
    head, _, rest = text.partition(" ")
    status = int(head) if head.isdigit() else None
    name = (rest.strip() or None) if status is not None else (text or None)
    found = refusal_of_status(status, name, message, retry_after)
    if found is not None:
        return found
    kind: RefusalKind = "connection" if text.lower() == "connection" else "unavailable"
    return ServiceRefusal(kind=kind, code=text[:60] or "unavailable", retry_after=retry_after,
                          message=message[:MAX_MESSAGE])


# google-genai (Python): str(APIError) is "{code} {status}. {details}"; ADK's
# _ResourceExhaustedError adds a paragraph before it. Its status is the body's google.rpc
# name, or the HTTP reason phrase when the body was not JSON.
_GENAI_TEXT = re.compile(
    r"(?<![\w.])(429|50[0234]) (RESOURCE_EXHAUSTED|UNAVAILABLE|INTERNAL|DEADLINE_EXCEEDED|"
    r"Too Many Requests|Internal Server Error|Bad Gateway|Service Unavailable|Gateway Timeout)"
    r"\. ")
# @google/genai (TypeScript): the message is the error body as JSON ("got status: ..." for a
# stream); a Python repr of the body when printed from a dict.
_BODY_STATUS = re.compile(r"""["']status["']: ?["'](RESOURCE_EXHAUSTED|UNAVAILABLE|INTERNAL|"""
                          r"""DEADLINE_EXCEEDED)["']""")
_BODY_CODE = re.compile(r"""["']code["']: ?(429|50[0234])\b""")
# LiteLLM's and the OpenAI/Anthropic SDKs' exception types (ADK's LiteLlm models).
_SDK_TYPES = re.compile(r"\b(?:litellm|openai|anthropic)\.(?:exceptions\.)?(RateLimitError|"
                        r"ServiceUnavailableError|InternalServerError|APITimeoutError|Timeout)\b")
_SDK_STATUS = {"RateLimitError": 429, "ServiceUnavailableError": 503, "InternalServerError": 500,
               "APITimeoutError": 504, "Timeout": 504}
_RETRY_DELAY = re.compile(r"""["']retryDelay["']: ?["'](\d+(?:\.\d+)?)s["']""")


def refusal_in_text(text: str | None) -> ServiceRefusal | None:
    """The refusal a model SDK's error text shows (an agent's error message, a line of an
    agent server's log), or None."""
    if not text:
        return None
    delay_found = _RETRY_DELAY.search(text)
    delay = float(delay_found.group(1)) if delay_found else None
    message = " ".join(text.split())
    found = _GENAI_TEXT.search(text)
    if found:
        name = found.group(2) if found.group(2).isupper() else None
        return refusal_of_status(int(found.group(1)), name, message, delay)
    status = _BODY_STATUS.search(text)
    if status:
        code = _BODY_CODE.search(text)
        return refusal_of_status(int(code.group(1)) if code else None,
                                 None if code else status.group(1), message, delay)
    sdk = _SDK_TYPES.search(text)
    if sdk:
        return refusal_of_status(_SDK_STATUS[sdk.group(1)], None, message, delay)
    return None


def refusal_in_events(events: Any) -> ServiceRefusal | None:
    """An ADK event of a model's error (``errorCode`` "429", "503", "RESOURCE_EXHAUSTED",
    ...) among a turn's events: @google/adk answers a refused model call so, with no content."""
    for event in events if isinstance(events, list) else []:
        if not isinstance(event, dict):
            continue
        code = event.get("errorCode", event.get("error_code"))
        if code is None or event.get("content"):
            continue
        text = str(code).strip()
        message = str(event.get("errorMessage", event.get("error_message")) or "")
        found = (refusal_of_status(int(text), None, message) if text.isdigit()
                 else refusal_of_status(None, text, message))
        if found is not None:
            return found
    return None
