"""``--agent-command``: one agent process per (case, run), speaking the stdio protocol.

Whatever the agent does - crash, hang, flood its pipes, answer garbage, leave children
behind - ends only its own run, with a short reason and the tail of its log; its whole
process group is killed before the run is returned.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..limits import JsonTooDeep, loads_bounded
from ..models.records import RecordedRun
from .base import AgentFailure, RunJob, session_spec
from .events import ConversionError, events_to_invocation, fields_to_invocation
from .process import (
    OutputTail,
    become_subreaper,
    describe_status,
    drain_into_tail,
    kill_group,
    live_group_members,
    read_lines,
    reap,
    spawn,
    wait_exit,
)
from .protocol import (
    ErrorMessage,
    ProtocolError,
    ResponseMessage,
    dumps,
    parse_message,
    start_message,
    user_message,
)
from .turns import UserTurns, user_turns

if TYPE_CHECKING:
    from ..sandbox import AgentSandbox

MAX_LINE_BYTES = 64 << 20  # one protocol line (a turn's events may be large, not unbounded)
_EOF = object()


class _Bad:
    """A stdout line that is meant as a message but cannot be one."""

    def __init__(self, reason: str):
        self.reason = reason


class StdioRunner:
    """Runs jobs against ``/bin/sh -c COMMAND`` (CONTRACT section 5)."""

    def __init__(self, command: str, *, cwd: Path | None = None,
                 env: Mapping[str, str] | None = None, exit_grace: float = 10.0,
                 kill_grace: float = 2.0, max_line_bytes: int = MAX_LINE_BYTES,
                 sandbox: AgentSandbox | None = None):
        self.command = command
        self.sandbox = sandbox
        self.cwd = cwd
        self.env = dict(os.environ if env is None else env)
        self.exit_grace = exit_grace
        self.kill_grace = kill_grace
        self.max_line_bytes = max_line_bytes
        become_subreaper()

    async def aclose(self) -> None:
        return None

    async def run(self, job: RunJob) -> RecordedRun:
        started = time.monotonic()

        def record(invocations: list, error: str | None = None, tail: str | None = None) -> RecordedRun:
            return RecordedRun(eval_set_id=job.eval_set_id, eval_id=job.eval_id, run=job.run,
                               invocations=invocations, error=error,
                               stderr_tail=tail if error else None,
                               duration_seconds=round(time.monotonic() - started, 3))

        try:
            turns = user_turns(job)
        except AgentFailure as exc:
            return record([], str(exc))
        env = {**self.env, "EVALCHECK_EVAL_SET_ID": job.eval_set_id,
               "EVALCHECK_EVAL_ID": job.eval_id, "EVALCHECK_RUN": str(job.run)}
        try:
            proc = await spawn(self.command, cwd=self.cwd, env=env, sandbox=self.sandbox)
        except OSError as exc:
            return record([], f"could not start the agent command: {exc.strerror or exc}")
        agent = _Agent(proc, self.max_line_bytes)
        invocations: list = []
        error: str | None = None
        try:
            invocations = await agent.converse(job, turns)
            await agent.finish(min(self.exit_grace, job.turn_timeout))
        except AgentFailure as exc:
            error = str(exc)
        finally:
            # Also on cancellation (Ctrl-C): nothing of this run may outlive it.
            await agent.close(self.kill_grace)
        return record(invocations or agent.invocations, error, agent.tail.text())


class _Agent:
    """One running agent process and the conversation with it."""

    def __init__(self, proc: asyncio.subprocess.Process, max_line_bytes: int):
        self.proc = proc
        self.pgid = proc.pid  # the shell leads its own process group
        self.tail = OutputTail()
        self.max_line_bytes = max_line_bytes
        # Small and bounded: a flooding agent blocks on its own stdout, not our memory.
        self.messages: asyncio.Queue[Any] = asyncio.Queue(maxsize=4)
        self.closing = False
        self.invocations: list = []
        self.exited = asyncio.ensure_future(wait_exit(proc))
        assert proc.stdout is not None and proc.stderr is not None
        self.readers = [asyncio.ensure_future(self._read_stdout(proc.stdout)),
                        asyncio.ensure_future(drain_into_tail(proc.stderr, self.tail))]

    # ------------------------------------------------------------ reading

    async def _read_stdout(self, stream: asyncio.StreamReader) -> None:
        await read_lines(stream, self.max_line_bytes, self._on_line, self._on_overlong)
        await self._put(_EOF)

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
                obj = _Bad(f"a reply {exc}")  # one bad reply fails its run, never the reader
            except ValueError:
                obj = None
            if isinstance(obj, _Bad):
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
            await self._put(_Bad(f"a stdout line longer than {self.max_line_bytes >> 20} MiB"))
        else:
            self.tail.add_line("[stdout] " + head.decode("utf-8", "replace") + "\u2026 (cut)")

    # ------------------------------------------------------------ the conversation

    def _status(self) -> str | None:
        if self.exited.done() and not self.exited.cancelled() and self.exited.exception() is None:
            return describe_status(self.exited.result())
        code = self.proc.returncode
        return None if code is None else describe_status(code)

    async def _send(self, message: dict, deadline: float, what: str) -> None:
        assert self.proc.stdin is not None
        loop = asyncio.get_running_loop()
        try:
            self.proc.stdin.write(dumps(message))
            await asyncio.wait_for(self.proc.stdin.drain(), max(deadline - loop.time(), 0.001))
        except (BrokenPipeError, ConnectionResetError):
            await asyncio.wait({self.exited}, timeout=0.5)
            status = self._status()
            raise AgentFailure(f"the agent {status or 'closed its stdin'} before reading {what}") from None
        except asyncio.TimeoutError:
            raise AgentFailure(f"the agent did not read {what} within the turn timeout "
                               "(it must read stdin)") from None

    async def _receive(self, deadline: float, turn: int, timeout: float) -> Any:
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
                if item is _EOF:
                    await asyncio.wait({self.exited}, timeout=0.5)
                    raise AgentFailure(f"the agent {self._status() or 'closed its stdout'} "
                                       f"without answering turn {turn}")
                return item
            if self.exited.done():
                raise AgentFailure(f"the agent {self._status()} without answering turn {turn}")
            raise AgentFailure(f"turn {turn}: no answer within {timeout:g} s (--turn-timeout)")
        finally:
            getter.cancel()

    async def converse(self, job: RunJob, turns: UserTurns) -> list:
        loop = asyncio.get_running_loop()
        spec = session_spec(job)
        timeout = job.turn_timeout
        await self._send(start_message(eval_set_id=job.eval_set_id, eval_id=job.eval_id,
                                       run=job.run, app_name=spec.app_name, user_id=spec.user_id,
                                       state=spec.state),
                         loop.time() + timeout, "the start message")
        turn = 0
        # The next user turn is asked for before the turn's clock starts: a simulated user's
        # thinking time is not the agent's.
        while (user_content := await turns.next(self.invocations)) is not None:
            turn += 1
            invocation_id = f"inv-{turn}"
            created = time.time()
            began = time.perf_counter()
            deadline = loop.time() + timeout
            await self._send(user_message(invocation_id, user_content), deadline,
                             f"turn {turn}")
            item = await self._receive(deadline, turn, timeout)
            while isinstance(item, dict) and item.get("type") == "ready" and turn == 1:
                # Optional: the agent is set up. Its start-up is not part of turn 1's time.
                began = time.perf_counter()
                item = await self._receive(deadline, turn, timeout)
            duration = round(time.perf_counter() - began, 3)
            if isinstance(item, _Bad):
                raise AgentFailure(f"turn {turn}: {item.reason}")
            try:
                message = parse_message(item)
            except ProtocolError as exc:
                raise AgentFailure(f"turn {turn}: invalid protocol message at {exc}") from None
            if isinstance(message, ErrorMessage):
                raise AgentFailure(f"the agent reported an error in turn {turn}: "
                                   f"{message.message[:300] or '(no message)'}")
            assert isinstance(message, ResponseMessage)
            if message.invocation_id != invocation_id:
                raise AgentFailure(f"turn {turn}: the response is for invocation "
                                   f"'{message.invocation_id[:60]}', expected '{invocation_id}'")
            try:
                self.invocations.append(to_invocation(message, invocation_id, user_content,
                                                      duration, created))
            except ConversionError as exc:
                raise AgentFailure(f"turn {turn}: invalid events at {exc}") from None
        return self.invocations

    async def finish(self, grace: float) -> None:
        """Close stdin (the agent should exit), then check how it ended."""
        self.closing = True
        while not self.messages.empty():  # unblock a reader stuck on a full queue
            self.messages.get_nowait()
        assert self.proc.stdin is not None
        with contextlib.suppress(Exception):
            self.proc.stdin.close()
        try:
            code = await asyncio.wait_for(asyncio.shield(self.exited), grace)
        except asyncio.TimeoutError:
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

    async def close(self, kill_grace: float) -> None:
        self.closing = True
        await kill_group(self.pgid, kill_grace)
        await reap(self.proc)
        while not self.messages.empty():  # a reader blocked on the full queue goes on
            self.messages.get_nowait()
        # Let the readers take in the last output, then stop them whatever holds the pipes.
        await asyncio.wait(self.readers, timeout=1.0)
        for task in (*self.readers, self.exited):
            task.cancel()
        await asyncio.gather(*self.readers, self.exited, return_exceptions=True)


def to_invocation(message: ResponseMessage, invocation_id: str, user_content: Any,
                  duration: float, created: float) -> Any:
    if message.events is not None:
        return events_to_invocation(message.events, invocation_id=invocation_id,
                                    user_content=user_content, duration=duration,
                                    creation_timestamp=created)
    return fields_to_invocation(invocation_id=invocation_id, user_content=user_content,
                                final_response=message.final_response,
                                tool_uses=message.tool_uses, tool_responses=message.tool_responses,
                                intermediate_responses=message.intermediate_responses,
                                usage=message.usage, duration=duration, creation_timestamp=created)
