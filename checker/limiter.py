"""How many runs are in flight: one limit for the whole ``evalcheck run``, which follows the
model service (issue 38; docs/agent-protocol.md, "How many runs at once").

Additive increase, multiplicative decrease, as TCP's congestion control: the limit grows
while the runs' latency stays flat and nothing is refused - by one each finished run at
first (doubling every round of runs: slow start), by one each round once the service has
refused once; and, in slow start, at once toward where the agent's process would be busy
half the time, when it mostly sleeps (``note_agent_busy``: it waits on a model) - and is cut
when the service refuses (``note_refusal``: by ``REFUSAL_CUT``, at most once a round, then
no growth for the delay the service asked; not for a refusal the agent paces its calls for,
which more runs at once do not add to) or latency climbs (``note_latency``: back by
``LATENCY_CUT``, never under the start). It stays within ``[1, cap]``. Latency is judged on
the median of the latest ``MIN_ROUND`` finished runs, against the best median of such a
round; an agent that runs on CPU takes longer with each run more in flight, so its limit
stays where it started (as the default always was), while one that waits on a model grows
until the service says no. A fixed limit (``--concurrency N``) never moves.

It is not tied to agent runs: anything that waits on a service may take a slot.
"""

from __future__ import annotations

import asyncio
import math
import statistics
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

REFUSAL_CUT = 0.75    # the limit after a refusal, times the limit before
LATENCY_CUT = 0.8     # ... after a round whose latency climbed
FLAT = 1.25           # a round's median latency within this of the best round's: flat
CLIMBED = 1.6         # beyond this: climbing (between the two: hold)
MIN_ROUND = 8         # finished runs judged together
ASKED_JITTER = 0.2    # the most a wait the service asked for is lengthened (agents/service_wait.py)
PLATEAU = 4.0         # growth this many times slower on the way back to a limit once refused
PLATEAU_MOST = 32.0   # ... doubled each time the same limit is refused again, up to this
IDLE = 0.5            # an agent process busy under this share of a CPU mostly waits (on a model)
IDLE_GROWTH = 4.0     # the most the limit is multiplied by for one look at an idle agent


@dataclass(frozen=True)
class ConcurrencyHistory:
    """What the limit did over the run: for the results' metadata and the end-of-run line."""

    adaptive: bool
    start: int
    cap: int
    final: int
    lowest: int
    highest: int
    most_in_flight: int
    # (seconds since the limiter started, the limit from then on), each change of the limit.
    changes: tuple[tuple[float, int], ...]

    def turns(self, at_most: int = 6) -> list[int]:
        """The limit where it turned (the start, each peak and trough, the end), e.g.
        [32, 16, 24]: the end-of-run line's "concurrency 32 -> 16 -> 24". The first and
        the last ``at_most - 1`` turns when there are more."""
        values = [self.start] + [limit for _, limit in self.changes]
        turns = [values[0]]
        for before, here, after in zip(values, values[1:], values[2:], strict=False):
            if (here - before) * (after - here) < 0:
                turns.append(here)
        if values[-1] != turns[-1]:
            turns.append(values[-1])
        return turns if len(turns) <= at_most else [turns[0], *turns[-(at_most - 1):]]

    def metadata(self) -> dict[str, object]:
        """``metadata.adaptiveConcurrency`` of the results (docs/results-format.md)."""
        return {"adaptive": self.adaptive, "start": self.start, "cap": self.cap,
                "final": self.final, "lowest": self.lowest, "highest": self.highest,
                "mostInFlight": self.most_in_flight,
                "overTime": [[seconds, limit] for seconds, limit in _thinned(self.changes)]}


class HeldSlot:
    """One slot of an AdaptiveLimiter held across the attempts of one job and the waits
    between them (a refused run, a refused judge call): a job refused is still in flight -
    the slot it freed would start another job into the refusing service at once, refused in
    turn. Before each attempt (``again``) it is given up and waited for anew only when the
    limit was cut under the slots in flight - ahead of the jobs not started, so that none
    starts while a refused one waits; ``release`` gives it up for good."""

    def __init__(self, limiter: AdaptiveLimiter, *, held: bool = False):
        self.limiter = limiter
        self.held = held

    async def again(self) -> None:
        """Hold a slot for the next attempt (the one held, unless the limit was cut)."""
        if self.held and self.limiter.in_flight > self.limiter.limit:
            self.release()
        if not self.held:
            await self.limiter.acquire(first=True)
            self.held = True

    def release(self) -> None:
        if self.held:
            self.held = False
            self.limiter.release()


def _thinned(changes: tuple[tuple[float, int], ...], at_most: int = 200) -> list[tuple[float, int]]:
    """At most ``at_most`` changes for the metadata, evenly picked, the last one kept."""
    if len(changes) <= at_most:
        return list(changes)
    step = len(changes) / (at_most - 1)
    return [changes[int(i * step)] for i in range(at_most - 1)] + [changes[-1]]


class AdaptiveLimiter:
    """Slots for runs in flight (``async acquire()`` / ``release()``), their number adapted
    from what finished runs tell (``note_latency``) and the service's refusals
    (``note_refusal``). One per ``evalcheck run``, on its event loop."""

    def __init__(self, start: int, cap: int, *, fixed: bool = False,
                 clock: Callable[[], float] = time.monotonic):
        self.cap = max(1, cap)
        self.fixed = fixed
        self._clock = clock
        self._began = clock()
        self.start = min(max(1, start), self.cap)
        self._limit = float(self.start)
        self.in_flight = 0
        self.most_in_flight = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._slow_start = True
        self._grow_after = -math.inf   # no growth before (the delay a refusal asked for)
        self._cut_until = -math.inf  # refusals before then are of the excess already cut
        # Per-turn latencies: of the latest runs (judged), and of this round (MIN_ROUND
        # runs in a row; the best round's median is what "flat" compares with).
        self._recent: deque[float] = deque(maxlen=MIN_ROUND)
        self._round: list[float] = []
        self._round_seconds: list[float] = []  # the round's whole durations
        self._best: float | None = None
        self._seconds = 0.0  # a recent run's duration: how long a round takes
        self._changes: list[tuple[float, int]] = []
        self._lowest = self._highest = self.start
        self.refusals = 0
        self._refused_at: float | None = None  # the limit of the latest cut for a refusal
        self._plateau = PLATEAU  # how much slower the last step back to it goes
        self._idle_grown_at = -math.inf  # when the limit last grew for an idle agent

    @property
    def limit(self) -> int:
        return max(1, int(self._limit))

    def begin_at(self, start: int) -> None:
        """The start becomes known (the default, once the agent said what kind it is):
        from now on ``start`` runs at once, adapting from there."""
        self.start = min(max(1, start), self.cap)
        self._lowest = self._highest = self.start
        self._changes.clear()
        self._set(float(self.start))

    # -- slots ---------------------------------------------------------------------------

    async def acquire(self, *, first: bool = False) -> None:
        """Wait for a slot (in the order asked; ``first``: before those waiting)."""
        if not self._waiters and self.in_flight < self.limit:
            self._take()
            return
        waiter = asyncio.get_running_loop().create_future()
        if first:
            self._waiters.appendleft(waiter)
        else:
            self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # granted as it was cancelled: give the slot on
            elif waiter in self._waiters:  # (a slot freed since may have dropped it already)
                self._waiters.remove(waiter)
            raise

    def release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _take(self) -> None:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self.limit:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self._take()
                waiter.set_result(None)

    def _set(self, value: float) -> None:
        before = self.limit
        self._limit = min(float(self.cap), max(1.0, value))
        if self.limit != before:
            self._changes.append((round(self._clock() - self._began, 3), self.limit))
            self._lowest = min(self._lowest, self.limit)
            self._highest = max(self._highest, self.limit)
        self._wake()

    # -- what the runs tell --------------------------------------------------------------

    def note_latency(self, seconds: float, turns: int = 1) -> None:
        """A run (or call) got through in ``seconds`` (``turns`` turns of it): while the
        latency of the latest runs is flat and more runs wait, the limit grows."""
        if self.fixed or seconds < 0:
            return
        per_turn = seconds / max(1, turns)
        self._recent.append(per_turn)
        self._round.append(per_turn)
        self._round_seconds.append(seconds)
        if len(self._round) >= MIN_ROUND:  # a round: the best latency yet?
            median = statistics.median(self._round)
            self._best = median if self._best is None else min(self._best, median)
            self._seconds = statistics.median(self._round_seconds)
            self._round.clear()
            self._round_seconds.clear()
        wanted = self.in_flight + len(self._waiters) >= self.limit  # runs wait for a slot
        if self._best is None or len(self._recent) < MIN_ROUND:
            # Nothing to compare with yet (the start's own round): slow start goes on as if
            # flat, as TCP's does - a round's wait on a model at the start costs the most; an
            # agent on CPU is judged at the next round and cut back to the start.
            if self._slow_start and self._best is None and wanted \
                    and self._clock() >= self._grow_after:
                self._set(self._limit + 1.0)
            return
        ratio = self._latency_ratio()
        if ratio > CLIMBED:
            # Latency that climbed while the service refused is the refusals' waits, cut for.
            if self._limit > self.start and self._clock() >= self._cut_until:
                self._slow_start = False
                self._set(max(float(self.start), self._limit * LATENCY_CUT))
            self._recent.clear()  # judged: the next verdict on runs of the new limit
            return
        if ratio > FLAT or not wanted or self._clock() < self._grow_after:
            return
        # Congestion avoidance: one more a round of MIN_ROUND runs, not of limit runs (TCP's
        # one a window): a suite lasts tens of rounds, not thousands. The last step back to
        # a limit the service refused goes PLATEAU times slower (as TCP's CUBIC lingers near
        # its last loss): every probe of it costs refusals, and under a quota it is refused
        # again - twice as slowly each time the same limit is refused again (a steady quota
        # between two limits, e.g. 2 runs at once under it and 3 over, is probed ever more
        # rarely); past it without a refusal, growth is as before.
        step = 1.0 if self._slow_start else 1.0 / min(self._limit, MIN_ROUND)
        if not self._slow_start and self._refused_at is not None \
                and self._limit + 1.0 > self._refused_at and self._limit < self._refused_at:
            step /= self._plateau
        self._set(self._limit + step)

    def grows_when_idle(self) -> bool:
        """Whether ``note_agent_busy`` may still raise the limit: the default's slow start
        (until a refusal cuts, or latency climbs; a paced refusal cuts nothing), below the
        cap."""
        return not self.fixed and self._slow_start and self.limit < self.cap

    def note_agent_busy(self, share: float, seconds: float) -> None:
        """The agent's processes kept ``share`` of a CPU busy over the last ``seconds``.
        One under ``IDLE`` mostly waits (on a model): in slow start, while runs wait for a
        slot and latency is flat, the limit grows at once toward where the agent would be
        busy ``IDLE`` of the time, at most ``IDLE_GROWTH`` times, instead of a run at a time
        once runs finish (a round of runs on a model takes seconds). Judged only on a
        window wholly after the previous such growth: the runs it added are in it. An agent
        that computes is busy, and grows no faster than before."""
        now = self._clock()
        if not self.grows_when_idle() or share >= IDLE or seconds <= 0 \
                or now - seconds < self._idle_grown_at:
            return
        if self.in_flight + len(self._waiters) < self.limit:
            return  # no run waits for a slot
        if self._latency_ratio() > FLAT:
            return
        self._idle_grown_at = now
        self._set(self._limit * min(IDLE_GROWTH, IDLE / max(share, IDLE / IDLE_GROWTH)))

    def _latency_ratio(self) -> float:
        """The latest runs' median latency over the best round's; 1.0 until both are known."""
        if self._best is None or self._best <= 0 or len(self._recent) < MIN_ROUND:
            return 1.0
        return statistics.median(self._recent) / self._best

    def note_refusal(self, retry_after: float | None = None, *, paced: bool = False) -> None:
        """The service refused a run (429, 503, ...): fewer at once, and no growth for the
        ``retry_after`` seconds it asked. Refusals within a round of the last cut are of the
        same excess: they cut once. A ``paced`` refusal is only counted: the agent paces
        the refused model's calls to the quota the service stated, so more runs at once
        send it no more calls (they wait their turn in the agent, and the latency of runs,
        which then climbs, still holds the limit back)."""
        self.refusals += 1
        if self.fixed or paced:
            return
        now = self._clock()
        self._slow_start = False
        asked = retry_after if retry_after is not None and retry_after > 0 else 0.0
        if asked:
            self._grow_after = max(self._grow_after, now + asked)
        if now < self._cut_until:
            return
        # The calls in flight at the cut are of the same excess, and so are their retries,
        # which come back after the delay the service asked (and its jitter): one cut for them.
        self._cut_until = now + max(self._seconds, asked * (1.0 + ASKED_JITTER), 0.5)
        again = self._refused_at is not None and int(self._limit) == int(self._refused_at)
        self._plateau = min(PLATEAU_MOST, self._plateau * 2.0) if again else PLATEAU
        self._refused_at = self._limit
        self._set(self._limit * REFUSAL_CUT)

    def history(self) -> list[int]:
        """The limit where it turned, e.g. [32, 16, 24] (the end-of-run line)."""
        return self.report().turns()

    def report(self) -> ConcurrencyHistory:
        return ConcurrencyHistory(adaptive=not self.fixed, start=self.start, cap=self.cap,
                                  final=self.limit, lowest=self._lowest, highest=self._highest,
                                  most_in_flight=self.most_in_flight,
                                  changes=tuple(self._changes))
