"""A refusal by the model service: what ended a run that was not the agent's failure.

A run that ended because the agent's model service refused or failed - 429
RESOURCE_EXHAUSTED, 503 UNAVAILABLE, 500 INTERNAL, 504 DEADLINE_EXCEEDED, a reset
connection to the model's host - is *unavailable*: it is run again after a backoff, and it is
never counted as a failing run (CONTRACT section 11). Here, below every stage, so that recorded
runs and results can hold it; the agents' side (checker/agents/service_refusal.py) tells
refusals from the agent's own errors. Pure.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict
from pydantic.alias_generators import to_camel
from pydantic.dataclasses import dataclass

RefusalKind = Literal["rate_limited", "unavailable", "internal", "deadline", "connection"]

# The HTTP statuses and google.rpc status names of a model service that refused or failed a
# call, and the kind of refusal each is. 502 (a proxy in front of the service) is ADK's and
# google-genai's retriable status too.
_BY_STATUS: dict[int, tuple[RefusalKind, str]] = {
    429: ("rate_limited", "RESOURCE_EXHAUSTED"),
    500: ("internal", "INTERNAL"),
    502: ("unavailable", "BAD_GATEWAY"),
    503: ("unavailable", "UNAVAILABLE"),
    504: ("deadline", "DEADLINE_EXCEEDED"),
}
_BY_NAME: dict[str, tuple[RefusalKind, int]] = {
    name: (kind, status) for status, (kind, name) in _BY_STATUS.items()}


@dataclass(frozen=True, config=ConfigDict(alias_generator=to_camel, populate_by_name=True,
                                          serialize_by_alias=True))
class ServiceRefusal:
    """What the model service answered: ``code`` as the service said it ("429
    RESOURCE_EXHAUSTED", "503 UNAVAILABLE", "connection"), the delay it asked for
    (``Retry-After`` or google.rpc.RetryInfo; None when it gave none) and its message (short)."""

    kind: RefusalKind
    code: str
    retry_after: float | None = None
    message: str = ""


def refusal_kind(status: int | None = None, name: str | None = None) -> tuple[RefusalKind, str] | None:
    """The kind and code ("429 RESOURCE_EXHAUSTED") of an HTTP status and/or a google.rpc
    status name that means the model service refused or failed the call; None for any other
    (a 400 INVALID_ARGUMENT or 403 PERMISSION_DENIED is the agent's or its setup's)."""
    if status is not None and status in _BY_STATUS:
        kind, known = _BY_STATUS[status]
        return kind, f"{status} {name if name in _BY_NAME else known}"
    if status is None and name is not None and name.upper() in _BY_NAME:
        kind, number = _BY_NAME[name.upper()]
        return kind, f"{number} {name.upper()}"
    return None
