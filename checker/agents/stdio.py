"""``--agent-command``: agent processes speaking the stdio protocol.

A protocol-1 agent is started once per (case, run). An agent that answers ``start`` with
``{"type": "ready", "sessions": "many"}`` is a warm worker: after its run it is kept (up to
one per run in flight, so at most ``--concurrency``) and serves the next run, which saves
the interpreter start and imports on every run. One that adds ``"concurrent": N`` serves up
to N runs at once (agents/sessions.py); another process is started only when more runs
are in flight. What kind the agent is, the first process tells: until its first message,
the other runs wait for it rather than start processes of their own (``agent_kind``).

Whatever the agent does - crash, hang, flood its pipes, answer garbage, leave children
behind - ends only its own run, with a short reason and the tail of its log; its whole
process group is killed before the run is returned, and a warm worker that failed a run is
never reused.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..models.records import RecordedRun
from .agent_process import AgentProcess, BecameShared
from .base import AgentFailure, RunJob, mark_cannot_start
from .process import become_subreaper, spawn
from .protocol import concurrent_sessions, to_invocation
from .sessions import SharedWorker
from .turns import UserTurns, user_turns

if TYPE_CHECKING:
    from .sandbox import AgentSandbox

__all__ = ["StdioRunner", "to_invocation"]

MAX_LINE_BYTES = 64 << 20  # one protocol line (a turn's events may be large, not unbounded)


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
        # Warm workers between two runs. Never more than the runs in flight, since a
        # worker is only put back by the run it served.
        self._idle: list[AgentProcess] = []
        self._shared: list[SharedWorker] = []  # processes serving concurrent sessions
        self._kind: asyncio.Future[tuple[str, int | None]] | None = None
        self._probing = False  # a first process is on its way to telling the kind
        self._sessions = 0
        self._closed = False
        become_subreaper()

    def agent_kind(self) -> asyncio.Future[tuple[str, int | None]]:
        """What the first process said it is: ("concurrent", N), ("warm", None) or
        ("process", None) (a process per run); ("unknown", None) when it failed first."""
        if self._kind is None:
            self._kind = asyncio.get_running_loop().create_future()
        return self._kind

    def _learn(self, kind: str, n: int | None = None) -> None:
        self._probing = False
        future = self.agent_kind()
        if not future.done():
            future.set_result((kind, n))

    def _on_first(self, item: object) -> None:
        n = concurrent_sessions(item)
        if n is not None:
            return  # learnt once its SharedWorker is there to take runs
        many = isinstance(item, dict) and item.get("type") == "ready" \
            and item.get("sessions") == "many"
        self._learn("warm" if many else "process")

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        shared, self._shared = self._shared, []
        for worker in shared:
            worker.dispatcher.cancel()
        await asyncio.gather(*(w.retire(min(self.exit_grace, 2.0), self.kill_grace) for w in idle),
                             *(w.agent.retire(min(self.exit_grace, 2.0), self.kill_grace)
                               for w in shared))

    async def _idle_worker(self) -> AgentProcess | None:
        while self._idle:
            worker = self._idle.pop()
            if worker.reusable():
                return worker
            await worker.close(self.kill_grace)  # exited, or spoke between runs
        return None

    async def run(self, job: RunJob) -> RecordedRun:
        started = time.monotonic()

        def record(invocations: list, error: str | None = None, tail: str | None = None) -> RecordedRun:
            return job.record(invocations=invocations, error=error,
                               stderr_tail=tail if error else None,
                               duration_seconds=round(time.monotonic() - started, 3))

        try:
            turns = user_turns(job)
        except AgentFailure as exc:
            return record([], str(exc))
        kind = self.agent_kind()
        tries = 0
        while True:
            shared = next((w for w in self._shared if w.has_room()), None)
            if shared is not None and tries < 3:
                tries += 1
                invocations, error, unheard = await self._serve_shared(shared, job, turns)
                if unheard:  # the process failed before this run's ready: another one
                    continue
                return record(invocations, error, shared.agent.tail.text())
            if self._probing and not kind.done():
                # The first process has not said yet whether it serves concurrent sessions.
                await asyncio.shield(kind)
                continue
            if kind.done() and kind.result()[0] == "concurrent" and tries < 3:
                # Known to serve concurrent sessions: a new process takes this run and the
                # next ones at once, each run's start answered with its ready.
                tries += 1
                failed = await self._start_shared(job, kind.result()[1] or 1)
                if failed is not None:
                    return mark_cannot_start(record([], failed), failed)
                continue
            agent = await self._idle_worker()
            reused = agent is not None
            if agent is None:
                probe = not kind.done()
                self._probing = probe
                try:
                    proc = await spawn(self.command, cwd=self.cwd, env=self._env(job),
                                       sandbox=self.sandbox)
                except OSError as exc:
                    if probe:
                        self._learn("unknown")
                    error = f"could not start the agent command: {exc.strerror or exc}"
                    return mark_cannot_start(record([], error), error)
                agent = AgentProcess(proc, self.max_line_bytes)
                if probe:
                    agent.on_first = self._on_first
            try:
                invocations, error, cannot_start, unheard = await self._serve(agent, job, turns)
            finally:
                if agent.on_first is not None:  # it failed before its first message
                    agent.on_first = None
                    self._learn("unknown")
            if reused and unheard:
                # A warm worker that exited, spoke or stalled between runs (before this
                # run's ready): it is replaced, and the run goes to a new process.
                continue
            run = record(invocations, error, agent.tail.text())
            return mark_cannot_start(run, cannot_start) if cannot_start else run

    async def _serve(self, agent: AgentProcess, job: RunJob,
                     turns: UserTurns) -> tuple[list, str | None, str | None, bool]:
        """One run in ``agent``: (invocations, error, why it could not start, whether it
        failed before a word of this run)."""
        agent.begin_run()
        invocations: list = []
        error: str | None = None
        cannot_start: str | None = None
        unheard = False
        keep = False
        owned = True  # this run closes the process when it does not keep it
        self._sessions += 1
        session_id = f"s{self._sessions}"
        try:
            try:
                invocations = await agent.converse(job, turns, session_id)
            except BecameShared as shared:
                worker = SharedWorker(agent, shared.concurrent)
                agent._drop_probe()
                self._shared.append(worker)
                self._learn("concurrent", shared.concurrent)
                worker.join(session_id, job)
                worker.heard.add(session_id)
                owned = False  # the SharedWorker owns the process now
                invocations, error, _ = await self._in_session(worker, job, turns, session_id,
                                                                shared.turn1)
                return invocations, error, None, False
            if agent.many:
                await agent.end_run(job.turn_timeout)
                keep = not self._closed
            else:
                await agent.finish(min(self.exit_grace, job.turn_timeout))
        except AgentFailure as exc:
            error = str(exc)
            cannot_start = agent.cannot_start()  # before the kill: a hang is not this
            unheard = not agent.heard
        finally:
            if keep:
                self._idle.append(agent)
            elif owned:
                # Also on cancellation (Ctrl-C): nothing of this run may outlive it.
                await agent.close(self.kill_grace)
        return invocations or agent.invocations, error, cannot_start, unheard

    async def _start_shared(self, job: RunJob, capacity: int) -> str | None:
        try:
            proc = await spawn(self.command, cwd=self.cwd, env=self._env(job), sandbox=self.sandbox)
        except OSError as exc:
            return f"could not start the agent command: {exc.strerror or exc}"
        agent = AgentProcess(proc, self.max_line_bytes)
        agent._drop_probe()
        self._shared.append(SharedWorker(agent, capacity))
        return None

    def _env(self, job: RunJob) -> dict[str, str]:
        return {**self.env, "EVALCHECK_EVAL_SET_ID": job.eval_set_id,
                "EVALCHECK_EVAL_ID": job.eval_id, "EVALCHECK_RUN": str(job.run)}

    async def _serve_shared(self, worker: SharedWorker, job: RunJob,
                            turns: UserTurns) -> tuple[list, str | None, bool]:
        """One run in a process serving concurrent sessions: (invocations, error, whether the
        process failed before a word of this run)."""
        self._sessions += 1
        session_id = f"s{self._sessions}"
        worker.join(session_id, job)
        return await self._in_session(worker, job, turns, session_id, None)

    async def _in_session(self, worker: SharedWorker, job: RunJob, turns: UserTurns,
                          session_id: str, turn1) -> tuple[list, str | None, bool]:
        invocations: list = []
        error: str | None = None
        unheard = False
        try:
            invocations = await worker.converse(job, turns, session_id, turn1)
        except AgentFailure as exc:
            error = str(exc)
            unheard = worker.broken is not None and session_id not in worker.heard
        except BaseException:
            worker.give_up("the run was cancelled")  # Ctrl-C: nothing may outlive it
            raise
        finally:
            worker.leave(session_id)
            if worker.broken is not None and not worker.inboxes:
                if worker in self._shared:
                    self._shared.remove(worker)
                worker.dispatcher.cancel()
                await worker.agent.close(self.kill_grace)
        return invocations, error, unheard
