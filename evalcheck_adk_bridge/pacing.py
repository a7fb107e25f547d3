"""Model calls spaced to the request quota the service states in its refusals.

Gemini's 429 says which quota was exhausted (``google.rpc.QuotaFailure``: a violation's
``quotaId`` such as ``GenerateRequestsPerMinutePerProjectPerModel-FreeTier`` and its
``quotaValue``, e.g. "10"). Once a model's calls were refused for a quota of requests per
second or per minute, the bridge starts that model's calls no closer together than the quota
allows: the runs in flight then wait in the bridge for their turn instead of sending calls
the service refuses, each refusal costing its run the delay the service asks for (2 s to a
minute) while the quota goes unused. One pacer serves every run of the bridge's process; the
checker's concurrency limiter sees paced runs take longer and stops growing. The calls sent
before the quota was known count too: the burst that met the quota may fill the service's
window for most of a second more, and a paced call sent into it would be refused. A quota
per day, of tokens or of calls in flight is not paced: it is not a rate of calls. Standard
library only.
"""

from __future__ import annotations

import asyncio
import bisect
import contextvars
import re
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from .refusals import error_details

# Spacing a little wider than the quota's own: the service counts calls as they arrive, and
# calls given their turns the spacing apart arrive up to tens of milliseconds off it (the
# request is built and sent after the turn, between other runs' work: 7-23 ms after it for
# 80% of the bench's calls, 49 ms for 99%). A window of the quota's calls then lasts 3% longer
# than the quota's (30 ms of a second, 1.8 s of a minute). At 1.5% 2.3 calls of the bench's
# 450 were refused once paced (each costing its run the 2 s the service asks for, and the
# suite as much when it is one of the last runs: 2 of 6 runs took 1.7 s longer), at 3% 0.7.
MARGIN = 1.03
# The longest a call waits for its turn. A slow quota (10 a minute: a call each 6 s) and many
# runs in flight would queue a call for minutes, past the checker's --turn-timeout (a turn's
# timeout gives its process up); a call that would wait longer goes at once instead, as it
# did unpaced, and a refusal is retried after the delay the service asks for.
MAX_WAIT = 60.0
# The calls of the latest minute (the longest window a quota counts in) are kept per model.
HISTORY = 60.0 * MARGIN
SENT_MOST = 10_000  # ... at most this many: a larger quota is paced by the spacing alone
_RATE_QUOTA = re.compile(r"Requests?Per(Second|Minute)", re.IGNORECASE)
_SECONDS = {"second": 1.0, "minute": 60.0}


def stated_quota(details: Any) -> tuple[float, float] | None:
    """The calls and the window in seconds (1 or 60) of the exhausted rate quota a refusal's
    body names (the lowest rate, when it names several), or None when it names no quota of
    requests per second or minute."""
    quotas = []
    for item in error_details(details, "QuotaFailure"):
        violations = item.get("violations")
        for violation in violations if isinstance(violations, list) else []:
            if not isinstance(violation, dict):
                continue
            named = f"{violation.get('quotaId', '')} {violation.get('quotaMetric', '')}"
            found = _RATE_QUOTA.search(named.replace("_", ""))
            try:
                value = float(str(violation.get("quotaValue", "")))
            except ValueError:
                continue
            if found and value > 0 and "concurrent" not in named.lower():
                quotas.append((value, _SECONDS[found.group(1).lower()]))
    return min(quotas, key=lambda quota: quota[0] / quota[1]) if quotas else None


def stated_rate(details: Any) -> float | None:
    """The calls a second of ``stated_quota``, or None."""
    quota = stated_quota(details)
    return None if quota is None else quota[0] / quota[1]


def _spacing(quota: tuple[float, float]) -> float:
    calls, window = quota
    return MARGIN * window / calls


class CallPacer:
    """Per model: the calls' start times, spaced ``MARGIN`` times the quota's own spacing
    apart once the service stated its quota (``learn``), and never more calls in a window of
    the quota's (``MARGIN`` times longer) than it allows: counting those sent before the quota
    was known, which may have filled the service's window already (the burst that met the
    quota), and not those the service refused. A model with no stated quota is not paced.
    When the event loop was held up past a call's turn (a garbage collection, a burst of
    CPU), the turns after it move back by as much: the calls that waited meanwhile go on
    spaced, not all at once, which would put more calls in the service's window than its
    quota allows; and a turn later still, for the call given its turn just before the
    hold-up, which may have been sent only after it."""

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Any] = asyncio.sleep, max_wait: float = MAX_WAIT):
        self._clock = clock
        self._sleep = sleep
        self._max_wait = max_wait
        self._quota: dict[str, tuple[float, float]] = {}  # the calls a window allows, the window
        self._next: dict[str, float] = {}
        self._delay: dict[str, float] = {}  # how far the model's turns moved back so far
        self._sent: dict[str, deque[float]] = {}  # the turns of the latest HISTORY seconds

    def learn(self, model: str, error: BaseException) -> None:
        """A call of ``model`` was refused with ``error``: it does not count in the service's
        window; the model is paced from now on if the refusal names a rate quota."""
        sent = self._sent.get(model)
        if sent:  # which entry goes matters only for calls sent before the quota was known:
            sent.pop()  # paced turns are spaced to fit a window by themselves
        quota = stated_quota(getattr(error, "details", None))
        known = self._quota.get(model)
        if quota is not None and (known is None or quota[0] / quota[1] < known[0] / known[1]):
            self._quota[model] = quota  # a lower rate stated later holds from then on

    def spacing(self, model: str) -> float | None:
        quota = self._quota.get(model)
        return None if quota is None else _spacing(quota)

    async def wait(self, model: str) -> bool:
        """Until this call's turn: calls of a paced model start in the order they asked.
        False for a call that skipped the queue (MAX_WAIT): more runs at once than the
        quota serves within it."""
        now = self._clock()
        sent = self._sent.get(model)
        if sent is None:
            sent = self._sent[model] = deque(maxlen=SENT_MOST)
        while sent and sent[0] < now - HISTORY:
            sent.popleft()
        quota = self._quota.get(model)
        if quota is None:
            sent.append(now)
            return True
        calls, window = quota
        spacing = _spacing(quota)
        turn = max(now, self._next.get(model, now))
        held = int(calls)  # the calls a window holds: the one that many back must be out of it
        if held >= 1 and len(sent) >= held:
            turn = max(turn, sent[-held] + window * MARGIN)
        if turn - now > self._max_wait:
            if len(sent) == sent.maxlen:
                sent.popleft()  # (insort does not make room as append does)
            bisect.insort(sent, now)  # sent at once, as unpaced (and counted)
            return False  # too long a queue: not paced (MAX_WAIT), and no turn taken
        self._next[model] = turn + spacing
        sent.append(turn)
        delayed = self._delay.get(model, 0.0)

        def due() -> float:  # the turn, moved back as the turns before it were
            return turn + self._delay.get(model, 0.0) - delayed

        while (left := due() - self._clock()) > 0:
            await self._sleep(left)
        late = -left
        if late > spacing / 2:
            # Held up past the turn: the turns behind it move back. A call given its turn
            # just before the hold-up may have been sent only after it, beside this one:
            # this one goes a turn later, and the turns behind it with it.
            self._delay[model] = self._delay.get(model, 0.0) + late + spacing
            self._next[model] += late + spacing
            await self._sleep(spacing)
        return True


# The bridge process's pacer, set once when it starts serving (serve() in __init__.py): every
# run's Runner gets a plugin of its own, and they share it. None: calls are not paced.
PACER: contextvars.ContextVar[CallPacer | None] = contextvars.ContextVar("evalcheck_pacer",
                                                                         default=None)


async def wait_turn(llm_request: Any) -> bool:
    """Before a model call of this process: its turn, when its model is paced. False when
    the call skipped the queue (MAX_WAIT)."""
    pacer = PACER.get()
    if pacer is None:
        return True
    return await pacer.wait(str(getattr(llm_request, "model", None)))


def learn_quota(llm_request: Any, error: BaseException) -> bool:
    """A model call of this process was refused with ``error``: its model is paced from now
    on when the refusal states a rate quota. Whether the model is paced."""
    pacer = PACER.get()
    if pacer is None:
        return False
    model = str(getattr(llm_request, "model", None))
    pacer.learn(model, error)
    return pacer.spacing(model) is not None
