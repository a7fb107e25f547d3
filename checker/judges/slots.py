"""The run's limit on judge calls in flight, adapting to the judge services (issue 38.3):
the run's one AdaptiveLimiter kind (checker/limiter.py), started at and capped by
``--judge-concurrency``, cut when a judge service refuses a call (429, 503: less at once, no
growth for the delay it asked) and grown back while answers come at a flat latency. Every
judge-backed metric shares it (Gemini, Vertex AI, provider/model judges), as an async
context manager around each request in flight, or a slot held by one call through its
attempts and backoffs (``held_slot``: a refused call is still in flight)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from ..limiter import AdaptiveLimiter, HeldSlot


class JudgeSlots:
    def __init__(self, concurrency: int):
        self.limiter = AdaptiveLimiter(concurrency, concurrency)

    async def __aenter__(self) -> JudgeSlots:
        await self.limiter.acquire()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.limiter.release()

    def held_slot(self) -> HeldSlot:
        """A slot for one call's attempts, kept through its backoffs (limiter.HeldSlot)."""
        return HeldSlot(self.limiter)

    def note_refusal(self, retry_after: float | None) -> None:
        self.limiter.note_refusal(retry_after)

    def note_latency(self, seconds: float) -> None:
        self.limiter.note_latency(seconds)

    @property
    def limit(self) -> int:
        return self.limiter.limit

    def metadata(self) -> dict[str, object]:
        """``metadata.judge.adaptiveConcurrency`` (as the runs' ``adaptiveConcurrency``)."""
        return {**self.limiter.report().metadata(), "refusals": self.limiter.refusals}


def held_slot_of(limiter: Any) -> HeldSlot | None:
    """A slot held through one call's attempts and backoffs, when ``limiter`` offers one (a
    plain semaphore does not: each attempt then takes a slot of its own)."""
    held = getattr(limiter, "held_slot", None)
    return held() if held is not None else None


@asynccontextmanager
async def attempt_slot(limiter: Any, slot: HeldSlot | None) -> AsyncIterator[None]:
    """One attempt in the call's held ``slot``, or (without one) in a slot of ``limiter``."""
    if slot is not None:
        await slot.again()
        yield
    else:
        async with limiter:
            yield
