"""``asyncio.run`` for coroutines that return something big (all results, all runs)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


def run(coro: Awaitable[T], runner: asyncio.Runner | None = None) -> T:
    """``asyncio.run(coro)`` (``runner.run``: on that runner's event loop), its result handed
    over outside the main task.

    Python 3.11's ``asyncio.Runner`` looks its SIGINT handler up twice on the way out
    (``signal.getsignal``), which formats a ``ValueError`` with the handler's repr: a
    partial holding the main task, whose repr holds the repr of the task's result. For
    10,000 replayed cases that is the repr of every result, twice: 2.2 s of a 30 s run
    (bench/bench_replay.py). The main task here returns None.
    """
    box: list[T] = []

    async def main() -> None:
        box.append(await coro)

    if runner is None:
        asyncio.run(main())
    else:
        runner.run(main())
    return box[0]
