"""A refused run is still in flight (checker/agents/scheduler.py, limiter.HeldSlot): it keeps
its slot through the wait before its next attempt, so that a refusal never starts another run
into the refusing service at once; it gives the slot up only when the limit was cut under the
runs in flight. Likewise a refused judge call keeps its slot through its backoff
(judges/retrying.py)."""

from __future__ import annotations

import asyncio
import random
import time

from checker.agents.base import RunJob
from checker.agents.progress import Progress
from checker.agents.scheduler import ScheduleOptions, Scheduler
from checker.agents.service_wait import ServiceWaits
from checker.judges.base import CallStats, JudgeReply, RetryPolicy
from checker.judges.retrying import Retryable, call_with_retries
from checker.judges.slots import JudgeSlots
from checker.models.refusal import ServiceRefusal
from tests.agents.helpers import case

STORM = 0.4  # seconds: the service refuses every attempt started before then
ASKED = 0.15  # the delay it asks for


class StormRunner:
    """A runner in front of a model service that refuses every attempt started in its first
    STORM seconds (429, RetryInfo ASKED), then answers; each attempt takes 20 ms. It logs
    each attempt: (seconds since the first, the run, refused?) and the most at once."""

    def __init__(self) -> None:
        self.began: float | None = None
        self.attempts: list[tuple[float, tuple[str, int], bool]] = []
        self.now = self.most = 0

    async def run(self, job: RunJob):
        at = time.monotonic()
        self.began = self.began if self.began is not None else at
        self.now += 1
        self.most = max(self.most, self.now)
        try:
            await asyncio.sleep(0.02)
        finally:
            self.now -= 1
        refused = at - self.began < STORM
        self.attempts.append((at - self.began, (job.eval_id, job.run), refused))
        if refused:
            return job.record(error="429 RESOURCE_EXHAUSTED", unavailable=ServiceRefusal(
                kind="rate_limited", code="429 RESOURCE_EXHAUSTED", retry_after=ASKED))
        return job.record(invocations=[], duration_seconds=0.02)

    async def aclose(self) -> None:
        pass


def schedule(concurrency: int | None, runs: int = 12) -> tuple[StormRunner, list, Scheduler]:
    jobs = [RunJob(eval_set_id="set", case=case(f"c{i}", turns=1), run=1) for i in range(runs)]
    runner = StormRunner()
    options = ScheduleOptions(concurrency=concurrency, max_concurrency=8, retries=0)
    scheduler = Scheduler(jobs, runner, options, ServiceWaits(60.0, tell=lambda line: None),
                          progress=Progress(jobs, interactive=False))
    if concurrency is None:  # the default's start, as a stdio agent's handshake would settle it
        scheduler.settled = True
        scheduler.limiter.begin_at(4)
    done = asyncio.run(scheduler.run())
    return runner, done.runs, scheduler


def test_a_refused_run_keeps_its_slot_so_no_other_run_starts_into_the_storm() -> None:
    """The default concurrency, started at 4 (a worker for each of the cap's 8 slots): the
    four first runs are refused, and no fifth run starts until one of them got through."""
    runner, runs, _ = schedule(concurrency=None)
    assert all(r.unavailable is None and r.error is None for r in runs)  # all through in the end
    in_storm = [run for _, run, refused in runner.attempts if refused]
    assert set(in_storm) == {("c0", 1), ("c1", 1), ("c2", 1), ("c3", 1)}, runner.attempts
    # each waited the delay asked between its attempts (0, 0.15-0.18, ...): at most 3 each
    assert len(in_storm) <= 4 * 3, runner.attempts
    assert sum(r.refusals or 0 for r in runs) == len(in_storm)


def test_a_refused_run_gives_its_slot_up_when_the_limit_was_cut_under_the_runs_in_flight() -> None:
    runner, runs, scheduler = schedule(concurrency=None)
    assert all(r.unavailable is None and r.error is None for r in runs)
    history = scheduler.limiter.report()
    assert history.start == 4 and history.lowest < 4  # cut by the refusals
    first = [at for at, _, refused in runner.attempts if refused]
    # The four first runs were refused at once; after the wait asked, fewer try again at
    # once: the limit was cut under the four holding a slot, and some gave theirs up.
    assert len([at for at in first if at < 0.01]) == 4
    again = sorted(at for at in first if ASKED <= at < 2 * ASKED)
    assert 1 <= len(again) <= 3, runner.attempts
    first_four = {("c0", 1), ("c1", 1), ("c2", 1), ("c3", 1)}
    assert {run for _, run, refused in runner.attempts if refused} <= first_four


def test_a_slot_given_up_after_a_cut_is_waited_for_ahead_of_the_jobs_not_started() -> None:
    """Four slots held, two jobs waiting for one; the limit is cut to three: the held slot
    that tries again gives its slot up and gets the next one freed before either waiter."""
    from checker.limiter import AdaptiveLimiter, HeldSlot

    async def go() -> list[str]:
        limiter = AdaptiveLimiter(4, 8)
        slots = [HeldSlot(limiter) for _ in range(4)]
        for slot in slots:
            await slot.again()
        order: list[str] = []

        async def new_job(name: str) -> None:
            await limiter.acquire()
            order.append(name)

        waiting = [asyncio.create_task(new_job(n)) for n in ("new 1", "new 2")]
        await asyncio.sleep(0)
        limiter.note_refusal(None)
        assert limiter.limit == 3 and limiter.in_flight == 4

        async def again() -> None:
            await slots[0].again()
            order.append("refused")

        retry = asyncio.create_task(again())
        await asyncio.sleep(0)
        assert limiter.in_flight == 3 and not slots[0].held  # given up, waiting first
        slots[1].release()  # a job ends: its slot goes to the refused one
        await asyncio.sleep(0)
        slots[2].release()
        slots[3].release()
        await asyncio.gather(retry, *waiting)
        return order

    assert asyncio.run(go()) == ["refused", "new 1", "new 2"]


def test_a_refused_judge_call_keeps_its_slot_through_its_backoff() -> None:
    """Two judge calls at once (judge-concurrency 2): "a" refused twice (0.1 s asked each
    time), "b" slow (0.5 s); "c" asks for a slot at 0.05 s. It waits until "a" got through:
    with the slot given up during a backoff it would go out at once, into the refusals."""
    slots = JudgeSlots(2)
    slots.limiter.fixed = True  # not cut by the refusals (the cut's own rule is the runs' test)
    sent: list[tuple[str, float]] = []
    refused = [0]

    def sender(name: str):
        async def send() -> JudgeReply:
            sent.append((name, time.monotonic()))
            await asyncio.sleep(0.5 if name == "b" else 0.01)
            if name == "a" and refused[0] < 2:
                refused[0] += 1
                raise Retryable("429 Too Many Requests", "429 RESOURCE_EXHAUSTED", retry_after=0.1)
            return JudgeReply(text="ok")
        return send

    policy = RetryPolicy(attempts=5, initial_delay=0.01, jitter=0.0, max_delay=1.0, timeout=5.0)

    async def call(name: str, delay: float = 0.0) -> None:
        await asyncio.sleep(delay)
        await call_with_retries(sender(name), policy, CallStats(), slots, None,
                                sleep=asyncio.sleep, rng=random.Random(1))

    async def go() -> None:
        await asyncio.gather(call("a"), call("b"), call("c", 0.05))

    asyncio.run(go())
    assert [name for name, _ in sent].count("a") == 3
    last_a = max(at for name, at in sent if name == "a")
    sent_c = next(at for name, at in sent if name == "c")
    assert sent_c > last_a, sent  # not during a's backoffs
    assert sent_c - sent[0][1] < 0.4  # a's slot, not b's (b answers at 0.5 s)
    assert slots.limiter.in_flight == 0 and slots.limiter.most_in_flight == 2
