"""How long judging may take in one run, so that a hanging judge cannot hold a job for hours.

Without bounds a judge that never answers costs, per sample, 6 attempts of 180 s plus the
backoffs between them: 20 minutes a call. Three bounds, each set by an environment
variable (seconds, or a count), documented in docs/judge-limits.md:

- ``EVALCHECK_JUDGE_RUN_BUDGET`` (1800): all judge calls of a run together, from the first
  one; then every further call fails at once.
- ``EVALCHECK_JUDGE_METRIC_DEADLINE`` (600): one metric on one run, all its calls and
  retries included; then that metric is an error for that run.
- ``EVALCHECK_JUDGE_BREAKER`` (3): judge requests in a row that got no answer in time;
  then the circuit opens and judging stops for the rest of the run.

A metric whose judge calls fail this way is an error ("could not be computed"), never a pass.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..errors import InputError
from .client import JudgeError

RUN_BUDGET = "EVALCHECK_JUDGE_RUN_BUDGET"
METRIC_DEADLINE = "EVALCHECK_JUDGE_METRIC_DEADLINE"
BREAKER = "EVALCHECK_JUDGE_BREAKER"


def _number(env: Mapping[str, str], name: str, default: float, *, whole: bool = False) -> float:
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = int(raw) if whole else float(raw)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        kind = "a whole number above 0" if whole else "a number of seconds above 0"
        raise InputError(f"{name} must be {kind}, got {raw!r}")
    return value


@dataclass(frozen=True)
class JudgeLimits:
    run_budget: float = 1800.0
    metric_deadline: float = 600.0
    breaker: int = 3

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> JudgeLimits:
        return cls(run_budget=_number(env, RUN_BUDGET, cls.run_budget),
                   metric_deadline=_number(env, METRIC_DEADLINE, cls.metric_deadline),
                   breaker=int(_number(env, BREAKER, cls.breaker, whole=True)))


class JudgeGuard:
    """One run's judging against its limits, shared by every call of the run's service."""

    def __init__(self, limits: JudgeLimits, clock: Callable[[], float] = time.monotonic):
        self.limits = limits
        self._clock = clock
        self._started: float | None = None
        self._timeouts_in_a_row = 0
        self.stopped: str | None = None  # why judging stopped, once it did

    def left(self) -> float:
        """Seconds left of the run's budget; JudgeError once it is spent or the circuit is open."""
        if self.stopped is not None:
            raise JudgeError(self.stopped)
        now = self._clock()
        if self._started is None:
            self._started = now
        left = self._started + self.limits.run_budget - now
        if left <= 0:
            self.stopped = (f"judging stopped: the run's judge budget of {self.limits.run_budget:g} s "
                            f"is spent ({RUN_BUDGET})")
            raise JudgeError(self.stopped)
        return left

    def answered(self) -> None:
        self._timeouts_in_a_row = 0

    def timed_out(self, seconds: float) -> None:
        self._timeouts_in_a_row += 1
        if self._timeouts_in_a_row >= self.limits.breaker and self.stopped is None:
            self.stopped = (f"judging stopped: {self._timeouts_in_a_row} judge requests in a row got "
                            f"no answer within {seconds:g} s (circuit breaker, {BREAKER})")
