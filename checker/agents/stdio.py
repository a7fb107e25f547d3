"""``--agent-command``: agent processes speaking the stdio protocol.

A protocol-1 agent is started once per (case, run). An agent that answers ``start`` with
``{"type": "ready", "sessions": "many"}`` is a warm worker: after its run it is kept (up to
one per run in flight, so at most ``--concurrency``) and serves the next run, which saves
the interpreter start and imports on every run.

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
from .agent_process import AgentProcess, to_invocation
from .base import AgentFailure, RunJob, mark_cannot_start
from .process import become_subreaper, spawn
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
        self._closed = False
        become_subreaper()

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        await asyncio.gather(*(w.retire(min(self.exit_grace, 2.0), self.kill_grace) for w in idle))

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
        while True:
            agent = await self._idle_worker()
            reused = agent is not None
            if agent is None:
                env = {**self.env, "EVALCHECK_EVAL_SET_ID": job.eval_set_id,
                       "EVALCHECK_EVAL_ID": job.eval_id, "EVALCHECK_RUN": str(job.run)}
                try:
                    proc = await spawn(self.command, cwd=self.cwd, env=env, sandbox=self.sandbox)
                except OSError as exc:
                    error = f"could not start the agent command: {exc.strerror or exc}"
                    return mark_cannot_start(record([], error), error)
                agent = AgentProcess(proc, self.max_line_bytes)
            invocations, error, cannot_start, unheard = await self._serve(agent, job, turns)
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
        try:
            invocations = await agent.converse(job, turns)
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
            else:
                # Also on cancellation (Ctrl-C): nothing of this run may outlive it.
                await agent.close(self.kill_grace)
        return invocations or agent.invocations, error, cannot_start, unheard
