"""``--agent-command``: agent processes speaking the stdio protocol.

A protocol-1 agent is started once per (case, run). An agent that answers ``start`` with
``{"type": "ready", "sessions": "many"}`` is a warm worker: after its run it is kept (up to
one per run in flight, so at most ``--concurrency``) and serves the next run, which saves
the interpreter start and imports on every run. One that adds ``"concurrent": N`` serves up
to N runs at once (agents/sessions.py); another process is started only when more runs
are in flight. What kind the agent is, the first process tells: until its first message,
the other runs wait for it rather than start processes of their own (``agent_kind``).

A process serves only runs of the eval set it was started for: the command and the
environment (``EVALCHECK_EVAL_SET_ID``) may choose another agent per eval set, so what kind
the agent is, and which kept process may take a run, is known per eval set. One that says
``"evalSets": "any"`` in a ready reads the eval set from each start message and serves every
eval set. A process started for another eval set retires one kept for an eval set with no
run in flight: no more processes stay alive than runs are in flight.

Whatever the agent does - crash, hang, flood its pipes, answer garbage, leave children
behind - ends only its own run, with a short reason and the tail of its log; its whole
process group is killed before the run is returned, and a warm worker that failed a run is
never reused.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ..models.records import RecordedRun
from ..models.refusal import ServiceRefusal
from .agent_process import AgentProcess, BecameShared
from .base import AgentFailure, RunJob, mark_cannot_start
from .our_commands import with_our_command
from .process import become_subreaper, spawn
from .protocol import concurrent_sessions, to_invocation
from .sessions import SharedWorker
from .turns import UserTurns, user_turns

if TYPE_CHECKING:
    from .early_start import EarlyAgent
    from .sandbox import AgentSandbox

__all__ = ["StdioRunner", "to_invocation"]

MAX_LINE_BYTES = 64 << 20  # one protocol line (a turn's events may be large, not unbounded)


@dataclass(frozen=True)
class Served:
    """What one run in an agent process came to."""

    invocations: list
    error: AgentFailure | None = None
    cannot_start: str | None = None  # why the process could not start, when it could not
    unheard: bool = False  # the process failed before a word of this run (another one may serve it)
    told: int = 0  # model calls refused that the agent retried itself (told): the run's refusals


class StdioRunner:
    """Runs jobs against ``/bin/sh -c COMMAND`` (CONTRACT section 5)."""

    def __init__(self, command: str, *, cwd: Path | None = None,
                 env: Mapping[str, str] | None = None, exit_grace: float = 10.0,
                 kill_grace: float = 2.0, max_line_bytes: int = MAX_LINE_BYTES,
                 sandbox: AgentSandbox | None = None, sessions: int | None = None,
                 early: EarlyAgent | None = None):
        # The most runs evalcheck may have in flight: every start message says so, and an
        # agent serving concurrent sessions may take that many in one process.
        self.sessions = sessions
        self.sandbox = sandbox
        self.cwd = cwd
        self.env = dict(os.environ if env is None else env)
        # evalcheck-adk(-ts) beside evalcheck when PATH does not have it (agents/our_commands.py).
        self.command = with_our_command(command, self.env.get("PATH"))
        self.exit_grace = exit_grace
        self.kill_grace = kill_grace
        self.max_line_bytes = max_line_bytes
        self.early = early  # the process started while the inputs were read, for the first run
        # Told each model-service refusal an agent retries itself (the run's ServiceWaits,
        # set by the scheduler); the start messages then ask agents to tell them.
        self.on_refusal: Callable[[ServiceRefusal, bool], None] | None = None
        # Warm workers between two runs. Never more than the runs in flight, since a
        # worker is only put back by the run it served.
        self._idle: list[AgentProcess] = []
        self._shared: list[SharedWorker] = []  # processes serving concurrent sessions
        # A process serves only runs of the eval set it was started for (its environment
        # says which), unless it says it serves any: so what kind the agent is, and which
        # process may take a run, is known per eval set.
        self._kind: asyncio.Future[tuple[str, int | None]] | None = None
        self._kinds: dict[str, asyncio.Future[tuple[str, int | None]]] = {}
        self._probing: set[str] = set()  # eval sets whose first process is telling the kind
        self._retiring: set[asyncio.Future] = set()
        # A process being started to serve concurrent sessions, by eval set: the runs that
        # find no room wait for its sessions rather than each start a process.
        self._starting: dict[str, asyncio.Future[None]] = {}
        self._sessions = 0
        self._closed = False
        become_subreaper()

    def agent_kind(self, eval_set_id: str | None = None) -> asyncio.Future[tuple[str, int | None]]:
        """What the first process said it is: ("concurrent", N), ("warm", None) or
        ("process", None) (a process per run); ("unknown", None) when it failed first.
        With ``eval_set_id``: the first process started for that eval set (each eval set's
        processes run in its own environment, so they may be another program)."""
        if eval_set_id is None:
            if self._kind is None:
                self._kind = asyncio.get_running_loop().create_future()
            return self._kind
        future = self._kinds.get(eval_set_id)
        if future is None:
            future = self._kinds[eval_set_id] = asyncio.get_running_loop().create_future()
        return future

    def serving_processes(self) -> list[int]:
        """The process groups of the agent processes serving concurrent sessions with runs
        in them (how busy they are tells the limiter whether more sessions cost them)."""
        return [worker.agent.proc.pid for worker in self._shared if not worker.idle()]

    def _learn(self, eval_set_id: str, kind: str, n: int | None = None) -> None:
        self._probing.discard(eval_set_id)
        for future in (self.agent_kind(), self.agent_kind(eval_set_id)):
            if not future.done():
                future.set_result((kind, n))

    def _on_first(self, eval_set_id: str, item: object) -> None:
        n = concurrent_sessions(item)
        if n is not None:
            return  # learnt once its SharedWorker is there to take runs
        many = isinstance(item, dict) and item.get("type") == "ready" \
            and item.get("sessions") == "many"
        self._learn(eval_set_id, "warm" if many else "process")

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        shared, self._shared = self._shared, []
        for worker in shared:
            worker.dispatcher.cancel()
        await asyncio.gather(*(w.retire(min(self.exit_grace, 2.0), self.kill_grace) for w in idle),
                             *(w.agent.retire(min(self.exit_grace, 2.0), self.kill_grace)
                               for w in shared), *self._retiring)

    async def _idle_worker(self, eval_set_id: str) -> AgentProcess | None:
        while True:
            worker = next((w for w in reversed(self._idle) if w.serves(eval_set_id)), None)
            if worker is None:
                return None
            self._idle.remove(worker)
            if worker.reusable():
                return worker
            await worker.close(self.kill_grace)  # exited, or spoke between runs

    def _make_room(self, eval_set_id: str) -> None:
        """Before a process is started for ``eval_set_id``: retire one kept process that may
        not serve it (another eval set's), so that no more processes stay alive than runs
        are in flight, however many eval sets the run has."""
        other = next((w for w in self._idle if not w.serves(eval_set_id)), None)
        if other is not None:
            self._idle.remove(other)
            agent = other
        else:
            shared = next((w for w in self._shared
                           if w.idle() and not w.agent.serves(eval_set_id)), None)
            if shared is None:
                return
            self._shared.remove(shared)
            shared.dispatcher.cancel()
            agent = shared.agent
        task = asyncio.ensure_future(agent.retire(min(self.exit_grace, 2.0), self.kill_grace))
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)

    async def run(self, job: RunJob) -> RecordedRun:  # noqa: C901 -- a branch an outcome
        started = time.monotonic()

        def record(invocations: list, error: AgentFailure | str | None = None,
                   tail: str | None = None, told: int = 0) -> RecordedRun:
            # A run the model service refused is unavailable, not errored (its error says so).
            refusal = error.refusal if isinstance(error, AgentFailure) else None
            return job.record(invocations=invocations, error=None if error is None else str(error),
                               unavailable=refusal, stderr_tail=tail if error else None,
                               duration_seconds=round(time.monotonic() - started, 3),
                               refusals=told or None)

        try:
            turns = user_turns(job)
        except AgentFailure as exc:
            return record([], str(exc))
        key = job.eval_set_id
        kind = self.agent_kind(key)
        tries = 0
        while True:
            shared = next((w for w in self._shared if w.serves(job)), None)
            if shared is not None and tries < 3:
                tries += 1
                served = await self._serve_shared(shared, job, turns)
                if served.unheard:  # the process failed before this run's ready: another one
                    continue
                return record(served.invocations, served.error, shared.agent.tail.text(),
                              served.told)
            if key in self._probing and not kind.done():
                # The first process has not said yet whether it serves concurrent sessions.
                await asyncio.shield(kind)
                continue
            if kind.done() and kind.result()[0] == "concurrent" and tries < 3:
                # Known to serve concurrent sessions: a new process takes this run and the
                # next ones at once, each run's start answered with its ready. One at a
                # time: never a process per run beyond what the processes serve.
                starting = self._starting.get(key)
                if starting is not None:
                    await asyncio.shield(starting)
                    continue
                tries += 1
                failed = await self._start_shared(job, kind.result()[1] or 1)
                if failed is not None:
                    return mark_cannot_start(record([], failed), failed)
                continue
            agent = await self._idle_worker(key)
            reused = agent is not None
            if agent is None:
                probe = not kind.done()
                if probe:
                    self._probing.add(key)
                self._make_room(key)
                try:
                    agent = await self._start_agent(job)
                except OSError as exc:
                    if probe:
                        self._learn(key, "unknown")
                    cannot = f"could not start the agent command: {exc.strerror or exc}"
                    return mark_cannot_start(record([], cannot), cannot)
                if probe:
                    agent.on_first = partial(self._on_first, key)
            try:
                served = await self._serve(agent, job, turns)
            finally:
                if agent.on_first is not None:  # it failed before its first message
                    agent.on_first = None
                    self._learn(key, "unknown")
            if reused and served.unheard:
                # A warm worker that exited, spoke or stalled between runs (before this
                # run's ready): it is replaced, and the run goes to a new process.
                continue
            run = record(served.invocations, served.error, agent.tail.text(), served.told)
            return mark_cannot_start(run, served.cannot_start) if served.cannot_start else run

    async def _serve(self, agent: AgentProcess, job: RunJob,
                     turns: UserTurns) -> Served:
        """One run in ``agent``."""
        agent.begin_run()
        invocations: list = []
        error: AgentFailure | None = None
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
                agent.drop_probe()
                self._shared.append(worker)
                self._learn(job.eval_set_id, "concurrent", shared.concurrent)
                worker.join(session_id, job)
                worker.heard.add(session_id)
                owned = False  # the SharedWorker owns the process now
                in_session = await self._in_session(worker, job, turns, session_id, shared.turn1)
                return Served(in_session.invocations, in_session.error,
                              told=agent.told + in_session.told)
            if agent.many:
                await agent.end_run(job.turn_timeout)
                keep = not self._closed
            else:
                await agent.finish(min(self.exit_grace, job.turn_timeout))
        except AgentFailure as exc:
            error = exc
            # Before the kill: a hang is not this. A refused model call is no failure to start.
            cannot_start = agent.cannot_start() if exc.refusal is None else None
            unheard = not agent.heard
        finally:
            if keep:
                self._idle.append(agent)
            elif owned:
                # Also on cancellation (Ctrl-C): nothing of this run may outlive it.
                await agent.close(self.kill_grace)
        return Served(invocations or agent.invocations, error, cannot_start, unheard,
                      told=agent.told)

    async def _start_shared(self, job: RunJob, capacity: int) -> str | None:
        key = job.eval_set_id
        starting = self._starting[key] = asyncio.get_running_loop().create_future()
        try:
            self._make_room(key)
            try:
                agent = await self._start_agent(job)
            except OSError as exc:
                return f"could not start the agent command: {exc.strerror or exc}"
            agent.drop_probe()
            self._shared.append(SharedWorker(agent, capacity))
            return None
        finally:
            del self._starting[key]
            starting.set_result(None)

    async def _start_agent(self, job: RunJob) -> AgentProcess:
        """A process for ``job``'s eval set: the one started early when it is this command's
        (its first start message gives it the run's variables), else a new one."""
        proc = None
        if self.early is not None and self.sandbox is None:
            proc = self.early.take(self.command, self.env, self.cwd)
        agent = AgentProcess(proc or await spawn(self.command, cwd=self.cwd, env=self._env(job),
                                                 sandbox=self.sandbox), self.max_line_bytes)
        agent.loads_at_start = proc is not None
        agent.on_refusal = self.on_refusal
        agent.offered = self.sessions
        agent.started_for = job.eval_set_id
        return agent

    def _env(self, job: RunJob) -> dict[str, str]:
        return {**self.env, "EVALCHECK_EVAL_SET_ID": job.eval_set_id,
                "EVALCHECK_EVAL_ID": job.eval_id, "EVALCHECK_RUN": str(job.run)}

    async def _serve_shared(self, worker: SharedWorker, job: RunJob,
                            turns: UserTurns) -> Served:
        """One run in a process serving concurrent sessions."""
        self._sessions += 1
        session_id = f"s{self._sessions}"
        worker.join(session_id, job)
        return await self._in_session(worker, job, turns, session_id, None)

    async def _in_session(self, worker: SharedWorker, job: RunJob, turns: UserTurns,
                          session_id: str, turn1) -> Served:
        invocations: list = []
        error: AgentFailure | None = None
        unheard = False
        try:
            invocations = await worker.converse(job, turns, session_id, turn1)
        except AgentFailure as exc:
            error = exc
            unheard = worker.broken is not None and session_id not in worker.heard
        except BaseException:
            worker.give_up("the run was cancelled")  # Ctrl-C: nothing may outlive it
            raise
        finally:
            told = worker.told.pop(session_id, 0)
            worker.leave(session_id)
            if worker.broken is not None and not worker.inboxes:
                if worker in self._shared:
                    self._shared.remove(worker)
                worker.dispatcher.cancel()
                await worker.agent.close(self.kill_grace)
        return Served(invocations, error, unheard=unheard, told=told)
