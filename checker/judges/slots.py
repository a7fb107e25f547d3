"""The run's limit on judge calls in flight, adapting to the judge services (issue 38.3):
the run's one AdaptiveLimiter kind (checker/limiter.py), started at and capped by
``--judge-concurrency``, cut when a judge service refuses a call (429, 503: less at once, no
growth for the delay it asked) and grown back while answers come at a flat latency. Every
judge-backed metric shares it (Gemini, Vertex AI, provider/model judges), as an async
context manager around each request in flight, or a slot held by one call through its
attempts and backoffs (``CallSlot``: a refused call is still in flight)."""

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


class CallSlot:
    """One call's slot through its attempts and the backoffs between them (``async with
    CallSlot(limit) as slot:``, then ``async with slot.attempt():`` around each request): a
    refused call is still in flight, and the slot it freed would send another call into the
    refusing service. Of a JudgeSlots it is a held slot (limiter.HeldSlot); a plain
    semaphore gives each attempt a slot of its own."""

    def __init__(self, limiter: Any):
        self.limiter = limiter
        self.held = HeldSlot(limiter.limiter) if isinstance(limiter, JudgeSlots) else None

    async def __aenter__(self) -> CallSlot:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self.held is not None:
            self.held.release()

    @asynccontextmanager
    async def attempt(self) -> AsyncIterator[None]:
        if self.held is not None:
            await self.held.again()
            yield
        else:
            async with self.limiter:
                yield
