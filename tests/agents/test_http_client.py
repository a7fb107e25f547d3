"""The HTTP client for an agent server on this machine (checker/agents/http_client.py),
against a raw asyncio server that answers as servers do and as they fail: keep-alive,
chunked, close-delimited answers; a keep-alive connection the server closed while idle, or
idle longer than a server keeps one (the next request goes on a new connection, and is read
once); an answer cut short, too long, late or not HTTP; nothing listening."""

from __future__ import annotations

import asyncio
import socket

import pytest

from checker.agents import http_client
from checker.agents.http_client import (ConnectError, LoopbackClient, RequestTimeout,
                                        TransportError, is_loopback)


class Server:
    """Answers each request with ``answer(method, path, body)`` (raw bytes, or None to
    close the connection without a word; after an HTTP/1.0 answer it closes it too);
    counts requests and connections."""

    def __init__(self, answer):
        self.answer = answer
        self.requests: list[tuple[str, str, bytes]] = []
        self.connections = 0
        self.writers: list[asyncio.StreamWriter] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while line := await reader.readline():
                method, path, _ = line.decode().split(" ", 2)
                length = 0
                while (header := await reader.readline()) not in (b"\r\n", b""):
                    name, _, value = header.decode().partition(":")
                    if name.lower() == "content-length":
                        length = int(value)
                body = await reader.readexactly(length)
                self.requests.append((method, path, body))
                reply = await self.answer(method, path, body)
                if reply is None:
                    break
                writer.write(reply)
                await writer.drain()
                if reply.startswith(b"HTTP/1.0"):
                    break  # an HTTP/1.0 answer ends with its connection
        finally:
            writer.close()

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc) -> None:
        self.server.close()


def ok(body: bytes = b'{"ok":true}', extra: str = "") -> bytes:
    return (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
            f"\r\n{extra}\r\n").encode() + body


def client(url: str) -> LoopbackClient:
    return LoopbackClient(url, max_connections=4, timeout=5.0)


async def always_ok(method, path, body):
    return ok()


def served(answer, talk, prefix: str = ""):
    """``talk(http, server)`` with a client of a Server answering with ``answer``: (the
    server, what ``talk`` returned)."""
    async def go():
        server = Server(answer)
        async with server as url:
            http = client(url + prefix)
            try:
                return server, await talk(http, server)
            finally:
                await http.aclose()
    return asyncio.run(go())


def test_keep_alive_connections_are_reused_and_bodies_sent_as_json():
    async def answer(method, path, body):
        return ok(b'{"n":%d}' % len(body))

    async def talk(http, server):
        return (await http.request("POST", "/run", json_body={"text": "héllo"}),
                await http.request("GET", "/list-apps"))

    server, (first, second) = served(answer, talk, "/prefix")
    assert (first.status_code, first.content, second.content) == (200, b'{"n":17}', b'{"n":0}')
    assert server.connections == 1
    assert [(m, p) for m, p, _ in server.requests] == [("POST", "/prefix/run"), ("GET", "/prefix/list-apps")]
    assert server.requests[0][2] == '{"text":"héllo"}'.encode()


def test_chunked_and_close_delimited_answers_and_http_1_0():
    answers = iter([
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\n[1,2,\r\n3\r\n3]\n\r\n0\r\nT: v\r\n\r\n",
        b"HTTP/1.0 500 Internal Server Error\r\nContent-Type: text/plain\r\n\r\nboom, no length",
        ok(),
    ])

    async def answer(method, path, body):
        return next(answers)

    async def talk(http, server):
        return [await http.request("GET", path) for path in ("/a", "/b", "/c")]

    # /b is read to the end of its connection, so /c needs a new one.
    server, (chunked, closed, again) = served(answer, talk)
    assert chunked.content == b"[1,2,3]\n"
    assert (closed.status_code, closed.text) == (500, "boom, no length")
    assert again.status_code == 200 and server.connections == 2


def test_a_keep_alive_connection_closed_while_idle_is_not_written_to_twice():
    """The server closes an idle keep-alive connection (as uvicorn does after 5 s): the next
    request goes on a new connection and the server reads it once."""
    async def talk(http, server):
        await http.request("POST", "/one", json_body={})
        for writer in server.writers:  # the server drops the idle connection
            writer.close()
        await asyncio.sleep(0.05)
        return await http.request("POST", "/two", json_body={})

    server, second = served(always_ok, talk)
    assert second.status_code == 200
    assert [p for _, p, _ in server.requests] == ["/one", "/two"] and server.connections == 2


def test_a_connection_idle_longer_than_the_servers_keep_alive_is_not_reused(monkeypatch):
    monkeypatch.setattr(http_client, "IDLE_SECONDS", 0.0)

    async def talk(http, server):
        await http.request("GET", "/a")
        await http.request("GET", "/b")

    server, _ = served(always_ok, talk)
    assert server.connections == 2


@pytest.mark.parametrize("reply, says", [
    (None, "closed the connection without answering"),
    (b"HTTP/1.0 200 OK\r\nContent-Length: 10\r\n\r\nshort", "IncompleteReadError in the answer"),
    (b"SSH-2.0-OpenSSH\r\n\r\n", "an answer that is not HTTP"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 9999999999\r\n\r\n", "an answer longer than 64 MiB"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n", "the agent server sent a bad Content-Length: 'ten'"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\nx",  # latin-1 '\u00b2': its isdigit() is true
     "the agent server sent a bad Content-Length: '\u00b2'"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello", "the agent server sent a bad Content-Length: '\\+5'"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\nhello\r\n0\r\n\r\n",
     "the agent server sent a bad chunk size: b'-5'"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n",
     "the agent server sent a bad chunk size: b'0x5'"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad chunk size"),
])
def test_a_broken_answer_is_a_transport_error(reply, says):
    async def answer(method, path, body):
        return reply

    async def talk(http, server):
        await http.request("POST", "/run", json_body={})

    with pytest.raises(TransportError, match=says):
        served(answer, talk)


def test_a_late_answer_times_out_and_its_connection_is_not_reused():
    async def answer(method, path, body):
        if path == "/slow":
            await asyncio.sleep(5)
        return ok()

    async def talk(http, server):
        with pytest.raises(RequestTimeout):
            await http.request("GET", "/slow", timeout=0.2)
        return await http.request("GET", "/fast")

    server, fine = served(answer, talk)
    assert fine.status_code == 200 and server.connections == 2


def test_nothing_listening_is_a_connect_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there

    async def go():
        await client(f"http://127.0.0.1:{port}").request("GET", "/list-apps")

    with pytest.raises(ConnectError):
        asyncio.run(go())


@pytest.mark.parametrize("url, loopback", [
    ("http://127.0.0.1:8000", True), ("http://localhost:8000/api", True), ("http://[::1]:8000", True),
    ("http://127.0.0.2", True), ("https://127.0.0.1:8000", False), ("http://10.0.0.5:8000", False),
    ("http://agents.example.com", False), ("http://", False),
])
def test_only_plain_http_to_this_machine_uses_the_small_client(url, loopback):
    assert is_loopback(url) is loopback


def test_an_answer_nobody_asked_for_is_never_read_as_the_next_one():
    """The server sends two answers to one request: the connection still holds the second,
    so it is closed, not pooled; the next request gets its own answer on a new connection."""
    async def answer(method, path, body):
        if path == "/one":
            return ok(b'{"for":"one"}') + ok(b'{"for":"nobody"}')
        return ok(b'{"for":"%s"}' % path[1:].encode())

    async def talk(http, server):
        first = await http.request("GET", "/one")
        await asyncio.sleep(0.05)
        return first, await http.request("GET", "/two")

    server, (first, second) = served(answer, talk)
    assert (first.content, second.content) == (b'{"for":"one"}', b'{"for":"two"}')
    assert server.connections == 2


def test_an_answer_that_arrives_before_its_request_fails_that_connection():
    """While the connection is idle the server sends an answer: the next request does not
    read it, it goes on a new connection."""
    async def talk(http, server):
        await http.request("GET", "/one")
        for writer in server.writers:  # unasked: an answer before any request
            writer.write(ok(b'{"for":"nobody"}'))
        await asyncio.sleep(0.05)
        return await http.request("GET", "/two")

    server, second = served(always_ok, talk)
    assert second.content == b'{"ok":true}' and server.connections == 2


def test_a_clean_keep_alive_answer_keeps_its_connection():
    """The control: one answer per request, nothing left over: one connection."""
    async def talk(http, server):
        return [await http.request("GET", f"/{n}") for n in range(3)]

    server, answers = served(always_ok, talk)
    assert [a.status_code for a in answers] == [200, 200, 200] and server.connections == 1


def test_a_bad_content_length_fails_that_run_through_the_command_line(tmp_path):
    """`evalcheck run --agent-url` against a server whose answer to one case carries
    `Content-Length: ²`: that run errors with the reason, the other case passes, no traceback."""
    import json
    import shlex
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
    from corehelpers import case as eval_case, evalset, invocation, run_cli, write_json

    tiny = Path(__file__).resolve().parent / "agents" / "tiny_api_server.py"
    (tmp_path / ".git").mkdir()
    write_json(tmp_path / "evals" / "t.evalset.json", evalset(
        "t", eval_case("fine", invocation("hi", "answer for None")),
        eval_case("bad", invocation("BADLENGTH", "answer for None"))))
    write_json(tmp_path / "evals" / "test_config.json", {"criteria": {"response_match_score": 0.8}})
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = run_cli(["run", "evals", "--agent-url", f"http://127.0.0.1:{port}", "--app-name", "tiny",
                    "--agent-server-command", f"{shlex.quote(sys.executable)} {shlex.quote(str(tiny))} "
                    f"{port} {tmp_path / 'pids'}", "--num-runs", "1", "--retries", "0",
                    "--results", "r.json"], tmp_path)
    assert done.code == 1, done.output
    assert "Traceback" not in done.output and "ValueError" not in done.output
    cases = {c["evalId"]: c for s in json.loads((tmp_path / "r.json").read_text())["evalSets"] for c in s["cases"]}
    assert cases["fine"]["status"] == "passed"
    (run,) = cases["bad"]["runs"]
    assert "the agent server sent a bad Content-Length: '\u00b2'" in json.dumps(run, ensure_ascii=False), run
