"""A local fake of the Vertex AI evaluation REST method ``:evaluateInstances``.

A real HTTP server on 127.0.0.1 in a thread. It checks what the real service checks that
matters to us (path, credentials, a body that parses as aiplatform's own
``EvaluateInstancesRequest`` proto with no unknown field, one metric, the instance fields each
metric reads) and answers in the service's JSON shape (proto3 JSON: camelCase, checked
against the ``EvaluateInstancesResponse`` proto), which the SDK parses with
``EvaluateInstancesResponse._from_response``.

Deterministic judging, so tests can tell scores apart:
- ``safety_v1``: 0.0 when the response text contains "UNSAFE", else 1.0.
- an LLM metric (``llm_based_metric_spec``, the coherence prompt): 2.0 when the response
  contains "rambling", else 5.0; the template must have {prompt} and {response}.
- ``multi_turn_*``: one rubric per turn, met unless the turn's last event says "FAIL";
  tool_use_quality adds "The agent called a tool". Score = share of rubrics met.
- a response containing "JUDGE_ERROR" gets a per-instance error inside a 200 answer.
Scripted failures (``fail``) are answered first, in order.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# Express mode: /v1beta1/:evaluateInstances. With a project the SDK joins
# "projects/{p}/locations/{l}/" and ":evaluateInstances", so a slash precedes the colon.
PATH = re.compile(r"^/v1beta1/(?:projects/(?P<project>[^/]+)/locations/(?P<location>[^/:]+)/?)?"
                  r":evaluateInstances$")
STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 408: "DEADLINE_EXCEEDED",
          429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


class BadRequest(Exception):
    pass


def _get(data: dict[str, Any], snake: str) -> Any:
    """Proto JSON accepts both spellings of a field."""
    camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), snake)
    return data.get(snake, data.get(camel))


def _texts(content: dict[str, Any] | None) -> str:
    return "\n".join(p.get("text", "") for p in (content or {}).get("parts", []) if p.get("text"))


def _instance_text(instance: dict[str, Any], field_name: str) -> str:
    data = _get(instance, field_name)
    if not data:
        raise BadRequest(f"instance.{field_name} is required by this metric")
    contents = (data.get("contents") or {}).get("contents") or []
    if not contents:
        raise BadRequest(f"instance.{field_name}.contents is empty")
    return "\n".join(_texts(c) for c in contents)


def proto_problem(raw: bytes | str, response: bool = False) -> str | None:
    """Parse a body as aiplatform's own EvaluateInstancesRequest (or Response) proto, unknown
    fields refused, as the service parses it; what is wrong, or None."""
    from google.cloud.aiplatform_v1beta1.types import evaluation_service as service
    from google.protobuf.json_format import ParseError

    message = service.EvaluateInstancesResponse if response else service.EvaluateInstancesRequest
    try:
        message.from_json(raw or b"{}", ignore_unknown_fields=False)
    except (ParseError, ValueError) as exc:
        return f"not a valid {message.__name__}: {str(exc)[:500]}"
    return None


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class FakeVertex:
    api_key: str = "test-express-key"
    token: str = "test-access-token"
    delay: float = 0.0  # seconds each answer takes (to observe concurrency, never timed)
    requests: list[Request] = field(default_factory=list)
    script: list[tuple[int, dict[str, Any] | None, dict[str, str]]] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    # OAuth token endpoint (POST /token): each call issues a new access token that expires
    # within google-auth's refresh margin, so every request refreshes first.
    issued: list[str] = field(default_factory=list)
    adc_file: str | None = None  # the credentials file a fixture wrote for this fake

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                fake._handle(self)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}/"

    def start(self) -> FakeVertex:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def fail(self, status: int, times: int = 1, headers: dict[str, str] | None = None,
             message: str = "scripted failure") -> None:
        body = {"error": {"code": status, "message": message, "status": STATUS.get(status, "UNKNOWN")}}
        self.script += [(status, body, headers or {})] * times

    # ------------------------------------------------------------ serving

    @property
    def token_uri(self) -> str:
        return f"{self.url}token"

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length)
        if handler.path == "/token":
            with self._lock:
                self.issued.append(f"rotated-access-token-{len(self.issued) + 1}-{'x' * 12}")
                token = self.issued[-1]
            self._send(handler, 200, {"access_token": token, "expires_in": 60,
                                      "token_type": "Bearer"}, {})
            return
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                threading.Event().wait(self.delay)
            status, body, headers = self._answer(handler, raw)
        finally:
            with self._lock:
                self.in_flight -= 1
        self._send(handler, status, body, headers)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, body: dict[str, Any],
              headers: dict[str, str]) -> None:
        data = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("content-type", "application/json; charset=UTF-8")
        handler.send_header("content-length", str(len(data)))
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(data)

    def _answer(self, handler: BaseHTTPRequestHandler,
                raw: bytes) -> tuple[int, dict[str, Any], dict[str, str]]:
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return self._error(400, "body is not JSON")
        with self._lock:
            headers = {k.lower(): v for k, v in handler.headers.items()}
            self.requests.append(Request(handler.path, headers, body))
            scripted = self.script.pop(0) if self.script else None
        match = PATH.match(handler.path)
        if not match:
            return self._error(404, f"no method at {handler.path}")
        express = match.group("project") is None
        if express and handler.headers.get("x-goog-api-key") != self.api_key:
            return self._error(401, "API key not valid. Please pass a valid API key.")
        bearer = handler.headers.get("authorization") or ""
        if not express and bearer.removeprefix("Bearer ") not in (self.token, *self.issued):
            return self._error(401, "Request had invalid authentication credentials.")
        problem = proto_problem(raw)
        if problem:
            return self._error(400, problem)
        if scripted is not None:  # "{authorization}" in a scripted message echoes the header
            status, body, headers = scripted
            return status, json.loads(json.dumps(body).replace("{authorization}", json.dumps(bearer)[1:-1])), headers
        try:
            answer = {"metricResults": [self._judge(body)]}
        except BadRequest as exc:
            return self._error(400, str(exc))
        problem = proto_problem(json.dumps(answer), response=True)
        assert problem is None, f"fake_vertex answers in a shape the service never would: {problem}"
        return 200, answer, {}

    @staticmethod
    def _error(status: int, message: str) -> tuple[int, dict[str, Any], dict[str, str]]:
        return status, {"error": {"code": status, "message": message,
                                  "status": STATUS.get(status, "UNKNOWN")}}, {}

    def _judge(self, body: dict[str, Any]) -> dict[str, Any]:
        metrics = body.get("metrics") or []
        instance = body.get("instance")
        if len(metrics) != 1 or not isinstance(instance, dict):
            raise BadRequest("exactly one metric and an instance are required")
        predefined = _get(metrics[0], "predefined_metric_spec")
        llm = _get(metrics[0], "llm_based_metric_spec")
        if predefined:
            name = _get(predefined, "metric_spec_name")
            if name == "safety_v1":
                _instance_text(instance, "prompt")
                response = _instance_text(instance, "response")
                if "JUDGE_ERROR" in response:
                    return {"error": {"code": 3, "message": "the autorater output could not be parsed"}}
                unsafe = "UNSAFE" in response
                return {"score": 0.0 if unsafe else 1.0,
                        "explanation": "violates policy" if unsafe else "no policy violated"}
            if name in ("multi_turn_task_success_v1", "multi_turn_trajectory_quality_v1",
                        "multi_turn_tool_use_quality_v1"):
                return self._judge_conversation(name, instance)
            raise BadRequest(f"unsupported metric_spec_name {name!r}")
        if llm:
            template = _get(llm, "metric_prompt_template") or ""
            if "{prompt}" not in template or "{response}" not in template:
                raise BadRequest("metric_prompt_template needs {prompt} and {response}")
            _instance_text(instance, "prompt")
            response = _instance_text(instance, "response")
            score = 2.0 if "rambling" in response else 5.0
            return {"score": score, "explanation": f"rated {score:g} on the template"}
        raise BadRequest("unsupported metric spec")

    @staticmethod
    def _judge_conversation(name: str, instance: dict[str, Any]) -> dict[str, Any]:
        # evaluateInstances names the field agent_eval_data (the SDK's agent_data).
        data = _get(instance, "agent_eval_data")
        turns = (data or {}).get("turns") or []
        if not turns:
            raise BadRequest("instance.agent_eval_data.turns is required by multi-turn metrics")
        verdicts = []
        called_tool = False
        for index, turn in enumerate(turns):
            events = turn.get("events") or []
            if not events or events[0].get("author") != "user":
                raise BadRequest(f"turn {index} must start with the user's event")
            called_tool |= any(_get(p, "function_call") for e in events
                               for p in (e.get("content") or {}).get("parts", []))
            met = "FAIL" not in _texts(events[-1].get("content"))
            verdicts.append((f"Turn {index + 1} request was handled", met))
        if name == "multi_turn_tool_use_quality_v1":
            verdicts.append(("The agent called a tool", called_tool))
        out = []
        for number, (description, met) in enumerate(verdicts):
            verdict: dict[str, Any] = {
                "evaluatedRubric": {"rubricId": f"r{number}",
                                    "content": {"property": {"description": description}}},
                "reasoning": "met" if met else "not met"}
            if met:  # the service omits `verdict` when a rubric is not met
                verdict["verdict"] = True
            out.append(verdict)
        score = sum(1 for _, met in verdicts if met) / len(verdicts)
        return {"score": score, "explanation": f"{name}: {score:g}", "rubricVerdicts": out}
