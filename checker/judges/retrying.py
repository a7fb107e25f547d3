"""One judge request with retries, whatever the judge's API (Gemini, OpenAI-compatible,
Anthropic): every HTTP request is one counted call under the run's limit on judge calls in
flight; 408, 429 and 5xx answers, timeouts and dropped connections are retried after an
exponential backoff with jitter, at least as long as the service's ``Retry-After`` (or
``RetryInfo``) asks; the run's judge guard (judges/limits.py) bounds it all.

A call that fails for good because the service kept refusing or failing it raises
``JudgeUnavailable`` naming what the service said ("429 Too Many Requests"): the run then
ends with the judge's refusals named and exit 2 (report/finish.py), never a low score.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

from .base import (CallStats, Guard, JudgeConfigError, JudgeError, JudgeReply, JudgeUnavailable,
                   RetryPolicy)
from .slots import CallSlot


class Retryable(Exception):
    """An attempt the service refused or failed in a way worth another try.

    ``code``: what the service said, for the refusal count ("429 RESOURCE_EXHAUSTED");
    ``retry_after``: the seconds it asked to wait, if it did."""

    def __init__(self, message: str, code: str, retry_after: float | None = None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.retry_after = retry_after


class Rejected(JudgeError):
    """An attempt the service answered in a way no retry changes (400, 404, an unreadable
    body); counted as a failed request."""


async def call_with_retries(send: Callable[[], Awaitable[JudgeReply]], policy: RetryPolicy,
                            stats: CallStats, limiter: Any, guard: Guard | None, *,
                            sleep: Callable[[float], Any], rng: random.Random) -> JudgeReply:
    """``send()`` until it answers, per ``policy``. ``send`` raises Retryable for an attempt
    to try again, Rejected (or JudgeConfigError) for one that must not be. ``limiter``: an
    async context manager bounding calls in flight (the run's judge-concurrency), whose slot
    the call keeps through its backoffs (judges/slots.py: CallSlot)."""
    async with CallSlot(limiter) as slot:  # held through the backoffs
        last, code = "no attempt made", "no answer"
        timeout = policy.timeout
        for attempt in range(policy.attempts):
            try:
                async with slot.attempt():
                    # Within the run's budget, checked once a slot is free (judges.limits).
                    timeout = policy.timeout if guard is None else min(policy.timeout, guard.left())
                    stats.calls += 1
                    began = time.monotonic()
                    reply = await asyncio.wait_for(send(), timeout=timeout)
                _tell(limiter, "note_latency", time.monotonic() - began)
                if guard is not None:
                    guard.answered()
                stats.prompt_tokens += reply.prompt_tokens
                stats.output_tokens += reply.output_tokens
                stats.total_tokens += reply.total_tokens
                return reply
            except (Rejected, JudgeConfigError):  # a 400; a key the service refused
                stats.failed_requests += 1
                raise
            except JudgeError:  # the run's judging is over (judges.limits): no retry
                raise
            except Retryable as exc:
                stats.failed_requests += 1
                last, code, server_delay = exc.message, exc.code, exc.retry_after
                _tell(limiter, "note_refusal", server_delay)  # fewer at once (judges/slots.py)
            except TimeoutError:
                stats.failed_requests += 1
                last, code, server_delay = f"no answer within {timeout:g} s", "timeout", None
                _tell(limiter, "note_refusal", None)
                if guard is not None:
                    guard.timed_out(timeout)
            if attempt + 1 >= policy.attempts:
                break
            delay = policy.backoff(attempt, rng)
            if server_delay is not None:
                if server_delay > policy.max_delay:
                    raise JudgeUnavailable(
                        f"judge asked to retry after {server_delay:g} s, more than the "
                        f"{policy.max_delay:g} s limit (last error: {last})", code)
                delay = max(delay, server_delay)
            if guard is not None and delay >= guard.left():
                raise JudgeUnavailable(f"judge call failed; no retry: the run's judge budget ends "
                                       f"within the {delay:g} s wait (last error: {last})", code)
            stats.retries += 1
            stats.retry_delays.append(delay)
            await sleep(delay)
        raise JudgeUnavailable(f"judge call failed after {policy.attempts} attempt(s): {last}", code)


def _tell(limiter: Any, what: str, value: float | None) -> None:
    """What the adaptive limit learns from a call (a plain semaphore learns nothing)."""
    note = getattr(limiter, what, None)
    if note is not None:
        note(value)
