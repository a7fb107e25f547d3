"""How busy an agent's process keeps a CPU: the seconds the processes it started ran on a
CPU or waited in the run queue for one (Linux's ``/proc/PID/task/TID/schedstat``, found from
the group's leader through each thread's ``children``: no scan of every process), so that
the limiter can tell an agent waiting on a model (its process mostly asleep: more sessions
at once cost it nothing) from one computing (limiter.py, ``note_agent_busy``). Elsewhere:
unknown (None).

The run queue's wait counts as busy: on a loaded machine an agent that computes gets less
CPU than it wants, and must not look idle for it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable

_SCHEDSTAT_FIELDS = 2  # ns on a CPU, ns waiting to run (then the timeslices)


def busy_seconds(pgid: int) -> float | None:
    """The seconds the processes of group ``pgid`` - its leader and the leader's descendants
    - have been busy (on a CPU or waiting for one), every thread's; None where the kernel
    does not tell (no /proc, no schedstat) or the leader is gone."""
    total = 0
    found = False
    pending, seen = [pgid], set()
    while pending:
        pid = pending.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue  # exited since (or no /proc)
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                    fields = f.read().split()
            except OSError:
                continue  # the thread ended
            if len(fields) >= _SCHEDSTAT_FIELDS:
                total += int(fields[0]) + int(fields[1])
                found = True
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                    pending.extend(int(child) for child in f.read().split())
            except OSError:
                continue
    return total / 1e9 if found else None


class BusyShare:
    """The share of one CPU each watched process group kept busy since the previous look
    (``share()``): the busiest one's, or None while nothing can be told."""

    def __init__(self, busy: Callable[[int], float | None] = busy_seconds,
                 clock: Callable[[], float] = time.monotonic):
        self._busy = busy
        self._clock = clock
        self._before: dict[int, tuple[float, float]] = {}  # pgid -> (at, busy seconds)

    def share(self, pgids: Iterable[int]) -> float | None:
        now = self._clock()
        shares = []
        seen: dict[int, tuple[float, float]] = {}
        for pgid in pgids:
            busy = self._busy(pgid)
            if busy is None:
                continue
            seen[pgid] = (now, busy)
            before = self._before.get(pgid)
            if before is not None and now > before[0]:
                shares.append(max(0.0, busy - before[1]) / (now - before[0]))
        self._before = seen  # a process first seen now is judged from the next look
        return max(shares) if shares else None
