"""Custom metrics out of the checker's process, as the agent's user (the Action's sandbox).

A custom metric is the repository's own Python, like the agent: it is never imported by
the checker, in any mode (agent, server, replay; the Action or the command line). Where
agents run as the unprivileged ``evalcheck-agent`` user, so do custom metrics, and a checker
running as root in evalcheck's image runs them as that user even without agents
(``metric_worker``). ``CustomMetricWorker`` starts ``python -m
checker.scoring.custom_metric_child ROOT [SOURCES]`` (evalcheck's own Python, so the
imports are the ones the metric would get in process; without the current directory or the
user's site-packages on its path) and sends it one run at a time, a JSON line each way.
SOURCES is the private copy of the metrics' packages (checker/scoring/metric_sources.py);
each request names the folder of that copy its metric is imported from (one per origin
folder: two agents of a monorepo may both have an ``eval`` package), and ROOT is never on
the path when there is a copy. The worker's answer is untrusted: it is read with a size limit and
validated, and a worker that dies, hangs past the metric's deadline or answers garbage fails
that one metric and is started again for the next.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..metrics.base import RunInput, RunScore

if TYPE_CHECKING:
    from ..agents.sandbox import AgentSandbox

MAX_REPLY = 1 << 20  # bytes of one answer line


class CustomMetricWorker:
    """Runs custom metrics in a child process started with ``popen`` keyword arguments
    (the sandbox's user and group) and ``env``; one call at a time."""

    def __init__(self, root: Path, *, sources: Path | None = None, env: dict[str, str] | None = None,
                 popen: dict[str, Any] | None = None):
        self.root, self.sources, self.env, self.popen = root, sources, env, popen or {}
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()

    async def _start(self) -> asyncio.subprocess.Process:
        if self._proc is None or self._proc.returncode is not None:
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable, "-P", "-s", "-m", "checker.scoring.custom_metric_child", str(self.root),
                *([str(self.sources)] if self.sources is not None else []),
                cwd=self.root, env=self.env, stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
                limit=MAX_REPLY, start_new_session=True, **self.popen)
        return self._proc

    async def score(self, path: str, name: str, criterion: Any, run: RunInput,
                    origin: Path | None = None) -> RunScore:
        """``origin``: the folder the metric's package is found in (inputs/metric_origin.py);
        it is imported from that folder's copy (or, without a copy, from the folder)."""
        from .metric_sources import copy_folder

        search = (copy_folder(self.sources, self.root, origin) if self.sources is not None
                  else origin or self.root)
        request = {"path": path, "name": name, "from": str(search),
                   "criterion": criterion.model_dump(mode="json"),
                   "actual": [i.model_dump(mode="json", by_alias=True) for i in run.actual],
                   "expected": None if run.expected is None else
                   [i.model_dump(mode="json", by_alias=True) for i in run.expected],
                   "scenario": None if run.scenario is None else
                   run.scenario.model_dump(mode="json", by_alias=True)}
        return await self._ask(request, f"custom metric '{path}'")

    async def score_function(self, source: str, name: str, instance: dict[str, Any]) -> RunScore:
        """An agents-cli custom_function: ``evaluate(instance)`` (scoring/agents_cli_function.py)."""
        request = {"kind": "agents_cli_function", "name": name, "source": source, "instance": instance}
        return await self._ask(request, f"custom_function '{name}'")

    async def _ask(self, request: dict[str, Any], label: str) -> RunScore:
        async with self._lock:
            proc = await self._start()
            try:
                assert proc.stdin is not None and proc.stdout is not None
                proc.stdin.write(json.dumps(request).encode("utf-8") + b"\n")
                await proc.stdin.drain()
                line = await proc.stdout.readline()
            except (asyncio.CancelledError, Exception) as exc:
                await self._stop()  # stuck or broken: the next metric gets a fresh worker
                if isinstance(exc, (asyncio.LimitOverrunError, ValueError)):
                    return RunScore(error=f"{label} answered more than "
                                          f"{MAX_REPLY} bytes")
                if isinstance(exc, (ConnectionError, OSError)):
                    return RunScore(error=f"{label}: its worker process failed "
                                          f"({type(exc).__name__})")
                raise
        if not line:
            await self._stop()
            return RunScore(error=f"{label}: its worker process exited "
                                  "(did the metric call sys.exit or crash the interpreter?)")
        try:
            reply = json.loads(line)
            if "score" not in reply:
                return RunScore(error=str(reply["error"])[:2000])
            score = RunScore.model_validate(reply["score"])
            numbers = [score.score, *(i.score for i in score.invocations)]
            if not all(n is None or math.isfinite(n) for n in numbers):  # Infinity is JSON to Python
                raise ValueError("a score that is not a finite number")
            return score
        except (ValueError, KeyError, TypeError, ValidationError):
            await self._stop()
            return RunScore(error=f"{label}: its worker answered something "
                                  "that is not a score")

    async def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        from ..agents.process import kill_group

        with contextlib.suppress(ProcessLookupError, PermissionError):
            await kill_group(proc.pid)
        with contextlib.suppress(ProcessLookupError):
            await proc.wait()

    async def aclose(self) -> None:
        """End the worker (it is bound to this event loop; a later loop starts a new one)."""
        self._lock = asyncio.Lock()
        proc = self._proc
        if proc is not None and proc.returncode is None and proc.stdin is not None:
            proc.stdin.close()  # the worker's loop ends at end of input
            try:
                await asyncio.wait_for(proc.wait(), 5.0)
            except TimeoutError:
                pass
        await self._stop()


def metric_worker(root: Path, sandbox: AgentSandbox | None = None, *,
                  sources: Path | None = None) -> CustomMetricWorker:
    """The worker custom metrics run in: as the sandbox's user with its scrubbed environment;
    without a sandbox, as ``evalcheck-agent`` when the checker is root in evalcheck's image
    (e.g. ``evalcheck run`` in a Kubernetes Job), else as the caller."""
    if sandbox is None:
        from ..agents.sandbox import unprivileged_sandbox

        sandbox = unprivileged_sandbox(root)
    if sandbox is None:
        return CustomMetricWorker(root, sources=sources)
    return CustomMetricWorker(root, sources=sources, env=sandbox.environ(os.environ),
                              popen=sandbox.popen_kwargs())
