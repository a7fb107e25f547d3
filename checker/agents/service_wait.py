"""Waiting on a model service that refuses: the backoff before a refused run is run again,
and the bound on waiting (``--max-service-wait``).

A run the model service refused or failed (an *unavailable* run, agents/service_refusal.py)
is run again after a wait - the delay the service asked for (``Retry-After``, RetryInfo), a
little more so that runs told the same delay do not all come back at once; without one, a
jittered exponential backoff (``BASE_DELAY`` doubling up to ``MAX_DELAY``, each wait drawn
between half of that and all of it) - apart from ``--retries``, which is for the agent's own
errors. Each refusal is told to the run's concurrency limiter when there is one
(``note_refusal``), which cuts the runs in flight.

The bound is on an *outage*: the time since the first refusal after which no run got through.
A run that got through (any answer of the model service that was not a refusal) ends it.
Once an outage would last longer than ``--max-service-wait``, evalcheck stops waiting: the
runs refused then, and the runs not started yet, end unavailable (no verdict on their cases,
exit status 2), and what did run is reported.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from ..models.refusal import ServiceRefusal

DEFAULT_MAX_SERVICE_WAIT = 600.0  # seconds: a bad minute or few of a model service, not an outage
BASE_DELAY = 1.0
MAX_DELAY = 60.0
# A wait the service asked for is lengthened by up to this share, drawn for each run.
ASKED_JITTER = 0.2


def _say(line: str) -> None:
    from ..safety.output import say

    say(line, err=True)


class ServiceWaits:
    """The run's waits on its model service, and what it refused (one per ``evalcheck run``)."""

    def __init__(self, max_wait: float = DEFAULT_MAX_SERVICE_WAIT, *, limiter: Any = None,
                 rng: random.Random | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
                 tell: Callable[[str], None] | None = None):
        self.max_wait = max_wait
        self._tell = tell if tell is not None else _say
        self.limiter = limiter  # checker/limiter.py's AdaptiveLimiter, when there is one
        self._rng = rng or random.Random()
        self._clock = clock
        self._sleep = sleep
        self.codes: Counter[str] = Counter()  # refusals by code ("429 RESOURCE_EXHAUSTED")
        self.refused_runs = 0  # runs the service refused at least once
        self.retried_by_agents = 0  # refused calls the agent retried itself (told)
        self.paced_by_agents = 0  # ... of them, of a model the agent paces to its quota
        self.unavailable_runs = 0  # runs that ended unavailable (not resolved)
        self.not_started = 0  # ... of them, never started (the service was given up)
        self.unavailable_cases: set[tuple[str, str]] = set()
        self.last: ServiceRefusal | None = None
        self.given_up: ServiceRefusal | None = None  # the refusal the outage ended on
        self._outage_since: float | None = None
        self._waiting = 0  # runs waiting now
        self._waiting_since = 0.0
        self.waited = 0.0  # seconds during which some run waited (not a sum over runs)

    @property
    def refusals(self) -> int:
        return sum(self.codes.values())

    def delay(self, refusal: ServiceRefusal, attempt: int) -> float:
        """The wait before attempt ``attempt + 1`` of a run refused ``attempt`` times."""
        if refusal.retry_after is not None:
            return refusal.retry_after * (1.0 + self._rng.uniform(0.0, ASKED_JITTER))
        cap = min(MAX_DELAY, BASE_DELAY * 2.0 ** (attempt - 1))
        return self._rng.uniform(cap / 2.0, cap)

    def _count(self, refusal: ServiceRefusal, paced: bool = False) -> None:
        """A refusal: counted by code, and told to the limiter, which cuts the runs in flight
        (unless the agent paces the refused model's calls: more runs send no more of them)."""
        self.codes[refusal.code] += 1
        self.last = refusal
        note = getattr(self.limiter, "note_refusal", None)
        if note is not None:
            note(refusal.retry_after, paced=paced)

    def refused(self, refusal: ServiceRefusal, attempt: int) -> None:
        """A run came back refused (its ``attempt``-th refusal)."""
        self._count(refusal)
        if attempt == 1:
            self.refused_runs += 1
        if self._outage_since is None:
            self._outage_since = self._clock()
            self._tell(f"evalcheck: the model service refused a run ({refusal.code}): refused runs "
                       f"are run again after the delay it asks for, for up to {self.max_wait:g} s "
                       "without a run getting through (--max-service-wait)")

    def told(self, refusal: ServiceRefusal, paced: bool = False) -> None:
        """An agent tells of a model call refused that it retries itself (the run goes on):
        counted, and told to the limiter at once, which cuts the runs in flight - unless
        the agent paces that model's calls to the quota the refusal stated (``paced``), so
        that more runs at once send no more calls. It starts no outage: the run has not
        ended."""
        self._count(refusal, paced)
        self.retried_by_agents += 1
        self.paced_by_agents += paced
        if self.retried_by_agents == 1 and self._outage_since is None and not self.refused_runs:
            then = ("paces that model's calls to the quota it stated" if paced
                    else "fewer runs go at once")
            self._tell(f"evalcheck: the model service refused a call ({refusal.code}); the agent "
                       f"retries it after the delay the service asks for, and {then}")

    async def wait(self, refusal: ServiceRefusal, attempt: int) -> bool:
        """Note the refusal and wait before the run is tried again; False when the run is
        not to be tried again (the outage has outlasted ``max_wait``)."""
        self.refused(refusal, attempt)
        pause = self.delay(refusal, attempt)
        assert self._outage_since is not None
        if self.given_up is not None or self._clock() + pause - self._outage_since > self.max_wait:
            if self.given_up is None:
                self._tell(f"evalcheck: {self.gave_up_reason(refusal)}: the runs it refuses and "
                           "those not started get no verdict")
            self.given_up = self.given_up or refusal
            return False
        if self._waiting == 0:
            self._waiting_since = self._clock()
        self._waiting += 1
        try:
            await self._sleep(pause)
        finally:
            self._waiting -= 1
            if self._waiting == 0:
                self.waited += self._clock() - self._waiting_since
        return self.given_up is None

    def answered(self) -> None:
        """A run got through: the model service answered it (whatever the agent did)."""
        self._outage_since = None

    def ended_unavailable(self, started: bool = True, case: tuple[str, str] | None = None) -> None:
        """A run ended unavailable (``case``: its eval set key and eval id): also a fresh
        confirmation run, which the results' cases do not list (their metadata count it)."""
        self.unavailable_runs += 1
        if not started:
            self.not_started += 1
        if case is not None:
            self.unavailable_cases.add(case)

    def used(self) -> bool:
        return bool(self.codes) or self.unavailable_runs > 0

    def gave_up_reason(self, refusal: ServiceRefusal | None = None) -> str:
        """The error of a run left unavailable once the service was given up."""
        last = refusal or self.given_up
        code = last.code if last is not None else "refusals"
        return (f"the model service kept refusing ({code}) for longer than {self.max_wait:g} s "
                "(--max-service-wait)")

    def metadata(self) -> dict[str, Any]:
        """What the results' metadata keep of it (``modelService``)."""
        out: dict[str, Any] = {"refusals": self.refusals, "byCode": dict(self.codes),
                               "refusedRuns": self.refused_runs,
                               "retriedByAgents": self.retried_by_agents,
                               "pacedByAgents": self.paced_by_agents,
                               "waitedSeconds": round(self.waited, 3),
                               "maxServiceWait": self.max_wait}
        if self.unavailable_runs:
            out["unavailableRuns"] = self.unavailable_runs
            out["notStarted"] = self.not_started
            out["unavailableCases"] = len(self.unavailable_cases)
        if self.given_up is not None:
            out["gaveUp"] = self.given_up.code
        return out

    def line(self) -> str:
        """The end of the run's line, e.g. "model service: 37 refusals (429), concurrency
        32 -> 16 -> 24, waited 12 s" (the concurrency from the limiter, when it keeps one)."""
        statuses = [code.split(" ")[0] for code, _ in self.codes.most_common()]
        codes = statuses[0] if len(statuses) == 1 else ", ".join(
            f"{code.split(' ')[0]}: {n}" for code, n in self.codes.most_common())
        refusals = self.refusals
        parts = [f"model service: {refusals} refusal{'s' if refusals != 1 else ''}"
                 + (f" ({codes})" if codes else "")]
        history = getattr(self.limiter, "history", None)
        if callable(history):
            history = history()
        if isinstance(history, (list, tuple)) and len(history) > 1:
            parts.append("concurrency " + " -> ".join(str(n) for n in history))
        parts.append(f"waited {self.waited:.0f} s")
        text = ", ".join(parts)
        if self.unavailable_runs:
            text += (f"; {self.unavailable_runs} run{'s' if self.unavailable_runs != 1 else ''} "
                     "left without a verdict")
        return text
