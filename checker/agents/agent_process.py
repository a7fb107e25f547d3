"""One running stdio agent process and the conversation of one run with it.

A process serves one run (protocol 1), or several in turn when it answered ``start`` with
``{"type": "ready", "sessions": "many"}`` (a warm worker): then the run ends with an
``end`` message instead of closed stdin, and the next run's ``start`` must be answered
with ``ready`` before its first turn is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import struct
import termios
import time
from collections.abc import Callable
from typing import Any

from ..models.refusal import ServiceRefusal
from ..safety.limits import JsonTooDeep, loads_bounded
from .base import AgentFailure, RunJob, session_spec
from .events import ConversionError
from .process import (
    OutputTail,
    describe_status,
    kill_group,
    kill_now,
    live_group_members,
    read_lines,
    reap,
    wait_exit,
    READ_CHUNK,
)
from .protocol import (
    EOF_MARK,
    BadLine,
    ErrorMessage,
    ProtocolError,
    ResponseMessage,
    concurrent_sessions,
    dumps,
    end_message,
    is_ready,
    parse_message,
    refused_turn,
    response_refusal,
    serves_any_eval_set,
    start_message,
    to_invocation,
    told_paced,
    told_refusal,
    user_message,
)
from .turns import UserTurns


class BecameShared(Exception):
    """The first run's agent announced concurrent sessions while its turn 1 was on its way:
    the run goes on in a SharedWorker (agents/sessions.py) from that turn's answer."""

    def __init__(self, concurrent: int, invocation_id: str, user_content: Any,
                 created: float, began: float, deadline: float):
        super().__init__("concurrent sessions")
        self.concurrent = concurrent
        self.turn1 = (invocation_id, user_content, created, began, deadline)


class AgentProcess:
    """The conversation with one agent process, for one run or (a warm worker) several."""

    def __init__(self, proc: asyncio.subprocess.Process, max_line_bytes: int):
        self.proc = proc
        self.pgid = proc.pid  # the shell leads its own process group
        self.tail = OutputTail()
        self.stderr_read = 0  # bytes read from its stderr so far
        self.between_runs = False  # a warm worker between two runs: its stderr is no run's
        self.dropped = 0  # bytes of stderr printed between runs
        self.max_line_bytes = max_line_bytes
        # Small and bounded: a flooding agent blocks on its own stdout, not our memory.
        self.messages: asyncio.Queue[Any] = asyncio.Queue(maxsize=4)
        self.closing = False
        self.invocations: list = []
        self.many = False  # it announced {"type": "ready", "sessions": "many"}
        self.concurrent: int | None = None  # ... and "concurrent": N
        self.offered: int | None = None  # the sessions its start messages offer ("concurrent")
        # The eval set whose environment the process was started with (EVALCHECK_EVAL_SET_ID),
        # and whether it said it serves any eval set ("evalSets": "any" in a ready).
        self.started_for: str | None = None
        self.any_eval_set = False
        # Called once with the first message of the process's first run (what kind of agent).
        self.on_first: Any = None
        # Told each model-service refusal the agent retries itself ({"type": "refused"});
        # None: the start messages do not ask the agent to tell them.
        self.on_refusal: Callable[[ServiceRefusal, bool], None] | None = None
        self.told = 0  # ... told during the current run
        self.runs = 0  # runs begun in this process
        self.heard = False  # a ready or response read during the current run
        self.start_error: str | None = None  # an error message before anything else
        self.exited = asyncio.ensure_future(wait_exit(proc))
        # Whether a process that failed had read any of its input tells a failure to start
        # (a typo, an import error) from a failure at work: the bytes still in its stdin
        # pipe say so. A second handle on the pipe keeps it readable after asyncio closed
        # its own; dropped after the first run, or the agent would never see EOF.
        self.sent = 0  # bytes written to its stdin
        # Our evalcheck-adk started early reads its first start before it loads the agent
        # (agents/early_start.py): whatever it read, failing before its ready is failing to start.
        self.loads_at_start = False
        self._probe: int | None = None
        assert proc.stdin is not None
        fileno = getattr(proc.stdin.transport, "_fileno", None)  # asyncio's pipe transport
        if isinstance(fileno, int):
            with contextlib.suppress(OSError):
                self._probe = os.dup(fileno)
        assert proc.stdout is not None and proc.stderr is not None
        self.readers = [asyncio.ensure_future(self._read_stdout(proc.stdout)),
                        asyncio.ensure_future(self._read_stderr(proc.stderr))]

    # ------------------------------------------------------------ reading

    async def _read_stdout(self, stream: asyncio.StreamReader) -> None:
        await read_lines(stream, self.max_line_bytes, self._on_line, self._on_overlong)
        await self._put(EOF_MARK)

    async def _read_stderr(self, stream: asyncio.StreamReader) -> None:
        # Into the current run's tail: a warm worker's log of earlier runs is not this run's,
        # and what it printed between two runs (until the next run's ready) is no run's.
        while chunk := await stream.read(READ_CHUNK):
            self.stderr_read += len(chunk)
            if self.between_runs:
                self.dropped += len(chunk)
            else:
                self.tail.feed(chunk)

    async def _settle_stderr(self, wait: float = 0.5) -> None:
        """At a warm worker's ready: whatever it wrote to stderr before it (the previous
        run's late log included) is read now, and dropped with a note; what follows is
        this run's."""
        stream = self.proc.stderr
        pending = 0
        transport = getattr(self.proc, "_transport", None)
        pipe = transport.get_pipe_transport(2) if transport is not None else None
        fileno = getattr(pipe, "_fileno", None)
        if isinstance(fileno, int):
            import fcntl
            import struct
            import termios

            with contextlib.suppress(OSError):
                pending = struct.unpack("i", fcntl.ioctl(fileno, termios.FIONREAD, b"\0" * 4))[0]
        target = self.stderr_read + len(getattr(stream, "_buffer", b"")) + pending
        deadline = time.monotonic() + wait
        while self.stderr_read < target and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        self.between_runs = False
        if self.dropped:
            self.tail.add_line(f"[{self.dropped} bytes of stderr printed between runs, not shown]")
            self.dropped = 0

    async def _put(self, item: Any) -> None:
        if self.closing:
            return
        await self.messages.put(item)

    async def _on_line(self, line: bytes) -> None:
        text = line.decode("utf-8", "replace").strip()
        if not text:
            return
        if text.startswith("{"):
            try:
                obj = loads_bounded(text)
            except JsonTooDeep as exc:
                obj = BadLine(f"a reply {exc}")  # one bad reply fails its run, never the reader
            except ValueError:
                obj = None
            if isinstance(obj, BadLine):
                await self._put(obj)
                return
            if isinstance(obj, dict):
                if self.closing:
                    self.tail.add_line("[stdout, after the last turn] " + text[:300])
                else:
                    await self._put(obj)
                return
        # Not a JSON object: the agent printing something. Logged, not fatal.
        self.tail.add_line("[stdout] " + text[:500])

    async def _on_overlong(self, head: bytes) -> None:
        if head.lstrip().startswith(b"{"):
            await self._put(BadLine(f"a stdout line longer than {self.max_line_bytes >> 20} MiB"))
        else:
            self.tail.add_line("[stdout] " + head.decode("utf-8", "replace") + "\u2026 (cut)")

    # ------------------------------------------------------------ state

    def status(self) -> str | None:
        """How the process ended ("exited with status 3"), None while it runs."""
        if self.exited.done() and not self.exited.cancelled() and self.exited.exception() is None:
            return describe_status(self.exited.result())
        code = self.proc.returncode
        return None if code is None else describe_status(code)

    def reusable(self) -> bool:
        """A warm worker that is alive and said nothing since its last run ended."""
        return (self.many and not self.closing and not self.exited.done()
                and self.proc.returncode is None and self.messages.empty())

    def begin_run(self) -> None:
        self.runs += 1
        self.told = 0
        self.invocations = []
        self.heard = False
        self.tail = OutputTail()
        self.between_runs = self.runs > 1  # until this run's ready (_settle_stderr)

    # ------------------------------------------------------------ the conversation

    async def send(self, message: dict, deadline: float, what: str) -> None:
        """One message to the agent on its stdin, by ``deadline``; a closed pipe is the agent's failure."""
        assert self.proc.stdin is not None
        loop = asyncio.get_running_loop()
        data = dumps(message)
        try:
            self.sent += len(data)
            self.proc.stdin.write(data)
            await asyncio.wait_for(self.proc.stdin.drain(), max(deadline - loop.time(), 0.001))
        except (BrokenPipeError, ConnectionResetError):
            self.sent -= len(data)  # no reader left: none of it reached the pipe
            await asyncio.wait({self.exited}, timeout=0.5)
            status = self.status()
            raise AgentFailure(f"the agent {status or 'closed its stdin'} before reading {what}") from None
        except TimeoutError:
            raise AgentFailure(f"the agent did not read {what} within the turn timeout "
                               "(it must read stdin)") from None

    async def _receive(self, deadline: float, what: str, timeout: float) -> Any:
        """The next message (or BadLine) of the run; a refusal the agent retries itself is
        told to ``on_refusal`` on the way, never the run's answer."""
        while True:
            item = await self._receive_one(deadline, what, timeout)
            refusal = told_refusal(item)
            if refusal is None:
                return item
            self.told += 1
            if self.on_refusal is not None:
                self.on_refusal(refusal, told_paced(item))

    async def _receive_one(self, deadline: float, what: str, timeout: float) -> Any:
        loop = asyncio.get_running_loop()
        getter = asyncio.ensure_future(self.messages.get())
        try:
            done, _ = await asyncio.wait({getter, self.exited}, return_when=asyncio.FIRST_COMPLETED,
                                         timeout=max(deadline - loop.time(), 0.001))
            if getter not in done and self.exited in done:
                # Lines written just before exiting may still be on their way.
                done, _ = await asyncio.wait({getter}, timeout=0.5)
            if getter in done:
                item = getter.result()
                if item is EOF_MARK:
                    await asyncio.wait({self.exited}, timeout=0.5)
                    raise AgentFailure(f"the agent {self.status() or 'closed its stdout'} "
                                       f"without answering {what}")
                return item
            if self.exited.done():
                raise AgentFailure(f"the agent {self.status()} without answering {what}")
            raise AgentFailure(f"{what}: no answer within {timeout:g} s (--turn-timeout)")
        finally:
            getter.cancel()

    def _unread(self) -> int | None:
        """Bytes written to the agent's stdin that it has not read."""
        if self._probe is None:
            return None
        try:
            return struct.unpack("i", fcntl.ioctl(self._probe, termios.FIONREAD, b"\0" * 4))[0]
        except OSError:
            return None

    def drop_probe(self) -> None:
        """Stop counting the bytes of stdin the process has not read (how a failure to start is
        told apart): a process serving concurrent sessions has no one run whose start it is."""
        if self._probe is not None:
            with contextlib.suppress(OSError):
                os.close(self._probe)
            self._probe = None

    def cannot_start(self) -> str | None:
        """Why a new process failed without reading any of its input (it exited, or it
        reported an error for no turn), or None when it failed otherwise."""
        if self.runs != 1 or self.heard:
            return None
        if self.sent and not self.loads_at_start:  # (not sent: stdin closed before the start)
            unread = self._unread()
            # >=: a last write may have half-failed; what it did deliver is unread too.
            if unread is None or unread < self.sent:
                return None
        return self.start_error or self.status()

    def serves(self, eval_set_id: str) -> bool:
        """Whether a run of ``eval_set_id`` may go to this process: one started with its
        environment, or one that said it reads the eval set from each start message."""
        return self.any_eval_set or self.started_for == eval_set_id

    def _note_ready(self, item: dict) -> None:
        self.heard = True
        self.any_eval_set = self.any_eval_set or serves_any_eval_set(item)
        if self.runs == 1 and item.get("sessions") == "many":
            self.many = True
            self.concurrent = concurrent_sessions(item)

    async def converse(self, job: RunJob, turns: UserTurns, session_id: str | None = None) -> list:
        """The run's turns; raises AgentFailure when the agent fails the run, BecameShared
        when the first run's agent announces concurrent sessions."""
        loop = asyncio.get_running_loop()
        spec = session_spec(job)
        timeout = job.turn_timeout
        await self.send(start_message(eval_set_id=job.eval_set_id, eval_id=job.eval_id,
                                       run=job.run, app_name=spec.app_name, user_id=spec.user_id,
                                       state=spec.state, session_id=session_id,
                                       eval_set_path=job.eval_file, concurrent=self.offered,
                                       tell_refusals=self.on_refusal is not None),
                         loop.time() + timeout, "the start message")
        if self.runs > 1:
            # A warm worker sets up the run's session before its first turn is sent (and
            # timed); anything else first is a leftover of another run: fail, never mix.
            item = await self._receive(loop.time() + timeout, "the start message", timeout)
            if not is_ready(item):
                raise AgentFailure("the agent answered the start message of a run in a warm "
                                   "worker with something else than {\"type\": \"ready\"}")
            self._note_ready(item)
            await self._settle_stderr()
        turn = 0
        # The next user turn is asked for before the turn's clock starts: a simulated user's
        # thinking time is not the agent's.
        while (user_content := await turns.next(self.invocations)) is not None:
            turn += 1
            invocation_id = f"inv-{turn}"
            created = time.time()
            began = time.perf_counter()
            deadline = loop.time() + timeout
            await self.send(user_message(invocation_id, user_content), deadline,
                             f"turn {turn}")
            item = await self._receive(deadline, f"turn {turn}", timeout)
            if self.on_first is not None:
                on_first, self.on_first = self.on_first, None
                on_first(item)
            while is_ready(item) and turn == 1 and self.runs == 1:
                # Optional in a new process: the agent is set up. Its start-up is not part
                # of turn 1's time.
                self._note_ready(item)
                began = time.perf_counter()
                if self.concurrent is not None:
                    raise BecameShared(self.concurrent, invocation_id, user_content, created,
                                       began, deadline)
                item = await self._receive(deadline, f"turn {turn}", timeout)
            duration = round(time.perf_counter() - began, 3)
            if isinstance(item, BadLine):
                raise AgentFailure(f"turn {turn}: {item.reason}")
            try:
                message = parse_message(item)
            except ProtocolError as exc:
                raise AgentFailure(f"turn {turn}: invalid protocol message at {exc}") from None
            if isinstance(message, ErrorMessage):
                if turn == 1 and self.runs == 1 and not message.invocation_id \
                        and not self.many:
                    # An error for no turn before any answer: the agent could not start.
                    self.start_error = message.message[:300] or "(no message)"
                if (refusal := message.refusal()) is not None:  # the model's, not the agent's
                    raise AgentFailure(refused_turn(turn, refusal), refusal)
                raise AgentFailure(f"the agent reported an error in turn {turn}: "
                                   f"{message.message[:300] or '(no message)'}")
            assert isinstance(message, ResponseMessage)
            self.heard = True
            refused = response_refusal(message)
            if refused is not None:
                raise AgentFailure(refused_turn(turn, refused), refused)
            if message.invocation_id != invocation_id:
                raise AgentFailure(f"turn {turn}: the response is for invocation "
                                   f"'{message.invocation_id[:60]}', expected '{invocation_id}'")
            try:
                self.invocations.append(to_invocation(message, invocation_id, user_content,
                                                      duration, created))
            except ConversionError as exc:
                raise AgentFailure(f"turn {turn}: invalid events at {exc}") from None
        return self.invocations

    async def end_run(self, timeout: float) -> None:
        """A warm worker's run is over: tell it, and keep the process for the next run."""
        loop = asyncio.get_running_loop()
        self.drop_probe()
        await self.send(end_message(), loop.time() + timeout, "the end message")

    async def finish(self, grace: float) -> None:
        """A one-run process: close stdin (the agent should exit), then check how it ended."""
        self.closing = True
        self.drop_probe()
        while not self.messages.empty():  # unblock a reader stuck on a full queue
            self.messages.get_nowait()
        assert self.proc.stdin is not None
        with contextlib.suppress(Exception):
            self.proc.stdin.close()
        try:
            code = await asyncio.wait_for(asyncio.shield(self.exited), grace)
        except TimeoutError:
            raise AgentFailure(f"the agent did not exit within {grace:g} s after its input "
                               "was closed") from None
        if code != 0:
            raise AgentFailure(f"the agent {describe_status(code)} after the last turn")
        # Children the agent started must not outlive it; give them a moment to finish.
        deadline = time.monotonic() + 0.5
        while (left := live_group_members(self.pgid)) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        if left:
            raise AgentFailure(f"the agent exited but left {len(left)} process(es) running; "
                               "they were killed")

    async def retire(self, grace: float, kill_grace: float) -> None:
        """A warm worker no longer needed: close its stdin, let it exit, kill what is left."""
        assert self.proc.stdin is not None
        self.drop_probe()
        with contextlib.suppress(Exception):
            self.proc.stdin.close()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.exited), grace)
        await self.close(kill_grace)

    async def close(self, kill_grace: float) -> None:
        """Kill the whole process group and reap it (also on cancellation)."""
        self.closing = True
        self.drop_probe()
        killed = False
        try:
            await kill_group(self.pgid, kill_grace)
            killed = True
            await reap(self.proc)
            while not self.messages.empty():  # a reader blocked on the full queue goes on
                self.messages.get_nowait()
            # Let the readers take in the last output, then stop them whatever holds the pipes.
            await asyncio.wait(self.readers, timeout=1.0)
        finally:  # cancelled half-way too: nothing of the agent's outlives the run
            if not killed:
                kill_now(self.pgid)
            for task in (*self.readers, self.exited):
                task.cancel()
            # Closed here, in its event loop: left to the garbage collector after an
            # interrupted run, its pipes would be closed once the loop is (asyncio's "Exception
            # ignored in BaseSubprocessTransport.__del__ ... Event loop is closed").
            transport = getattr(self.proc, "_transport", None)
            if transport is not None:
                transport.close()
        await asyncio.gather(*self.readers, self.exited, return_exceptions=True)

