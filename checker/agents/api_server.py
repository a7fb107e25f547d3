"""``--agent-url`` (+ ``--agent-server-command``): an ADK API server (CONTRACT section 6).

One fresh session per (case, run), created with the case's initial state; a pinned
``session_input.session_id`` is deliberately not reused (ADK's reuse leaks one run's
history into the next; reference section 8 item 23). HTTP goes through agents/http_client.py
(its own client for a server on this machine, httpx for others, imported lazily).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from ..safety.limits import JsonTooDeep, loads_bounded
from ..models.records import RecordedRun
from ..safety.text import one_line
from .base import AgentFailure, RunJob, mark_cannot_start, session_spec
from ..models.refusal import ServiceRefusal
from .events import ConversionError, events_to_invocation
from .protocol import refused_turn
from .server_log import RECORD_WAIT, ServerLog, drain_into_log
from .service_refusal import refusal_in_events, refusal_of_status, retry_after_header
from .process import (
    OutputTail,
    become_subreaper,
    describe_status,
    kill_group,
    reap,
    spawn,
)
from .turns import UserTurns, user_turns

if TYPE_CHECKING:
    from .sandbox import AgentSandbox


# google-adk's answer to a turn of an app whose agent raised as it was loaded.
_NOT_LOADED = "Failed to load agent"
# While the server says it listens on another port, how often that port is asked whether
# it serves the ADK API (GET /list-apps).
PROBE_EVERY = 0.5


def _port(url: str) -> int | None:
    try:
        parts = urlsplit(url)
        return parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        return None


async def _serves_adk(url: str) -> bool:
    """Whether an ADK API server answers ``GET /list-apps`` at ``url`` (on this machine)."""
    from .http_client import RequestTimeout, TransportError, http_client

    client = http_client(url, max_connections=1, timeout=2.0)
    try:
        response = await client.request("GET", "/list-apps", timeout=2.0)
        return response.status_code == 200 and isinstance(loads_bounded(response.content), list)
    except (TransportError, RequestTimeout, ValueError):  # nothing there, or not the ADK API
        return False
    finally:
        with contextlib.suppress(Exception):
            await client.aclose()


class ServerStartError(AgentFailure):
    """The agent server never became ready: every run fails with this reason."""

    def __init__(self, reason: str, tail: str | None):
        super().__init__(reason)
        self.tail = tail


def server_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment of a server evalcheck starts: ``adk api_server``'s sessions in
    memory unless the user chose otherwise (an explicit ``--session_service_uri`` wins too).
    Its default, a SQLite file under the agents folder, costs a database write per event
    and keeps every run's session on disk; evalcheck deletes each run's session anyway."""
    if "ADK_DISABLE_LOCAL_STORAGE" in env or "ADK_FORCE_LOCAL_STORAGE" in env:
        return dict(env)
    return {**env, "ADK_DISABLE_LOCAL_STORAGE": "1"}


class ApiServerRunner:
    def __init__(self, url: str, *, server_command: str | None = None, cwd: Path | None = None,
                 env: Mapping[str, str] | None = None, concurrency: int = 4,
                 startup_timeout: float = 120.0, connect_timeout: float = 10.0,
                 kill_grace: float = 5.0, sandbox: AgentSandbox | None = None):
        self.url = url.rstrip("/")
        self.sandbox = sandbox
        self.server_command = server_command
        self.cwd = cwd
        self.env = dict(os.environ if env is None else env)
        self.concurrency = concurrency
        self.startup_timeout = startup_timeout  # for a server we start
        self.connect_timeout = connect_timeout  # for one already running
        self.kill_grace = kill_grace
        self.apps: list[str] | None = None
        self._client: Any = None
        self._server: asyncio.subprocess.Process | None = None
        self._server_tail = OutputTail(max_lines=30, max_bytes=4096)
        self._server_log = ServerLog(self._server_tail)  # read for the model's refusals
        self._server_reader: asyncio.Future | None = None
        self._deleting: set[asyncio.Future] = set()  # session deletions in flight
        self._probed_at = 0.0  # when a port the server said it listens on was last asked

    # ------------------------------------------------------------ server lifecycle

    async def start(self) -> None:
        from .http_client import http_client

        become_subreaper()
        self._client = http_client(self.url, max_connections=self.concurrency + 2, timeout=30.0)
        if self.server_command:
            try:
                self._server = await spawn(self.server_command, cwd=self.cwd,
                                           env=server_env(self.env), stdin=False,
                                           merge_stderr=True, sandbox=self.sandbox)
            except OSError as exc:
                raise ServerStartError(f"could not start the agent server command: "
                                       f"{exc.strerror or exc}", None) from None
            assert self._server.stdout is not None
            self._server_reader = asyncio.ensure_future(
                drain_into_log(self._server.stdout, self._server_log))
        await self._wait_ready(self.startup_timeout if self.server_command else self.connect_timeout)

    async def _wait_ready(self, timeout: float) -> None:
        from .http_client import ConnectError, RequestTimeout, TransportError

        deadline = time.monotonic() + timeout
        last_problem = "no answer"
        while True:
            try:
                response = await self._client.request("GET", "/list-apps", timeout=5.0)
                if response.status_code == 200:
                    body = loads_bounded(response.content)
                    if isinstance(body, list):
                        self.apps = [str(a) for a in body]
                return  # any HTTP answer means the server is up
            except ConnectError as exc:
                if self._server is None:
                    # Nothing listens there (connection refused, unknown host): waiting
                    # would not change that for a server we do not start.
                    raise ServerStartError(f"cannot connect to {self.url}: {exc or type(exc).__name__}"
                                           " (is the server running? or pass "
                                           "--agent-server-command to have evalcheck start it)",
                                           None) from None
                last_problem = type(exc).__name__
            except (TransportError, RequestTimeout, ValueError) as exc:
                last_problem = type(exc).__name__
            if self._server is not None and self._server.returncode is not None:
                raise ServerStartError(
                    f"the agent server command {describe_status(self._server.returncode)} "
                    f"before answering at {self.url}", self._server_tail.text())
            elsewhere = await self._listening_elsewhere()
            if elsewhere is not None:
                raise ServerStartError(elsewhere, self._server_tail.text())
            if time.monotonic() >= deadline:
                raise ServerStartError(f"the agent server did not answer GET {self.url}/list-apps "
                                       f"within {timeout:g} s ({last_problem})",
                                       self._server_tail.text())
            await asyncio.sleep(0.2)

    async def _listening_elsewhere(self) -> str | None:
        """Why waiting on for the server is of no use: it said it listens on another port
        than --agent-url's, and on none that is --agent-url's, and the ADK API answers on that
        port (a command may start a helper server first: that one is not waited on). None
        while that is not known."""
        said = self._server_log.listening
        ours = _port(self.url)
        ports = [_port(url) for url, _ in said]
        if not said or ours is None or ours in ports or ports[0] is None:
            return None
        if time.monotonic() - self._probed_at < PROBE_EVERY:
            return None
        self._probed_at = time.monotonic()
        if not await _serves_adk(f"http://127.0.0.1:{ports[0]}"):
            return None
        return (f"the agent server says it listens on {said[0][0]} (port {ports[0]}), but "
                f"--agent-url is {self.url} (port {ours}): give both the same port (e.g. "
                f"--agent-url http://127.0.0.1:{ports[0]}, or --port {ours} in the server command)")

    async def aclose(self) -> None:
        if self._deleting:
            await asyncio.wait(set(self._deleting), timeout=10.0)
            for task in list(self._deleting):
                task.cancel()
        if self._client is not None:
            with contextlib.suppress(Exception):
                await self._client.aclose()
        if self._server is not None:
            await kill_group(self._server.pid, self.kill_grace)
            await reap(self._server)
        if self._server_reader is not None:
            await asyncio.wait({self._server_reader}, timeout=1.0)
            self._server_reader.cancel()

    def load_failures(self) -> dict[str, str]:
        """The agents the server evalcheck started said it failed to load, by app, in its words."""
        return dict(self._server_log.load_failures) if self._server is not None else {}

    def server_tail(self) -> str | None:
        return self._server_tail.text() if self._server is not None else None

    # ------------------------------------------------------------ one run

    async def run(self, job: RunJob) -> RecordedRun:
        started = time.monotonic()
        invocations: list = []
        error: str | None = None
        refusal = None
        not_loaded = None
        try:
            await self._converse(job, user_turns(job), invocations)
        except AgentFailure as exc:
            error, refusal = str(exc), exc.refusal
            if not invocations and refusal is None:
                not_loaded = await self._not_loaded(session_spec(job).app_name, error)
        record = job.record(invocations=invocations, error=not_loaded or error, unavailable=refusal,
                            stderr_tail=self.server_tail() if error else None,
                            duration_seconds=round(time.monotonic() - started, 3))
        if not_loaded is not None:  # every run of the app fails so: stop, said once (failfast.py)
            mark_cannot_start(record, f"the agent server failed to load app '{session_spec(job).app_name}'")
        return record

    async def _not_loaded(self, app: str, error: str) -> str | None:
        """The run's error when its HTTP 500 is the server's failure to load the app's agent
        (google-adk's "Failed to load agent"; the agent raised at import), with why in the
        server's own words when evalcheck started it; None for any other failure."""
        if "answered HTTP 500" not in error:
            return None
        adk_said = _NOT_LOADED in error
        said = None
        if self._server is not None:
            said = await self._server_log.load_failure(app, wait=RECORD_WAIT if adk_said else 0.0)
        if said is not None:
            return f"the agent server failed to load app '{app}'; its log says: {one_line(said, 300)}"
        if adk_said:
            return f"the agent server failed to load app '{app}' ({error}; its log says why)"
        return None

    def _server_gone(self) -> str:
        if self._server is not None and self._server.returncode is not None:
            return f" (the agent server {describe_status(self._server.returncode)})"
        return ""

    async def _post(self, path: str, body: Any, timeout: float, what: str) -> Any:
        from .http_client import RequestTimeout, TransportError

        mark = self._server_log.mark()
        try:
            response = await self._client.request("POST", path, json_body=body, timeout=timeout)
        except RequestTimeout:
            raise AgentFailure(f"{what}: no answer within {timeout:g} s (--turn-timeout)") from None
        except TransportError as exc:
            raise AgentFailure(f"{what}: cannot reach the agent server: "
                               f"{exc}{self._server_gone()}") from None
        if response.status_code >= 400:
            said = f"{what}: the agent server answered HTTP {response.status_code}: " \
                f"{response.text[:300]}"
            refusal = await self._refusal(response, mark)
            if refusal is not None:
                raise AgentFailure(f"{said} (the model service refused: {refusal.code})", refusal)
            raise AgentFailure(said)
        try:
            return loads_bounded(response.content)
        except JsonTooDeep as exc:
            raise AgentFailure(f"{what}: the agent server's answer is {exc}") from None
        except ValueError:
            raise AgentFailure(f"{what}: the agent server's answer is not JSON: "
                               f"{response.text[:200]}") from None

    async def _refusal(self, response: Any, mark: int) -> ServiceRefusal | None:
        """Whether an error answer is the model service's refusal: the server's own 429 or
        503 (with its Retry-After), or a 500 whose exception, in the log of a server evalcheck
        started, is a refused model call (agents/server_log.py). A server evalcheck did not
        start keeps its log: its bare 500 is the agent's error."""
        status = response.status_code
        if status in (429, 502, 503, 504):
            return refusal_of_status(status, None, response.text,
                                     retry_after_header(response.headers.get("retry-after")))
        if status == 500 and self._server is not None:
            return await self._server_log.refusal_since(mark)
        return None

    async def _converse(self, job: RunJob, turns: UserTurns, invocations: list) -> None:
        spec = session_spec(job)
        if self.apps is not None and spec.app_name not in self.apps:
            served = ", ".join(self.apps) or "none"
            fix = "pass --app-name with one of them" if job.app_name else \
                "set session_input.app_name or pass --app-name"
            raise AgentFailure(f"the agent server has no app '{spec.app_name}' (it serves: {served}); "
                               f"{fix}")
        base = f"/apps/{quote(spec.app_name, safe='')}/users/{quote(spec.user_id, safe='')}/sessions"
        session = await self._post(base, {"state": spec.state}, job.turn_timeout, "creating the session")
        session_id = session.get("id") if isinstance(session, dict) else None
        if not isinstance(session_id, str):
            raise AgentFailure("creating the session: the agent server's answer has no session id")
        try:
            turn = 0
            while (user_content := await turns.next(invocations)) is not None:
                turn += 1
                body = {"appName": spec.app_name, "userId": spec.user_id, "sessionId": session_id,
                        "newMessage": user_content.model_dump(
                            mode="json", by_alias=True, exclude_none=True)}
                created = time.time()
                began = time.perf_counter()
                events = await self._post("/run", body, job.turn_timeout, f"turn {turn}")
                duration = round(time.perf_counter() - began, 3)
                refusal = refusal_in_events(events)  # @google/adk's event of a model's error
                if refusal is not None:
                    raise AgentFailure(refused_turn(turn, refusal), refusal)
                ids = [e.get("invocationId") for e in events if isinstance(e, dict)] \
                    if isinstance(events, list) else []
                invocation_id = next((i for i in ids if isinstance(i, str) and i), f"inv-{turn}")
                try:
                    invocations.append(events_to_invocation(
                        events, invocation_id=invocation_id, user_content=user_content,
                        duration=duration, creation_timestamp=created, where="$"))
                except ConversionError as exc:
                    raise AgentFailure(f"turn {turn}: invalid events from the agent server at "
                                       f"{exc}") from None
        finally:
            # Sessions of finished runs are of no further use; free the server's memory,
            # off the run's clock (a round trip per run; aclose waits for them).
            deleting = asyncio.ensure_future(self._delete(f"{base}/{quote(session_id, safe='')}"))
            self._deleting.add(deleting)
            deleting.add_done_callback(self._deleting.discard)

    async def _delete(self, path: str) -> None:
        with contextlib.suppress(Exception):
            await self._client.request("DELETE", path, timeout=5.0)
