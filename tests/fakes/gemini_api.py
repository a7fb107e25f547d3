"""A fake Gemini API model service on 127.0.0.1: what an ADK agent's google-genai client calls.

With ``GOOGLE_GEMINI_BASE_URL`` at it (and ``GOOGLE_API_KEY=fake``), an ordinary ADK agent
with ``model="gemini-2.5-flash"`` goes through google-genai's real client, ADK's retry options
and error types. It serves ``POST /v1beta/models/{model}:generateContent`` (what ADK 2.13
calls for ``Runner.run_async`` and ADK's own eval) and ``:streamGenerateContent?alt=sse``
(``StreamingMode.SSE``), answering from rules (gemini_script.py) after a latency per call,
and refuses as the real service does:

- a quota: calls accepted per second (any 1-second window) and in flight at once; a call
  over it gets Google's own ``429 RESOURCE_EXHAUSTED`` body with a ``RetryInfo`` retry delay;
- storm windows (seconds after the first model call): ``429`` or ``503 UNAVAILABLE`` (or
  500 / 504) for a share of the calls in the window.

Counters (calls, served, refused by reason, most in flight, when each call was served or
refused) are read with ``stats()``. ``FakeGeminiApi`` serves from a thread of the test's
process; ``FakeGeminiProcess`` from a process of its own (for benchmarks, so the service does
not share the measured process's CPU), which exits when its parent closes its stdin. Both
have the same methods, over ``GET /_fake/stats``, ``POST /_fake/config`` and
``POST /_fake/reset``.

Run alone: ``python tests/fakes/gemini_api.py '{"latency": 0.5, ...}'`` prints
``{"url": ...}`` and serves until stdin closes.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: the repository's root is where tests/ is
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.fakes.gemini_script import ModelRequest  # noqa: E402
from tests.fakes.gemini_service import (  # noqa: E402
    Quota, ServiceConfig, Stats, Storm, ModelService, error_body)

__all__ = ["FakeGeminiApi", "FakeGeminiProcess", "Quota", "ServiceConfig", "Stats", "Storm",
           "error_body", "service_env"]

_MODEL_PATH = re.compile(r"^/v1(?:beta|alpha)?/models/(?P<model>[^/:]+):"
                         r"(?P<method>generateContent|streamGenerateContent)$")
_REASONS = {400: "Bad Request", 403: "Forbidden", 404: "Not Found", 429: "Too Many Requests",
            500: "Internal Server Error", 503: "Service Unavailable", 504: "Gateway Timeout",
            200: "OK"}


class _HttpServer:
    """A small HTTP/1.1 server (keep-alive, Content-Length bodies) on an asyncio loop: a
    model service holds hundreds of calls in flight, sleeping, at no thread's cost."""

    def __init__(self, service: ModelService):
        self.service = service

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line.strip():
                    break
                method, target, _ = line.decode("latin-1").split(" ", 2)
                headers: dict[str, str] = {}
                while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    name, _, value = header.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = await self._body(reader, headers)
                status, content_type, payload = await self.respond(method, target, body)
                head = (f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
                        f"Content-Type: {content_type}\r\nContent-Length: {len(payload)}\r\n\r\n")
                writer.write(head.encode("latin-1") + payload)
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass  # the client went away, or sent something that is not HTTP
        except asyncio.CancelledError:
            pass  # stop(): ended, not cancelled (Python 3.11's streams log a cancelled one)
        finally:
            writer.close()

    @staticmethod
    async def _body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
        if headers.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while size := int((await reader.readline()).split(b";")[0], 16):
                chunks.append(await reader.readexactly(size))
                await reader.readline()
            await reader.readline()
            return b"".join(chunks)
        return await reader.readexactly(int(headers.get("content-length") or 0))

    async def respond(self, method: str, target: str, body: bytes) -> tuple[int, str, bytes]:
        path, _, query = target.partition("?")
        found = _MODEL_PATH.match(path)
        if method == "POST" and found:
            try:
                data = json.loads(body or b"{}")
            except ValueError:
                return _json(400, error_body(400, "Invalid JSON payload received."))
            if not isinstance(data, dict) or not data.get("contents"):
                return _json(400, error_body(400, "* GenerateContentRequest.contents: contents is "
                                                  "not specified"))
            stream = found.group("method") == "streamGenerateContent"
            status, answer = await self.service.generate(
                ModelRequest(found.group("model"), data, stream))
            if stream and status == 200 and "alt=sse" in query:
                return status, "text/event-stream", f"data: {json.dumps(answer)}\r\n\r\n".encode()
            return _json(status, [answer] if stream and status == 200 else answer)
        if method == "GET" and path == "/_fake/stats":
            return _json(200, self.service.stats().to_json())
        if method == "POST" and path == "/_fake/config":
            self.service.configure(ServiceConfig.from_json(json.loads(body)))
            return _json(200, {})
        if method == "POST" and path == "/_fake/reset":
            self.service.reset()
            return _json(200, {})
        return _json(404, error_body(404, f"fake gemini_api: no such method: {method} {path}"))


def _json(status: int, value: Any) -> tuple[int, str, bytes]:
    return status, "application/json; charset=UTF-8", json.dumps(value).encode()


class FakeGeminiApi:
    """The fake service in a daemon thread of this process (``with FakeGeminiApi(config) as
    api:``). ``responder``, instead of rules, answers each request with its parts."""

    def __init__(self, config: ServiceConfig | None = None, *,
                 responder: Callable[[ModelRequest], Any] | None = None):
        self._service = ModelService(config or ServiceConfig(), responder)
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="fake-gemini-api")
        self.url = ""

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(
            _HttpServer(self._service).connection, "127.0.0.1", 0, backlog=1024))
        self.url = "http://127.0.0.1:%d" % server.sockets[0].getsockname()[1]
        self._started.set()
        try:
            self._loop.run_forever()
        finally:
            server.close()
            connections = asyncio.all_tasks(self._loop)  # keep-alive connections still open
            for task in connections:
                task.cancel()
            self._loop.run_until_complete(asyncio.gather(*connections, return_exceptions=True))
            self._loop.run_until_complete(server.wait_closed())
            self._loop.close()

    def start(self) -> FakeGeminiApi:
        self._thread.start()
        self._started.wait(10)
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def __enter__(self) -> FakeGeminiApi:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def env(self) -> dict[str, str]:
        return service_env(self.url)

    def stats(self) -> Stats:
        return self._service.stats()

    def configure(self, config: ServiceConfig) -> None:
        self._service.configure(config)

    def reset(self) -> None:
        """Counters and the storms' clock start again."""
        self._service.reset()

    @property
    def config(self) -> ServiceConfig:
        return self._service.config


class FakeGeminiProcess:
    """The fake service in a process of its own (same methods as FakeGeminiApi). It exits
    when this process closes its stdin (``stop``, or this process's end)."""

    def __init__(self, config: ServiceConfig | None = None, *, cpus: str | None = None):
        self.config = config or ServiceConfig()
        self._cpus = cpus  # e.g. "1": pin the service off the measured CPUs (taskset)
        self._proc: subprocess.Popen[str] | None = None
        self.url = ""

    def start(self) -> FakeGeminiProcess:
        command = [sys.executable, str(Path(__file__).resolve()), json.dumps(self.config.to_json())]
        if self._cpus is not None:
            command = ["taskset", "-c", self._cpus, *command]
        self._proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      text=True)
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError("the fake Gemini API process did not start")
        self.url = json.loads(line)["url"]
        return self

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def __enter__(self) -> FakeGeminiProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def env(self) -> dict[str, str]:
        return service_env(self.url)

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        import urllib.request

        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # 127.0.0.1: direct
        with opener.open(request, timeout=10) as response:
            return json.loads(response.read())

    def stats(self) -> Stats:
        return Stats.from_json(self._call("GET", "/_fake/stats"))

    def configure(self, config: ServiceConfig) -> None:
        self._call("POST", "/_fake/config", config.to_json())
        self.config = config

    def reset(self) -> None:
        self._call("POST", "/_fake/reset", {})


def service_env(url: str) -> dict[str, str]:
    """The environment that sends google-genai (and so ADK's Gemini) to the fake service (with
    GOOGLE_GENAI_USE_VERTEXAI unset: Vertex AI mode would go elsewhere)."""
    return {"GOOGLE_GEMINI_BASE_URL": url, "GOOGLE_API_KEY": "fake",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost"}


def _main(argv: list[str]) -> None:
    config = ServiceConfig.from_json(json.loads(argv[0])) if argv else ServiceConfig()
    api = FakeGeminiApi(config).start()
    print(json.dumps({"url": api.url}), flush=True)
    sys.stdin.read()  # until the parent closes it, or exits
    api.stop()


if __name__ == "__main__":
    _main(sys.argv[1:])
