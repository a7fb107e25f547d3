"""A fake OpenAI-compatible chat-completions server on 127.0.0.1: real HTTP, scripted
answers, every request recorded, each checked against OpenAI's API shape.

It answers ``POST {prefix}/chat/completions`` for any prefix (``/v1`` as OpenAI's, ``/groq/v1``
standing in for Groq's ``/openai/v1``, Azure OpenAI's ``/openai/deployments/{deployment}``
with ``?api-version=``) and ``POST /v1/messages`` (Anthropic's messages API). A request body
is validated with the openai package's own ``CompletionCreateParams`` type (a field OpenAI's
API does not know, such as ``top_k``, is refused with OpenAI's 400, as the API refuses it);
answers are built with its ``ChatCompletion`` model. A key other than the one given is
refused with OpenAI's 401 body (which, like OpenAI's, quotes the key's ends).

Answers: the first rule whose ``match`` occurs in the prompt (or returns True for the
recorded request) answers with the next reply of its script; with no rule matching, HTTP 400
naming the problem, so that a test never passes on an answer it did not script.
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
from urllib.parse import parse_qs, urlsplit

_CHAT = re.compile(r"^(?P<prefix>/.*)?/chat/completions$")
_AZURE = re.compile(r"^/openai/deployments/(?P<deployment>[^/]+)$")


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


def chat_reply(text: str | None, *, prompt_tokens: int = 100, completion_tokens: int = 20,
               finish_reason: str = "stop", model: str = "fake", delay: float = 0.0) -> Reply:
    """A chat.completion answer whose message content is ``text``, shaped by openai's model."""
    from openai.types.chat import ChatCompletion

    answer = ChatCompletion.model_validate({
        "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
        "model": model, "service_tier": "default", "system_fingerprint": "fp_fake",
        "choices": [{"index": 0, "finish_reason": finish_reason, "logprobs": None,
                     "message": {"role": "assistant", "content": text, "refusal": None}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens}})
    return Reply(body=answer.model_dump_json().encode(),
                 headers={"Content-Type": "application/json"}, delay=delay)


def json_answer(answer: Any, **kwargs: Any) -> Reply:
    return chat_reply(json.dumps(answer), **kwargs)


def anthropic_reply(text: str, *, input_tokens: int = 100, output_tokens: int = 20) -> Reply:
    body = {"id": "msg_fake", "type": "message", "role": "assistant", "model": "fake",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": input_tokens,
                                             "output_tokens": output_tokens}}
    return Reply(body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})


def error(status: int, message: str = "fake error", *, retry_after: str | None = None,
          kind: str = "server_error", code: str | None = None) -> Reply:
    """OpenAI's error body, with a Retry-After header if given."""
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    headers = {"Content-Type": "application/json"}
    if retry_after is not None:
        headers["Retry-After"] = retry_after
    return Reply(status=status, body=json.dumps(body).encode(), headers=headers)


def body_problem(body: Any) -> str | None:
    """What OpenAI's API would refuse in a chat-completions body; None if nothing."""
    import typing

    from openai.types.chat import completion_create_params as params
    from pydantic import TypeAdapter, ValidationError

    if not isinstance(body, dict):
        return "the body is not a JSON object"
    shape = params.CompletionCreateParamsNonStreaming
    known = set(typing.get_type_hints(shape)) | {"stream"}
    unknown = sorted(set(body) - known)
    if unknown:
        return f"Unrecognized request argument supplied: {', '.join(unknown)}"
    try:
        checked = TypeAdapter(shape).validate_python(body)
        list(checked["messages"])  # an Iterable field: validated as it is read
    except (ValidationError, KeyError) as exc:
        return f"the request does not match OpenAI's CompletionCreateParams: {exc}"
    if body.get("stream"):
        return "this fake answers stream=false requests only"
    return None


@dataclass
class Recorded:
    path: str  # without the query
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: dict[str, Any]
    received: float

    @property
    def prompt(self) -> str:
        parts = []
        for message in self.body.get("messages", []):
            content = message.get("content")
            parts.append(content if isinstance(content, str) else "".join(
                p.get("text", "") for p in content or [] if isinstance(p, dict)))
        return "\n".join(parts)

    @property
    def model(self) -> str:
        return str(self.body.get("model"))

    @property
    def deployment(self) -> str | None:
        prefix = self.path.rsplit("/chat/completions", 1)[0]
        found = _AZURE.match(prefix)
        return found.group("deployment") if found else None

    def sampling(self) -> dict[str, Any]:
        """Everything sent beside the model, the messages and the response format."""
        return {k: v for k, v in self.body.items()
                if k not in ("model", "messages", "response_format", "stream")}


class _Rule:
    def __init__(self, match: str | Callable[[Recorded], bool], script: Sequence[Reply]):
        self.match, self.script, self.used = match, list(script), 0

    def matches(self, request: Recorded) -> bool:
        return self.match(request) if callable(self.match) else self.match in request.prompt

    def next(self) -> Reply:
        reply = self.script[min(self.used, len(self.script) - 1)]
        self.used += 1
        return reply


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512


class FakeOpenAI:
    def __init__(self, key: str | None = "test-key") -> None:
        self.key = key
        self.requests: list[Recorded] = []
        self.refused: list[str] = []  # why each body OpenAI's API would refuse was refused
        self._rules: list[_Rule] = []
        self._lock = threading.Lock()
        self.in_flight = self.max_in_flight = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                url = urlsplit(self.path)
                anthropic = url.path == "/v1/messages"
                if not anthropic and not _CHAT.match(url.path):
                    return self._send(error(404, f"unknown path {self.path}", kind="not_found"))
                refused = outer._auth_problem(self.headers, anthropic)
                if refused:
                    return self._send(refused)
                try:
                    body = json.loads(raw)
                except ValueError:
                    return self._send(error(400, "request body is not JSON",
                                            kind="invalid_request_error"))
                problem = _anthropic_problem(body) if anthropic else body_problem(body)
                if problem:
                    with outer._lock:
                        outer.refused.append(problem)
                    return self._send(error(400, "fake_openai: " + problem,
                                            kind="invalid_request_error"))
                record = Recorded(url.path, parse_qs(url.query), dict(self.headers), body,
                                  time.monotonic())
                if not anthropic and record.deployment is not None and "api-version" not in record.query:
                    return self._send(error(404, "Resource not found (no api-version)"))
                with outer._lock:
                    outer.requests.append(record)
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                    reply = outer._answer(record)
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
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)

    def _auth_problem(self, headers: Any, anthropic: bool) -> Reply | None:
        if self.key is None:
            return None
        given = headers.get("x-api-key") if anthropic else (
            headers.get("api-key") or (headers.get("Authorization") or "").removeprefix("Bearer "))
        if given == self.key:
            return None
        shown = f"{given[:3]}...{given[-4:]}" if given and len(given) > 8 else str(given)
        return error(401, f"Incorrect API key provided: {shown}. You can find your API key at "
                     "https://platform.openai.com/account/api-keys.",
                     kind="invalid_request_error", code="invalid_api_key")

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def on(self, match: str | Callable[[Recorded], bool], *script: Reply) -> FakeOpenAI:
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

    def _answer(self, request: Recorded) -> Reply:
        for rule in self._rules:
            if rule.matches(request):
                return rule.next()
        return error(400, "fake_openai: no rule matches this prompt: " + request.prompt[-300:],
                     kind="invalid_request_error")

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _anthropic_problem(body: Any) -> str | None:
    """What Anthropic's messages API refuses (its required fields, its field names)."""
    if not isinstance(body, dict):
        return "the body is not a JSON object"
    known = {"model", "messages", "max_tokens", "system", "temperature", "top_p", "top_k",
             "stop_sequences", "metadata", "stream", "tools", "tool_choice", "thinking"}
    unknown = sorted(set(body) - known)
    if unknown:
        return f"{unknown[0]}: Extra inputs are not permitted"
    for name in ("model", "messages", "max_tokens"):
        if name not in body:
            return f"{name}: Field required"
    if not isinstance(body["max_tokens"], int) or not isinstance(body["messages"], list):
        return "max_tokens must be an integer and messages a list"
    return None
