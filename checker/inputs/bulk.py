"""Building bulk data (large results or recorded-runs files) without the cyclic collector."""

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
