"""Building bulk data (large results or recorded-runs files) with little or no cyclic collection."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection while bulk data is built. With large files alive
    (millions of objects), the collector's full passes, set off by the allocations
    themselves, took most of the time: a 10,000-case comparison 2.7 s -> 1.0 s
    (bench/bench_compare.py), merging 8 shards with their recorded runs 2.3 s -> 0.7 s
    (bench/bench_shards.py). Parsed JSON and validated models hold no reference cycles;
    collection resumes after.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# Allocations between two collections of the youngest generation during a run (CPython's
# default: 700).
RUN_GC_THRESHOLD = 100_000


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """The cyclic collector run less often while a run reads, scores and writes. At the
    default, the objects of the cases being scored live just long enough to be moved to the
    oldest generation, and that sets off full passes over everything alive: 60% of the CPU
    of replaying 10,000 cases (bench/bench_replay.py: 32 s -> 13 s, same peak memory). The
    collector still runs, so reference cycles (a judge client's, a traceback's) are freed."""
    thresholds = gc.get_threshold()
    gc.set_threshold(max(thresholds[0], RUN_GC_THRESHOLD), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
