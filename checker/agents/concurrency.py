"""Where the default concurrency starts: what fits the agent (docs/agent-protocol.md, "How
many runs at once"), and no more runs than the open-file limit allows."""

from __future__ import annotations

import asyncio
import os
from typing import NamedTuple

from ..safety.limits import fd_concurrency
from ..safety.output import say
from .base import AgentRunner

API_CONCURRENCY = 4  # --agent-url: ADK's own eval runs 4 inferences at once


def cpus() -> int:
    """CPUs this process may run on (taskset and cpusets count; a CPU quota does not)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def limit_to_files(concurrency: int) -> int:
    allowed, warning = fd_concurrency(concurrency)
    if warning:
        say(f"evalcheck: warning: {warning}", err=True)
    return allowed


class Start(NamedTuple):
    """Where the default concurrency starts (``settle``)."""

    runs: int  # at once
    why: str | None  # said to the user, e.g. "the agent serves 8 runs at once in one process"
    as_asked: bool  # the agent serves as many sessions as it was offered


async def settle(runner: AgentRunner, first: list[asyncio.Future],
                 asked: int | None = None) -> Start:
    """Where the default concurrency starts, once the first agent process has said what kind
    it is (the first run goes alone until then): N for one serving N concurrent sessions,
    else the CPUs (a process per run in flight). With why, unless the agent failed before
    saying (the run is likely to stop there: agents/failfast.py), and whether it serves as
    many sessions as it was ``asked`` to (then it can take whatever the limit grows to)."""
    kind_of = getattr(runner, "agent_kind", None)
    what = "process"
    if kind_of is not None:
        kind = kind_of()
        await asyncio.wait([kind, *first], return_when=asyncio.FIRST_COMPLETED)
        what, n = kind.result() if kind.done() else ("unknown", None)
        if what == "concurrent" and n:
            return Start(n, f"the agent serves {n} runs at once in one process", n == asked)
    n = cpus()
    if what == "unknown":
        return Start(n, None, False)
    return Start(n, f"{n} CPU{'s' if n != 1 else ''}, a process per run in flight", False)
