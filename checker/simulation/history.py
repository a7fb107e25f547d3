"""The conversation so far, as the simulated user reads it (ADK's ``_summarize_conversation``).

ADK summarizes the session's events: every non-thought text part becomes
``<author>: <text>``; with ``include_function_calls`` a call becomes
``<author> called tool '<name>' with args: <args>`` and a response
``Tool '<name>' returned: <response>``; the lines are joined by blank lines. We rebuild the
same lines from the recorded invocations. Events recorded by ADK (the bridge, the API
server, an agent sending ``events``) keep their authors and order; an agent answering with
the plain protocol fields names no authors, so its lines say ``agent``.
"""

from __future__ import annotations

from ..models.evalset import Content, IntermediateData, Invocation, InvocationEvents, Part

UNNAMED_AGENT = "agent"


def _part_line(author: str, part: Part, include_function_calls: bool) -> str | None:
    if part.text and not part.thought:
        return f"{author}: {part.text}"
    if include_function_calls and part.function_call is not None:
        # Python's repr of the args dict, as ADK formats them.
        return f"{author} called tool '{part.function_call.name}' with args: {part.function_call.args}"
    if include_function_calls and part.function_response is not None:
        return (f"Tool '{part.function_response.name}' returned: "
                f"{part.function_response.response}")
    return None


def _content_lines(author: str, content: Content | None, include_function_calls: bool) -> list[str]:
    if content is None:
        return []
    lines = (_part_line(author, p, include_function_calls) for p in content.parts)
    return [line for line in lines if line is not None]


def _invocation_lines(inv: Invocation, include_function_calls: bool) -> list[str]:
    lines = _content_lines("user", inv.user_content, include_function_calls)
    data = inv.intermediate_data
    if isinstance(data, InvocationEvents):
        events = data.invocation_events
        # ADK empties the chosen final event's content (its text is final_response); the
        # final text goes where that event was, under its author.
        final_at = max((k for k, e in enumerate(events)
                        if e.content is None and e.grounding_metadata is None), default=None)
        for k, event in enumerate(events):
            if k == final_at:
                lines += _content_lines(event.author, inv.final_response, include_function_calls)
            else:
                lines += _content_lines(event.author, event.content, include_function_calls)
        if final_at is None:
            author = events[-1].author if events else UNNAMED_AGENT
            lines += _content_lines(author, inv.final_response, include_function_calls)
        return lines
    author = UNNAMED_AGENT
    if isinstance(data, IntermediateData):  # an eval set's static format: no order, no authors
        authors = {name for name, _ in data.intermediate_responses}
        if len(authors) == 1:
            author = next(iter(authors))
        for name, parts in data.intermediate_responses:
            lines += _content_lines(name, Content(parts=parts), include_function_calls)
        if include_function_calls:
            lines += [_part_line(author, Part(function_call=c), True) or "" for c in data.tool_uses]
            lines += [_part_line(author, Part(function_response=r), True) or ""
                      for r in data.tool_responses]
    return lines + _content_lines(author, inv.final_response, include_function_calls)


def conversation_history(invocations: list[Invocation], include_function_calls: bool = False) -> str:
    """Every invocation's lines, joined by blank lines."""
    lines: list[str] = []
    for inv in invocations:
        lines += _invocation_lines(inv, include_function_calls)
    return "\n\n".join(lines)
