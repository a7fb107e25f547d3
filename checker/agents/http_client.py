"""HTTP for ``--agent-url``: a small HTTP/1.1 client of its own for a server on this machine,
httpx for any other.

httpx spends about 1.8 ms of CPU on a request (its client, httpcore's pool, anyio); a run
makes three or four (create the session, each turn, delete the session), so for an ADK API
server that evalcheck starts on 127.0.0.1 it cost about 1 s of CPU per 150 runs, more than
the rest of the checker's work on them. A server on the loopback interface needs none of
what httpx adds (TLS, proxies, HTTP/2, redirects, cookies): ``LoopbackClient`` writes the
request and reads the answer on pooled keep-alive connections (about 0.2 ms a request),
with httpx's behaviour where it matters here: a timeout per request, a bounded answer, no
request sent twice, and a pooled connection the server closed (or may be closing: idle
longer than its keep-alive) never written to. Any other URL goes through httpx, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple
from urllib.parse import urlsplit

MAX_ANSWER_BYTES = 64 << 20  # one answer (a turn's events may be large, not unbounded)
MAX_HEADER_BYTES = 64 << 10
# uvicorn (adk api_server) closes a keep-alive connection after 5 s idle: one idle longer
# than this is closed here, not written to while the server may be closing it.
IDLE_SECONDS = 4.0


class TransportError(Exception):
    """The request got no (complete) answer: reset, closed, or not HTTP."""


class ConnectError(TransportError):
    """Nothing accepted the connection."""


class RequestTimeout(Exception):
    """No complete answer within the request's timeout."""


@dataclass(frozen=True)
class Response:
    status_code: int
    content: bytes
    headers: Mapping[str, str] = field(default_factory=dict)  # names in lower case

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


def is_loopback(url: str) -> bool:
    """An ``http://`` URL of this machine (127.0.0.0/8, ::1, localhost)."""
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        return False
    if parts.hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(parts.hostname).is_loopback
    except ValueError:
        return False


def http_client(base_url: str, *, max_connections: int, timeout: float) -> Any:
    """The client for ``base_url``: ``LoopbackClient`` or ``HttpxClient``."""
    if is_loopback(base_url):
        return LoopbackClient(base_url, max_connections=max_connections, timeout=timeout)
    return HttpxClient(base_url, max_connections=max_connections, timeout=timeout)


class HttpxClient:
    """httpx behind the same small interface (its errors as this module's)."""

    def __init__(self, base_url: str, *, max_connections: int, timeout: float):
        import httpx

        self._client = httpx.AsyncClient(base_url=base_url, timeout=httpx.Timeout(timeout),
                                         limits=httpx.Limits(max_connections=max_connections))

    async def request(self, method: str, path: str, *, json_body: Any = None,
                      timeout: float | None = None) -> Response:
        import httpx

        kwargs: dict[str, Any] = {} if json_body is None else {"json": json_body}
        if timeout is not None:
            kwargs["timeout"] = timeout
        try:
            response = await self._client.request(method, path, **kwargs)
        except httpx.TimeoutException:
            raise RequestTimeout() from None
        except httpx.ConnectError as exc:
            raise ConnectError(str(exc) or type(exc).__name__) from None
        except httpx.TransportError as exc:
            raise TransportError(type(exc).__name__) from None
        return Response(response.status_code, response.content,
                        {k.lower(): v for k, v in response.headers.items()})

    async def aclose(self) -> None:
        await self._client.aclose()


Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter, float]  # ..., idle since


class LoopbackClient:
    """HTTP/1.1 to a server on this machine, up to ``max_connections`` at once."""

    def __init__(self, base_url: str, *, max_connections: int, timeout: float):
        parts = urlsplit(base_url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.prefix = parts.path.rstrip("/")
        self.authority = parts.netloc
        self.timeout = timeout
        self.max_connections = max_connections
        self._slots: asyncio.Semaphore | None = None  # made in the running loop
        self._idle: list[Connection] = []

    async def request(self, method: str, path: str, *, json_body: Any = None,
                      timeout: float | None = None) -> Response:
        body = b"" if json_body is None else json.dumps(json_body, ensure_ascii=False,
                                                        separators=(",", ":")).encode()
        head = [f"{method} {self.prefix}{path} HTTP/1.1", f"Host: {self.authority}",
                "Accept: */*", "User-Agent: evalcheck"]
        if json_body is not None or method in ("POST", "PUT", "PATCH"):
            head += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
        data = ("\r\n".join(head) + "\r\n\r\n").encode() + body
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_connections)
        async with self._slots:
            try:
                return await asyncio.wait_for(self._exchange(method, data),
                                              self.timeout if timeout is None else timeout)
            except TimeoutError:
                raise RequestTimeout() from None

    async def _exchange(self, method: str, data: bytes) -> Response:
        pooled = self._reusable()
        if pooled is not None:
            reader, writer, _ = pooled
        else:
            try:
                reader, writer = await asyncio.open_connection(self.host, self.port,
                                                               limit=MAX_HEADER_BYTES)
            except OSError as exc:
                raise ConnectError(exc.strerror or type(exc).__name__) from None
        return await self._over(reader, writer, method, data)

    def _reusable(self) -> Connection | None:
        """An idle connection to reuse: not one the server closed or may be closing, nor one
        holding bytes nobody asked for (an answer before its request: the next run would read
        it as its own); those are closed."""
        now = time.monotonic()
        while self._idle:
            reader, writer, since = self._idle.pop()
            if (now - since < IDLE_SECONDS and not writer.is_closing() and not reader.at_eof()
                    and not _unread(reader)):
                return reader, writer, since
            writer.close()
        return None

    async def _over(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    method: str, data: bytes) -> Response:
        """One request on one connection; the connection is pooled again when the answer
        leaves it open, else closed (also on an error or a cancelled request)."""
        keep = False
        try:
            try:
                writer.write(data)
                await writer.drain()
                status_line = await reader.readuntil(b"\n")
            except (ConnectionError, asyncio.IncompleteReadError) as exc:
                if isinstance(exc, asyncio.IncompleteReadError) and exc.partial:
                    raise TransportError("the server closed the connection mid-answer") from None
                raise TransportError("the server closed the connection without answering") from None
            head = await _read_head(reader, status_line)
            status = head.status
            # uvicorn closes the connection after the 500 of an exception (adk api_server's
            # answer to a model that raised), without saying so: never reused.
            keep = head.keep_alive and status < 500
            if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
                content = b""
            elif head.chunked:
                content = await _read_chunked(reader)
            elif head.body_length is not None:
                if head.body_length > MAX_ANSWER_BYTES:
                    raise TransportError(f"an answer longer than {MAX_ANSWER_BYTES >> 20} MiB")
                content = await reader.readexactly(head.body_length)
            else:  # delimited by the end of the connection
                keep = False
                content = await _read_to_end(reader)
            return Response(status, content, head.headers)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            keep = False
            raise TransportError(f"{type(exc).__name__} in the answer") from None
        except BaseException:
            keep = False
            raise
        finally:
            if keep and not _unread(reader):  # bytes past the answer: no answer of ours
                self._idle.append((reader, writer, time.monotonic()))
            else:
                writer.close()

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for _, writer, _ in idle:
            writer.close()
        for _, writer, _ in idle:
            with contextlib.suppress(Exception):
                await writer.wait_closed()


DECIMAL = re.compile(r"[0-9]+", re.ASCII)
HEX = re.compile(rb"[0-9A-Fa-f]+")


def _unread(reader: asyncio.StreamReader) -> bool:
    """Whether the connection holds bytes already received and not read (StreamReader keeps
    them in its buffer; it has no public call for this)."""
    return bool(getattr(reader, "_buffer", b""))


class AnswerHead(NamedTuple):
    """An answer's status line and headers, as read."""

    status: int
    keep_alive: bool  # HTTP/1.1 without "Connection: close"
    body_length: int | None  # Content-Length
    chunked: bool
    headers: dict[str, str]  # names lower-cased


async def _read_head(reader: asyncio.StreamReader, line: bytes) -> AnswerHead:
    """The head of an answer whose status line is ``line``."""
    version, _, rest = line.decode("latin-1").strip().partition(" ")
    code = rest[:3]
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise TransportError(f"an answer that is not HTTP: {line[:60]!r}")
    headers: dict[str, str] = {}
    size = len(line)
    while (line := await reader.readuntil(b"\n")) not in (b"\r\n", b"\n"):
        size += len(line)
        if size > MAX_HEADER_BYTES:
            raise TransportError("an answer's headers are too long")
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    keep = version == "HTTP/1.1" and "close" not in headers.get("connection", "").lower()
    chunked = "chunked" in headers.get("transfer-encoding", "").lower()
    length = headers.get("content-length")
    if length is not None and not DECIMAL.fullmatch(length):  # '²'.isdigit(), int(' 5'), int('+5')
        raise TransportError(f"the agent server sent a bad Content-Length: {length[:30]!r} (not "
                             "a decimal number of bytes)")
    return AnswerHead(int(code), keep, None if length is None else int(length), chunked, headers)


async def _read_to_end(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    total = 0
    while chunk := await reader.read(1 << 16):
        total += len(chunk)
        if total > MAX_ANSWER_BYTES:
            raise TransportError(f"an answer longer than {MAX_ANSWER_BYTES >> 20} MiB")
        parts.append(chunk)
    return b"".join(parts)


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        size_line = (await reader.readuntil(b"\n")).split(b";", 1)[0].strip()
        if not HEX.fullmatch(size_line):  # int() takes '-5', '+5', '0x5', '5_0'
            raise TransportError(f"the agent server sent a bad chunk size: {size_line[:20]!r} (not a "
                                 "hexadecimal number of bytes)")
        size = int(size_line, 16)
        if size == 0:
            while (await reader.readuntil(b"\n")) not in (b"\r\n", b"\n"):
                pass  # trailers
            return b"".join(parts)
        total += size
        if total > MAX_ANSWER_BYTES:
            raise TransportError(f"an answer longer than {MAX_ANSWER_BYTES >> 20} MiB")
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)  # the chunk's CRLF
