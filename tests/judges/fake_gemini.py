"""A fake Gemini API on 127.0.0.1: real HTTP, scripted answers, every request recorded.

It answers ``POST /v1beta/models/{model}:generateContent`` (what google-genai sends in Gemini
API mode) and ``POST /v1beta1/projects/{p}/locations/{l}/publishers/google/models/{model}:
generateContent`` (Vertex AI mode, ``GOOGLE_GENAI_USE_VERTEXAI=true``), which must carry
``Authorization: Bearer {VERTEX_TOKEN}`` as application default credentials would give. A test adds rules: the first rule whose ``match`` text occurs in the request's
prompt answers it with the next reply of its script (the last reply repeats when the script
runs out). A request no rule matches gets an HTTP error naming the problem, so a test can
never pass on an answer it did not script; so does a body google-genai's types reject.

Used by the tests and by bench/bench_judges.py.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_PATH = re.compile(r"^/v1beta/models/(?P<model>[^/:]+):generateContent$")
_VERTEX_PATH = re.compile(r"^/v1beta1/projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)"
                          r"/publishers/google/models/(?P<model>[^/:]+):generateContent$")
VERTEX_TOKEN = "fake-vertex-access-token"


def body_problem(body: Any) -> str | None:
    """What is wrong with a generateContent request body, checked against google-genai's own
    types (unknown or misspelt fields are refused, as the API refuses them); None if fine."""
    from google.genai import types
    from pydantic import TypeAdapter, ValidationError

    if not isinstance(body, dict):
        return "the body is not a JSON object"
    fields = {"contents": list[types.Content], "systemInstruction": types.Content,
              "generationConfig": types.GenerationConfig, "safetySettings": list[types.SafetySetting],
              "tools": list[types.Tool], "toolConfig": types.ToolConfig, "cachedContent": str,
              "labels": dict[str, str]}
    unknown = sorted(set(body) - set(fields))
    if unknown:
        return f"unknown field(s) {unknown} in the request"
    if not body.get("contents"):
        return "contents is required"
    for name, value in body.items():
        try:
            TypeAdapter(fields[name]).validate_python(value)
        except ValidationError as exc:
            return f"{name} does not match google-genai's types: {exc}"
    return None


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


def json_reply(answer: Any, *, prompt_tokens: int = 100, output_tokens: int = 20,
               delay: float = 0.0, finish_reason: str = "STOP") -> Reply:
    """A successful generateContent answer whose text is ``answer`` (JSON-encoded unless str)."""
    text = answer if isinstance(answer, str) else json.dumps(answer)
    body = {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                            "finishReason": finish_reason, "index": 0}],
            "usageMetadata": {"promptTokenCount": prompt_tokens,
                              "candidatesTokenCount": output_tokens,
                              "totalTokenCount": prompt_tokens + output_tokens},
            "modelVersion": "fake"}
    return Reply(body=json.dumps(body).encode(), headers={"Content-Type": "application/json"},
                 delay=delay)


def empty_reply() -> Reply:
    """A 200 answer with no candidate text (what a safety block looks like)."""
    body = {"candidates": [{"finishReason": "SAFETY", "index": 0}],
            "usageMetadata": {"promptTokenCount": 100, "totalTokenCount": 100}}
    return Reply(body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})


def thought_reply(thought: str = "Let me think.", text: str = "") -> Reply:
    """An answer whose first part is a thought (``"thought": true``), then ``text`` if any:
    a thinking model that produced only thoughts when ``text`` is empty."""
    parts: list[dict[str, Any]] = [{"text": thought, "thought": True}]
    if text:
        parts.append({"text": text})
    body = {"candidates": [{"content": {"role": "model", "parts": parts},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 5,
                              "thoughtsTokenCount": 30, "totalTokenCount": 135}}
    return Reply(body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})


def error_reply(status: int, message: str = "fake error", *, retry_after: str | None = None,
                delay: float = 0.0) -> Reply:
    names = {408: "DEADLINE_EXCEEDED", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL",
             503: "UNAVAILABLE", 400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED"}
    body = {"error": {"code": status, "message": message, "status": names.get(status, "UNKNOWN")}}
    headers = {"Content-Type": "application/json"}
    if retry_after is not None:
        headers["Retry-After"] = retry_after
    return Reply(status=status, body=json.dumps(body).encode(), headers=headers, delay=delay)


def verdict(valid: bool, reasoning: str = "because") -> Reply:
    """A final_response_match_v2 answer."""
    return json_reply({"reasoning": reasoning, "verdict": "valid" if valid else "invalid"})


def rubric_verdicts(verdicts: dict[str, bool], rationale: str = "checked") -> Reply:
    """A rubric answer: {rubric_id: yes?}."""
    return json_reply({"verdicts": [{"rubric_id": rid, "evidence": "ev", "rationale": rationale,
                                     "verdict": "yes" if ok else "no"}
                                    for rid, ok in verdicts.items()]})


def sentences(items: Sequence[str]) -> Reply:
    return json_reply({"sentences": list(items)})


def labels(items: Sequence[str]) -> Reply:
    return json_reply({"labels": [{"index": i, "label": label, "rationale": "r",
                                   "supporting_excerpt": "", "contradicting_excerpt": ""}
                                  for i, label in enumerate(items, 1)]})


@dataclass
class Recorded:
    model: str
    body: dict[str, Any]
    headers: dict[str, str]
    received: float
    vertex: tuple[str, str] | None = None  # (project, location) of a Vertex AI request

    @property
    def prompt(self) -> str:
        return "".join(p.get("text", "") for c in self.body.get("contents", [])
                       for p in c.get("parts", []))

    @property
    def generation_config(self) -> dict[str, Any]:
        return self.body.get("generationConfig", {})


class _Rule:
    def __init__(self, match: str | Callable[[str], bool], script: Sequence[Reply]):
        self.match = match
        self.script = list(script)
        self.used = 0

    def matches(self, prompt: str) -> bool:
        return self.match(prompt) if callable(self.match) else self.match in prompt

    def next(self) -> Reply:
        reply = self.script[min(self.used, len(self.script) - 1)]
        self.used += 1
        return reply


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512  # listen() backlog: the default 5 drops bursts of connections


class FakeGemini:
    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._rules: list[_Rule] = []
        self._lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # else headers + body pay a 40 ms delayed-ACK stall

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:  # noqa: N802 - counters, for a server in another process
                if self.path != "/stats":
                    return self._send(error_reply(404, f"unknown path {self.path}"))
                with outer._lock:
                    stats = {"requests": len(outer.requests), "max_in_flight": outer.max_in_flight}
                self._send(Reply(body=json.dumps(stats).encode(),
                                 headers={"Content-Type": "application/json"}))

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                path = self.path.split("?", 1)[0]
                found = _PATH.match(path) or _VERTEX_PATH.match(path)
                if not found:
                    return self._send(error_reply(404, f"unknown path {self.path}"))
                vertex = None
                if "project" in found.groupdict():
                    vertex = (found.group("project"), found.group("location"))
                    if self.headers.get("Authorization") != f"Bearer {VERTEX_TOKEN}":
                        return self._send(error_reply(401, "fake_gemini: Vertex AI needs the "
                                                           "access token of the credentials"))
                try:
                    body = json.loads(raw)
                except ValueError:
                    return self._send(error_reply(400, "request body is not JSON"))
                problem = body_problem(body)
                if problem:
                    return self._send(error_reply(400, "fake_gemini: " + problem))
                record = Recorded(found.group("model"), body, dict(self.headers), time.monotonic(),
                                  vertex)
                with outer._lock:
                    outer.requests.append(record)
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                    reply = outer._answer(record.prompt)
                try:
                    if reply.delay:
                        time.sleep(reply.delay)
                    self._send(reply)
                finally:
                    with outer._lock:
                        outer.in_flight -= 1

            def _send(self, reply: Reply) -> None:
                self.send_response(reply.status)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                try:
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    pass

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def on(self, match: str | Callable[[str], bool], *script: Reply) -> FakeGemini:
        """Answer prompts containing ``match`` (or for which it returns True) with ``script``."""
        if not script:
            raise ValueError("a rule needs at least one reply")
        with self._lock:
            self._rules.append(_Rule(match, script))
        return self

    def reset(self) -> None:
        with self._lock:
            self._rules.clear()
            self.requests.clear()
            self.max_in_flight = 0

    def _answer(self, prompt: str) -> Reply:
        for rule in self._rules:
            if rule.matches(prompt):
                return rule.next()
        return error_reply(400, "fake_gemini: no rule matches this prompt: " + prompt[-300:])

    def start(self) -> FakeGemini:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def serve_forever(self) -> None:
        """Serve in the calling thread (for a server in its own process)."""
        self._server.serve_forever(poll_interval=0.05)

    def __enter__(self) -> FakeGemini:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
