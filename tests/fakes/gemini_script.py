"""What the fake Gemini API (gemini_api.py) answers: rules that read a request as the agent's
model would, so that an ordinary ADK agent with tools and sub-agents runs against it.

A rule matches on the user's last words (a regular expression whose named groups fill the
reply's ``{placeholders}``), on which agent asks (text of its system instruction), on whether
the request ends with a function response (and of which function), and on the functions it
declares. The first rule that matches answers with text and/or function calls. Rules are
plain data (JSON both ways), so a server in another process is scripted the same way.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

# ADK hands another agent's turns to the agent it transferred to as user text starting so:
# those are not the user's words.
_CONTEXT_PREFIX = "For context:"


@dataclass(frozen=True)
class ModelRequest:
    """One generateContent request, read as the model sees it."""

    model: str
    body: dict[str, Any]
    stream: bool = False

    @property
    def contents(self) -> list[dict[str, Any]]:
        contents = self.body.get("contents") or []
        return [c for c in contents if isinstance(c, dict)]

    @property
    def user_text(self) -> str:
        """The user's last words (ADK's "For context:" texts of other agents skipped)."""
        for content in reversed(self.contents):
            if content.get("role", "user") != "user":
                continue
            texts = [p["text"] for p in content.get("parts") or []
                     if isinstance(p, dict) and isinstance(p.get("text"), str)]
            text = "".join(texts).strip()
            if text and not text.startswith(_CONTEXT_PREFIX):
                return text
        return ""

    @property
    def function_response(self) -> tuple[str, dict[str, Any]] | None:
        """The last function response, when the request ends with one: (name, response)."""
        if not self.contents:
            return None
        for part in reversed(self.contents[-1].get("parts") or []):
            response = part.get("functionResponse") if isinstance(part, dict) else None
            if isinstance(response, dict):
                value = response.get("response")
                return str(response.get("name", "")), value if isinstance(value, dict) else {}
        return None

    @property
    def system(self) -> str:
        instruction = self.body.get("systemInstruction") or {}
        return "".join(p.get("text", "") for p in instruction.get("parts") or []
                       if isinstance(p, dict))

    @property
    def declared(self) -> frozenset[str]:
        return frozenset(d.get("name", "") for tool in self.body.get("tools") or []
                         for d in tool.get("functionDeclarations") or [])


@dataclass(frozen=True)
class Call:
    """A function call the model answers with; string args may hold ``{placeholders}``."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)


class _Fill(dict):
    def __missing__(self, key: str) -> str:  # an unknown placeholder stays as written
        return "{" + key + "}"


def _filled(value: Any, values: _Fill) -> Any:
    if isinstance(value, str):
        return value.format_map(values)
    if isinstance(value, dict):
        return {k: _filled(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_filled(v, values) for v in value]
    return value


@dataclass(frozen=True)
class Rule:
    """When a request matches every given condition, answer ``reply`` and/or ``calls``.

    ``after``: None matches any request; "" one that does not end with a function response;
    "*" one that does; a name, one ending with that function's response. Placeholders are
    the named groups of ``text`` and the top-level keys of the last function response."""

    text: str | None = None
    agent: str | None = None
    after: str | None = None
    declares: str | None = None
    reply: str | None = None
    calls: tuple[Call, ...] = ()

    def __post_init__(self) -> None:
        if self.reply is None and not self.calls:
            raise ValueError("a rule answers text (reply) or function calls (calls), or both")
        if self.text is not None:
            re.compile(self.text)

    def match(self, request: ModelRequest) -> _Fill | None:
        values = _Fill()
        if self.text is not None:
            found = re.search(self.text, request.user_text, re.IGNORECASE)
            if found is None:
                return None
            values.update({k: v for k, v in found.groupdict().items() if v is not None})
        if self.agent is not None and self.agent not in request.system:
            return None
        if self.declares is not None and self.declares not in request.declared:
            return None
        response = request.function_response
        if self.after is not None:
            if self.after == "" and response is not None:
                return None
            if self.after == "*" and response is None:
                return None
            if self.after not in ("", "*") and (response is None or response[0] != self.after):
                return None
        if response is not None:
            values.update({k: v if isinstance(v, str) else json.dumps(v)
                           for k, v in response[1].items() if k not in values})
        return values

    def parts(self, values: _Fill) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        if self.reply is not None:
            parts.append({"text": self.reply.format_map(values)})
        parts += [{"functionCall": {"name": c.name, "args": _filled(c.args, values)}}
                  for c in self.calls]
        return parts

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "agent": self.agent, "after": self.after,
                "declares": self.declares, "reply": self.reply,
                "calls": [{"name": c.name, "args": c.args} for c in self.calls]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Rule:
        calls = tuple(Call(c["name"], dict(c.get("args") or {})) for c in data.get("calls") or [])
        return cls(text=data.get("text"), agent=data.get("agent"), after=data.get("after"),
                   declares=data.get("declares"), reply=data.get("reply"), calls=calls)


def answer_parts(rules: tuple[Rule, ...], request: ModelRequest) -> list[dict[str, Any]] | None:
    """The parts the first matching rule answers; None when no rule matches."""
    for rule in rules:
        values = rule.match(request)
        if values is not None:
            return rule.parts(values)
    return None


def response_body(request: ModelRequest, parts: list[dict[str, Any]]) -> dict[str, Any]:
    """A generateContent response as Gemini writes it, with token counts that follow the
    sizes of the request and the answer (about 4 characters a token)."""
    prompt_tokens = max(1, len(json.dumps(request.body)) // 4)
    output_tokens = max(1, len(json.dumps(parts)) // 4)
    return {"candidates": [{"content": {"role": "model", "parts": parts},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": prompt_tokens,
                              "candidatesTokenCount": output_tokens,
                              "totalTokenCount": prompt_tokens + output_tokens},
            "modelVersion": request.model}
