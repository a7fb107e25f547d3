"""The agent stdio protocol, version 1 (CONTRACT section 5): messages both ways."""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import Field, ValidationError

from ..errors import json_path
from ..models.base import StrictModel
from ..models.evalset import Content, FunctionCall, FunctionResponse, Part

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


class ErrorMessage(StrictModel):
    type: Literal["error"]
    message: str = ""
    invocation_id: str | None = None


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


def dumps(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def start_message(*, eval_set_id: str, eval_id: str, run: int, app_name: str, user_id: str,
                  state: dict[str, Any], session_id: str | None = None) -> dict[str, Any]:
    """``session_id``: the run's id, which a process serving concurrent sessions names in
    every message of the run (``session.id`` here, ``session`` in the others)."""
    session: dict[str, Any] = {"appName": app_name, "userId": user_id, "state": state}
    if session_id is not None:
        session["id"] = session_id
    return {"type": "start", "protocol": PROTOCOL_VERSION, "evalSetId": eval_set_id,
            "evalId": eval_id, "run": run, "session": session}


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
