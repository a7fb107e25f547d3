"""The agent stdio protocol, version 1 (CONTRACT section 5): messages both ways, what a
reader queues for a line that cannot be a message, and a response as an Invocation."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import Field, ValidationError

from ..errors import json_path
from ..models.base import StrictModel
from ..models.evalset import Content, FunctionCall, FunctionResponse, Part
from ..models.refusal import ServiceRefusal
from .events import events_to_invocation, fields_to_invocation
from .service_refusal import refusal_in_events, refusal_in_text, refusal_of_protocol

PROTOCOL_VERSION = 1


class ProtocolError(ValueError):
    """A JSON object on the agent's stdout that is not a valid protocol message."""


class ResponseMessage(StrictModel):
    type: Literal["response"]
    invocation_id: str
    final_response: Content | str | None = None
    tool_uses: list[FunctionCall] = Field(default_factory=list)
    tool_responses: list[FunctionResponse] = Field(default_factory=list)
    # IntermediateData's shape, [author, parts], or just a text.
    intermediate_responses: list[tuple[str, list[Part]] | str] = Field(default_factory=list)
    usage: dict[str, Any] | list[dict[str, Any]] | None = None
    events: list[Any] | None = None


class Unavailable(StrictModel):
    """What a model service's refusal was (docs/agent-protocol.md): its code as the service
    gave it ("429 RESOURCE_EXHAUSTED", "503", "UNAVAILABLE", "connection") and the delay it
    asked for, in seconds."""

    code: str | int | None = None
    retry_after: float | None = Field(default=None, ge=0)


class ErrorMessage(StrictModel):
    type: Literal["error"]
    message: str = ""
    invocation_id: str | None = None
    # An addition to protocol 1: the run failed because the agent's model service refused or
    # failed the call, not by the agent's fault (true, or what the service said).
    unavailable: bool | Unavailable | None = None

    def refusal(self) -> ServiceRefusal | None:
        """The model service's refusal this error reports: the ``unavailable`` field, else
        a model SDK's own words in the message (an agent that does not set the field)."""
        if self.unavailable is False:
            return None
        if self.unavailable is not None:
            given = (self.unavailable.model_dump(by_alias=True, exclude_none=True)
                     if isinstance(self.unavailable, Unavailable) else True)
            return refusal_of_protocol(given, self.message)
        return refusal_in_text(self.message)


def response_refusal(message: ResponseMessage) -> ServiceRefusal | None:
    """A model's refusal among a response's ADK events (@google/adk answers a refused model
    call with an event carrying its error code, not with an exception)."""
    return refusal_in_events(message.events) if message.events is not None else None


def refused_turn(turn: int, refusal: ServiceRefusal) -> str:
    """A run's error when the model service refused its turn."""
    after = f", retry after {refusal.retry_after:g} s" if refusal.retry_after is not None else ""
    said = f": {refusal.message[:200]}" if refusal.message else ""
    return f"the model service refused turn {turn} ({refusal.code}{after}){said}"


_EXPLICIT = ("final_response", "tool_uses", "tool_responses", "intermediate_responses", "usage")


def parse_message(obj: dict[str, Any]) -> ResponseMessage | ErrorMessage:
    kind = obj.get("type")
    model: type[ResponseMessage] | type[ErrorMessage]
    if kind == "response":
        model = ResponseMessage
    elif kind == "error":
        model = ErrorMessage
    else:
        raise ProtocolError(f"$.type: expected \"response\" or \"error\", got {json.dumps(kind)[:40]}")
    try:
        message = model.model_validate(obj)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ProtocolError(f"{json_path(err['loc'])}: {err['msg']}") from None
    if isinstance(message, ResponseMessage) and message.events is not None:
        given = [name for name in _EXPLICIT if name in message.model_fields_set]
        if given:
            raise ProtocolError(f"$.events: a response carries either events or {given[0]}, not both")
    return message


class RefusedMessage(StrictModel):
    """An addition to protocol 1, sent only to an evalcheck whose ``start`` carried
    ``"tellRefusals": true``: the agent's model service refused a call that the agent retries
    itself (the ADK bridge does, honouring the service's RetryInfo), so the run goes on. Told
    at once, so that the run's concurrency limiter cuts the runs in flight before more are
    refused (docs/agent-protocol.md)."""

    type: Literal["refused"]
    unavailable: bool | Unavailable = True


def told_refusal(item: Any) -> ServiceRefusal | None:
    """The refusal a ``{"type": "refused"}`` message tells, else None (any other item). A
    message of that type that is not valid tells an unknown refusal: it is never a run's
    answer, and a miscounted refusal only slows the run down."""
    if not isinstance(item, dict) or item.get("type") != "refused":
        return None
    fields = {k: v for k, v in item.items() if k not in ("session", "invocationId", "paced")}
    try:
        message = RefusedMessage.model_validate(fields)
    except ValidationError:
        return refusal_of_protocol(True, "")
    given = (message.unavailable.model_dump(by_alias=True, exclude_none=True)
             if isinstance(message.unavailable, Unavailable) else True)
    return refusal_of_protocol(given, "")


def told_paced(item: Any) -> bool:
    """Whether a ``{"type": "refused"}`` message says the agent paces the refused model's
    calls to the quota the refusal stated (``"paced": true``, an addition; the ADK bridge),
    so more runs at once send it no more calls. Read apart from the refusal: a bad value
    leaves the refusal as told, unpaced."""
    return isinstance(item, dict) and item.get("paced") is True


def dumps(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def start_message(*, eval_set_id: str, eval_id: str, run: int, app_name: str, user_id: str,
                  state: dict[str, Any], session_id: str | None = None,
                  eval_set_path: str | None = None, concurrent: int | None = None,
                  tell_refusals: bool = False) -> dict[str, Any]:
    """``session_id``: the run's id, which a process serving concurrent sessions names in
    every message of the run (``session.id`` here, ``session`` in the others);
    ``eval_set_path``: the eval file, relative to the agent's working directory;
    ``concurrent``: the most runs evalcheck may have in flight, which an agent serving
    concurrent sessions may serve at once in one process (its ready says how many it will);
    ``tell_refusals``: the agent may send ``{"type": "refused"}`` for each model call refused
    that it retries itself (``"tellRefusals": true``)."""
    session: dict[str, Any] = {"appName": app_name, "userId": user_id, "state": state}
    if session_id is not None:
        session["id"] = session_id
    message = {"type": "start", "protocol": PROTOCOL_VERSION, "evalSetId": eval_set_id,
               "evalId": eval_id, "run": run, "session": session}
    if eval_set_path is not None:
        message["evalSetPath"] = eval_set_path
    if concurrent is not None:
        message["concurrent"] = concurrent
    if tell_refusals:
        message["tellRefusals"] = True
    return message


def end_message(session_id: str | None = None) -> dict[str, Any]:
    """Closes a run in a warm worker (one that announced ``"sessions": "many"``)."""
    return {"type": "end"} if session_id is None else {"type": "end", "session": session_id}


def user_message(invocation_id: str, content: Content,
                 session_id: str | None = None) -> dict[str, Any]:
    message = {"type": "user", "invocationId": invocation_id,
               "content": content.model_dump(mode="json", by_alias=True, exclude_none=True)}
    if session_id is not None:
        message["session"] = session_id
    return message


EOF_MARK = object()  # what a reader queues when the agent's stdout ends


class BadLine:
    """A stdout line that is meant as a message but cannot be one."""

    def __init__(self, reason: str):
        self.reason = reason


def is_ready(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") == "ready"


def serves_any_eval_set(item: Any) -> bool:
    """A ``ready`` with ``"evalSets": "any"``: the process reads the eval set of each run from
    its start message, not from the environment it was started with, so it may serve runs of
    every eval set (else it serves only the eval set it was started for)."""
    return is_ready(item) and item.get("evalSets") == "any"


def concurrent_sessions(item: Any) -> int | None:
    """N of a ``{"type": "ready", "sessions": "many", "concurrent": N}`` (N >= 1), else None."""
    if not is_ready(item) or item.get("sessions") != "many":
        return None
    n = item.get("concurrent")
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 1 else None


def to_invocation(message: ResponseMessage, invocation_id: str, user_content: Any,
                  duration: float, created: float) -> Any:
    if message.events is not None:
        return events_to_invocation(message.events, invocation_id=invocation_id,
                                    user_content=user_content, duration=duration,
                                    creation_timestamp=created)
    return fields_to_invocation(invocation_id=invocation_id, user_content=user_content,
                                final_response=message.final_response,
                                tool_uses=message.tool_uses, tool_responses=message.tool_responses,
                                intermediate_responses=message.intermediate_responses,
                                usage=message.usage, duration=duration, creation_timestamp=created)
