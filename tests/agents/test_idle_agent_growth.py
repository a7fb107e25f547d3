"""The default concurrency of an agent serving concurrent sessions grows at once while its
process mostly waits (on a model), not a run at a time once runs finish - and an agent that
computes grows no faster than before (scheduler.py's load watch, limiter.py's
``note_agent_busy``, agents/cpu_use.py)."""

from __future__ import annotations

import asyncio
import io
import os
import shlex
from pathlib import Path

import pytest

from checker.agents.schedule import Progress, plan_jobs, schedule_runs
from checker.agents.stdio import StdioRunner
from checker.commands.stage_options import agent_options
from checker.inputs.discover import discover
from checker.options import RunOptions

from .helpers import AGENTS, PY, case, write_eval_set

# what cpu_use reads: each thread's schedstat, and its children (the agent under /bin/sh)
pytestmark = pytest.mark.skipif(
    not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
    or not os.path.exists("/proc/self/schedstat"), reason="the kernel tells no schedstat or children")

AGENT = f"{shlex.quote(PY)} {shlex.quote(str(AGENTS / 'concurrent_agent.py'))} --concurrent 32"


def limits(tmp_path: Path, flags: str, cases: int) -> list[tuple[float, int]]:
    """(seconds since the start was settled, the limit from then on) of a default run of
    ``cases`` one-turn cases, up to 32 at once."""
    path = write_eval_set(tmp_path / "evals", "set", [case(f"c{i}", turns=1) for i in range(cases)])
    targets = discover([str(path)], root=tmp_path).targets
    command = f"{AGENT} {flags}"
    opts = agent_options(RunOptions(paths=[str(path)], agent_command=command,
                                          max_concurrency=32, num_runs=1))
    runner = StdioRunner(command, cwd=tmp_path, kill_grace=0.5, sessions=32)
    progress = Progress(plan_jobs(targets, opts), stream=io.StringIO(), interactive=False)
    scheduled = asyncio.run(schedule_runs(targets, opts, runner=runner, progress=progress))
    assert [r.error for r in scheduled.runs] == [None] * cases
    changes = scheduled.concurrency.changes
    began = changes[0][0]  # the start (8), once the agent said it serves sessions
    assert changes[0][1] == 8
    return [(round(at - began, 3), limit) for at, limit in changes]


def test_an_agent_waiting_on_its_model_reaches_the_cap_before_a_run_finishes(tmp_path):
    # each turn waits 1.5 s, no CPU: the old slow start grew only once runs finished
    changes = limits(tmp_path, "--wait 1.5", 48)
    assert max(limit for _, limit in changes) == 32
    reached = next(at for at, limit in changes if limit == 32)
    assert reached < 1.2, changes
    assert any(after - before >= 4 for (_, before), (_, after) in zip(changes, changes[1:], strict=False))


def test_an_agent_on_cpu_grows_a_run_at_a_time_as_before(tmp_path):
    # each turn computes for 40 ms, one at a time: the process is busy, never idle
    changes = limits(tmp_path, "--spin 0.04", 48)
    steps = [after - before for (_, before), (_, after) in zip(changes, changes[1:], strict=False)]
    assert steps and all(step <= 1 for step in steps), changes
