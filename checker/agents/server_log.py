"""The log of an agent server evalcheck started, read for the model service's refusals, and
for where the server says it listens (uvicorn's "Uvicorn running on http://...") and which
agents it failed to load, and why ("Failed to load agent ...").

``adk api_server`` answers a turn whose model call raised with a bare ``HTTP 500 Internal
Server Error``; only its log says why: uvicorn writes "Exception in ASGI application" and the
traceback, ending in google-genai's own words ("429 RESOURCE_EXHAUSTED. {...}") when the model
service refused the call, or in an httpx connection error raised inside google-genai when
the model's host reset the connection. Each such log record is one exception of one request;
a 500 answer claims one record written after its request was sent, a refusal first, so that
one refusal never excuses two answers. Python's logging writes a record (message and
traceback) in one write: a record is whole when its first line is read.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass

from ..models.refusal import ServiceRefusal
from .process import READ_CHUNK, OutputTail
from .service_refusal import MAX_MESSAGE, refusal_in_text

# uvicorn's line before the traceback of a request's exception (its own words).
_RECORD = "Exception in ASGI application"
# A connection error in a traceback that went through google-genai's client: the model's
# host reset or refused the connection (Python's and httpx's / aiohttp's type names).
# (Not one that could not be made: a wrong base URL is setup, every run fails so.)
_CONNECTION = re.compile(r"^(?:httpx\.(?:ReadError|WriteError|RemoteProtocolError)|"
                         r"aiohttp\.[\w.]*(?:ServerDisconnectedError|ClientOSError)|"
                         r"ConnectionResetError|ConnectionAbortedError)\b")
_GENAI_FRAME = "/google/genai/"
_TRACEBACK = "Traceback (most recent call last):"
# The start of a log line (uvicorn's "INFO:     ...", logging's "2026-01-01 10:00:00,123 ..."):
# a traceback's lines are indented, or the exception's own.
_LOG_LINE = re.compile(r"^(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):\s|\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)")
# A server's own line saying where it listens: uvicorn's (adk api_server) "Uvicorn running on
# http://127.0.0.1:8000 (Press CTRL+C to quit)", @google/adk-devtools' "For local testing,
# access at http://localhost:8000.", and the common "Listening on http://...".
_LISTENING = re.compile(r"(?:Uvicorn running on|access at|[Ll]istening on)\s+(https?://[^\s|]+)")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# An agent the server could not load, in its own words: google-adk's "Failed to load agent
# NAME" before the traceback (a turn's, HTTP 500 "Failed to load agent") or "Failed to load
# agent 'NAME': WHY" (listing its apps); @google/adk-devtools' "Failed to load agent 'NAME'
# from FILE: WHY. Skipping it; ..." (at start: the app is not listed).
_LOAD_FAILED = re.compile(r"Failed to load agent '?(?P<name>[^'\s:]+)'?(?P<why>.*)$")
# The exception google-adk raises through a turn when the agent's module raised anything
# but a ValueError ("RuntimeError: Fail to load 'NAME' module. ..."): uvicorn logs it.
_FAIL_TO_LOAD = re.compile(r"^(?:[\w.]+: )?Fail to load '(?P<name>[^']+)' module\.")
_NOT_EXCEPTION = ("Traceback", "The above exception", "During handling")
MAX_LOAD_FAILURES = 64
# How long a 500's record may take to reach the log, and how long after a record that shows
# no refusal to wait for one that does (another request's record may come first).
RECORD_WAIT = 1.0
SETTLE = 0.1


@dataclass
class _Record:
    seq: int  # the line it started at
    at: float  # time.monotonic() when read
    refusal: ServiceRefusal | None = None
    through_genai: bool = False
    claimed: bool = False


class ServerLog:
    """The server's output: its tail for the user, and its exception records."""

    def __init__(self, tail: OutputTail):
        self.tail = tail
        self.lines = 0
        self._partial = b""
        self._records: list[_Record] = []
        self._open = False  # the lines read belong to the latest record
        self.listening: list[tuple[str, float]] = []  # (URL it says it listens at, when read)
        self.load_failures: dict[str, str] = {}  # app -> the server's words on why it failed
        self._loading: str | None = None  # the app whose load failure's traceback is being read

    def feed(self, data: bytes) -> None:
        self.tail.feed(data)
        *complete, self._partial = (self._partial + data).split(b"\n")
        if len(self._partial) > 1 << 16:  # one unending line: not a log record of ours
            self._partial = self._partial[-(1 << 12):]
        for raw in complete:
            self._line(raw.decode("utf-8", "replace").rstrip("\r"))

    def _line(self, line: str) -> None:
        self.lines += 1
        plain = _ANSI.sub("", line)
        if len(self.listening) < 16 and (said := _LISTENING.search(plain)):
            self.listening.append((said.group(1).rstrip(".,;:)"), time.monotonic()))
        self._load_failure(plain)
        if _RECORD in line or (line.startswith(_TRACEBACK) and not self._open):
            self._records.append(_Record(self.lines, time.monotonic()))
            del self._records[:-256]  # only recent records can be claimed
            self._open = True
            return
        if _LOG_LINE.match(line):  # the next log line: the record is over
            self._open = False
            return
        if not self._open:
            # Not a request's exception: e.g. google-genai's own "Retrying ... as it raised
            # ClientError: 429 RESOURCE_EXHAUSTED" while it retries, which failed no request.
            return
        current = self._records[-1]
        if _GENAI_FRAME in line:
            current.through_genai = True
        if current.refusal is not None:
            return  # a chained exception of the same request says it again
        refusal = refusal_in_text(line)
        if refusal is None and current.through_genai and _CONNECTION.match(line):
            refusal = ServiceRefusal(kind="connection", code="connection",
                                     message=line.strip()[:MAX_MESSAGE])
        current.refusal = refusal

    def _load_failure(self, line: str) -> None:
        """Note an agent the server failed to load, with why: the line's own reason, or the
        last exception line of the traceback that follows it."""
        failed = _LOAD_FAILED.search(line)
        if failed is not None:
            said = line[failed.start():].strip()
            self._note_load_failure(failed["name"], said)
            self._loading = None if failed["why"].strip(" .") else failed["name"]
            return
        if self._loading is not None and _LOG_LINE.match(line):
            self._loading = None
        if not line[:1].strip() or line.startswith(_NOT_EXCEPTION):
            return  # a traceback's frame, or not an exception's line
        if self._loading is not None:
            self._note_load_failure(self._loading,
                                    f"Failed to load agent {self._loading}: {line.strip()}")
        elif (module := _FAIL_TO_LOAD.match(line)) is not None:
            self._note_load_failure(module["name"], line.strip())

    def _note_load_failure(self, app: str, said: str) -> None:
        if len(self.load_failures) < MAX_LOAD_FAILURES or app in self.load_failures:
            self.load_failures[app] = said

    async def load_failure(self, app: str, wait: float = 0.0) -> str | None:
        """What the server said on failing to load ``app``, waiting up to ``wait`` seconds
        for its log to say it (it answers the turn as it writes the log)."""
        deadline = time.monotonic() + wait
        while True:
            said = self.load_failures.get(app)
            why = _LOAD_FAILED.search(said or "")
            if (said is not None and (why is None or why["why"].strip(" ."))) \
                    or time.monotonic() >= deadline:
                return said
            await asyncio.sleep(0.01)

    def mark(self) -> int:
        """Where the log is now (before a request is sent)."""
        return self.lines

    async def refusal_since(self, mark: int) -> ServiceRefusal | None:
        """The refusal an HTTP 500 to a request sent at ``mark`` stands for, or None (its
        exception was the agent's own, or the log says nothing)."""
        deadline = time.monotonic() + RECORD_WAIT
        while True:
            later = [r for r in self._records if r.seq > mark and not r.claimed]
            refused = next((r for r in later if r.refusal is not None), None)
            if refused is not None:
                refused.claimed = True
                return refused.refusal
            now = time.monotonic()
            other = next((r for r in later if now - r.at >= SETTLE), None)
            if other is not None:
                other.claimed = True
                return None
            if now >= deadline:
                return None
            await asyncio.sleep(0.01)


async def drain_into_log(stream: asyncio.StreamReader, log: ServerLog) -> None:
    """Read the server's output to its end into ``log``."""
    while chunk := await stream.read(READ_CHUNK):
        log.feed(chunk)
