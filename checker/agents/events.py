"""Agent output -> Invocation, the way ADK's inference builds it (reference section 6.1).

Shared by the stdio runner (``events`` replies and the explicit fields), the ADK bridge's
replies and the API-server runner. One user turn always becomes exactly one invocation: the
events of a turn are folded together even if they carry several invocation ids, and a turn
with no events gives an invocation without a final response (ADK drops such a turn and then
aborts on the length mismatch; reference section 8 item 15).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import json_path
from ..models.evalset import (
    Blob,
    Content,
    FunctionCall,
    FunctionResponse,
    Invocation,
    InvocationEvent,
    InvocationEvents,
    Part,
    text_content,
)

AGENT_AUTHOR = "agent"  # ADK's author for events that name none


class ConversionError(ValueError):
    """Agent output that cannot become an invocation; the message names the JSON path."""


def _get(data: dict[str, Any], snake: str, default: Any = None) -> Any:
    """A key of ADK JSON, which arrives camelCase from ADK and may be snake_case from others."""
    if snake in data:
        return data[snake]
    head, *rest = snake.split("_")
    camel = head + "".join(w.title() for w in rest)
    return data.get(camel, default)


def _known_keys(model: type[BaseModel], data: dict[str, Any]) -> dict[str, Any]:
    names = {}
    for name, field in model.model_fields.items():
        names[name] = name
        if field.alias:
            names[field.alias] = name
    return {names[k]: v for k, v in data.items() if k in names and v is not None}


_NESTED_PART_FIELDS: dict[str, type[BaseModel]] = {
    "function_call": FunctionCall, "function_response": FunctionResponse, "inline_data": Blob}


def _lenient_content(raw: Any, where: str) -> Content | None:
    """An ADK event's content. Keys our model does not know are dropped, not rejected:
    ADK adds Part fields over time and an agent on a newer ADK must not fail for it."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ConversionError(f"{where}: content must be an object")
    parts_raw = _get(raw, "parts") or []
    if not isinstance(parts_raw, list):
        raise ConversionError(f"{where}.parts: must be a list")
    parts = []
    for i, part in enumerate(parts_raw):
        if not isinstance(part, dict):
            raise ConversionError(f"{where}.parts[{i}]: must be an object")
        clean = _known_keys(Part, part)
        for name, model in _NESTED_PART_FIELDS.items():
            if isinstance(clean.get(name), dict):
                clean[name] = _known_keys(model, clean[name])
        try:
            parts.append(Part.model_validate(clean))
        except ValidationError as exc:
            raise ConversionError(_first_error(exc, f"{where}.parts[{i}]")) from None
    role = _get(raw, "role")
    return Content(role=role if isinstance(role, str) else None, parts=parts)


def _first_error(exc: ValidationError, prefix: str = "$") -> str:
    err = exc.errors()[0]
    path = json_path(err["loc"])
    return f"{prefix}{path[1:]}: {err['msg']}"


def _is_final_response(event: dict[str, Any], content: Content) -> bool:
    """ADK's Event.is_final_response()."""
    actions = _get(event, "actions") or {}
    if (isinstance(actions, dict) and _get(actions, "skip_summarization")) \
            or _get(event, "long_running_tool_ids"):
        return True
    has_calls = any(p.function_call for p in content.parts)
    partial = bool(_get(event, "partial"))
    if _get(event, "error_code") and not partial and not has_calls:
        return True
    trailing_code_result = bool(content.parts) and content.parts[-1].code_execution_result is not None
    return (not has_calls and not any(p.function_response for p in content.parts)
            and not partial and not trailing_code_result)


def _dict_or_none(value: Any, where: str) -> dict[str, Any] | None:
    if value is None or isinstance(value, dict):
        return value
    raise ConversionError(f"{where}: must be an object")


def events_to_invocation(events: Any, *, invocation_id: str, user_content: Content,
                         duration: float | None = None, creation_timestamp: float = 0.0,
                         where: str = "$.events") -> Invocation:
    """Fold one turn's ADK events (JSON objects) into an Invocation as ADK does."""
    if not isinstance(events, list):
        raise ConversionError(f"{where}: must be a list of ADK events")
    final: Content | None = None
    final_index: int | None = None
    kept: list[tuple[int, dict[str, Any], Content | None]] = []
    for i, event in enumerate(events):
        at = f"{where}[{i}]"
        if not isinstance(event, dict):
            raise ConversionError(f"{at}: an ADK event must be an object")
        author = _get(event, "author") or AGENT_AUTHOR
        if not isinstance(author, str):
            raise ConversionError(f"{at}.author: must be a string")
        if author.lower() == "user":
            continue  # the user turn is the message we sent, kept as user_content
        content = _lenient_content(_get(event, "content"), f"{at}.content")
        grounding = _dict_or_none(_get(event, "grounding_metadata"), f"{at}.groundingMetadata")
        if content is not None and content.parts:
            if _is_final_response(event, content):
                # As ADK: the last final event wins, but a text-less one (live audio)
                # does not replace one with text.
                final_has_text = final is not None and any(p.text for p in final.parts)
                if not final_has_text or any(p.text for p in content.parts):
                    final, final_index = content, len(kept)
            if grounding is not None or any(p.function_call or p.function_response or p.text
                                            or p.inline_data for p in content.parts):
                kept.append((i, event, content))
            elif final_index == len(kept):
                final_index = None  # the final event itself is not kept
        elif grounding is not None:
            kept.append((i, event, None))
    invocation_events = []
    for k, (i, event, content) in enumerate(kept):
        if k == final_index and content is not None and not any(p.function_call for p in content.parts):
            content = None  # the final text is on final_response; do not count it twice
        invocation_events.append(InvocationEvent(
            author=_get(event, "author") or AGENT_AUTHOR,
            content=content,
            grounding_metadata=_get(event, "grounding_metadata"),
            usage_metadata=_dict_or_none(_get(event, "usage_metadata"), f"{where}[{i}].usageMetadata"),
            model_version=_get(event, "model_version")))
    return Invocation(invocation_id=invocation_id, user_content=user_content,
                      final_response=final,
                      intermediate_data=InvocationEvents(invocation_events=invocation_events),
                      creation_timestamp=creation_timestamp, duration=duration)


def fields_to_invocation(*, invocation_id: str, user_content: Content,
                         final_response: Content | str | None,
                         tool_uses: list[FunctionCall], tool_responses: list[FunctionResponse],
                         intermediate_responses: list[tuple[str, list[Part]] | str],
                         usage: dict[str, Any] | list[dict[str, Any]] | None,
                         duration: float | None = None,
                         creation_timestamp: float = 0.0) -> Invocation:
    """The explicit protocol fields -> an Invocation with InvocationEvents, so that the
    tool, text and usage metrics read them exactly as they read ADK's own inference."""
    events: list[InvocationEvent] = []
    for i, call in enumerate(tool_uses):
        events.append(InvocationEvent(author=AGENT_AUTHOR,
                                      content=Content(role="model", parts=[Part(function_call=call)])))
        # Each response follows its call when the lists pair up, as in an ADK event stream.
        if len(tool_responses) == len(tool_uses):
            events.append(_response_event(tool_responses[i]))
    if len(tool_responses) != len(tool_uses):
        events.extend(_response_event(r) for r in tool_responses)
    for item in intermediate_responses:
        if isinstance(item, str):
            author, parts = AGENT_AUTHOR, [Part(text=item)]
        else:
            author, parts = item
        events.append(InvocationEvent(author=author, content=Content(role="model", parts=parts)))
    usages = usage if isinstance(usage, list) else ([usage] if usage else [])
    for u in usages:
        events.append(InvocationEvent(author=AGENT_AUTHOR, usage_metadata=u))
    final = text_content(final_response, "model") if isinstance(final_response, str) else final_response
    return Invocation(invocation_id=invocation_id, user_content=user_content, final_response=final,
                      intermediate_data=InvocationEvents(invocation_events=events),
                      creation_timestamp=creation_timestamp, duration=duration)


def _response_event(response: FunctionResponse) -> InvocationEvent:
    return InvocationEvent(author=AGENT_AUTHOR,
                           content=Content(role="user", parts=[Part(function_response=response)]))
