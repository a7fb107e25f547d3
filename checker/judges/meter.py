"""Which run's metric a judge call is for: a meter per (run, metric) scored, set by the
scoring stage (checker/scoring/case.py) in a context variable, charged by the judge service
with each answer's tokens. An identical request answered once serves its twins at no cost:
the tokens go to the meter of the one that asked (its task's context).

The judge token budget (--max-judge-tokens) is checked here too: once it is spent, no
further call starts, and the meter says so (that metric on that run is not evaluated)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

from ..models.usage import TokenBudget, Tokens
from .client import JudgeError


class BudgetSpent(JudgeError):
    """A judge call refused because the judge token budget is spent."""


class JudgeMeter:
    def __init__(self) -> None:
        self.tokens: Tokens | None = None
        self.vertex_instances = 0  # scored by the Vertex AI evaluation service (no tokens told)
        self.refused: str | None = None  # the budget's message, when a call was refused


_current: ContextVar[JudgeMeter | None] = ContextVar("evalcheck_judge_meter", default=None)


@contextlib.contextmanager
def metering() -> Iterator[JudgeMeter]:
    """A fresh meter for the judge calls made inside (in this task and the tasks it starts)."""
    meter = JudgeMeter()
    token = _current.set(meter)
    try:
        yield meter
    finally:
        _current.reset(token)


def admit(budget: TokenBudget | None) -> None:
    """Raise BudgetSpent instead of starting a call once ``budget`` is spent."""
    if budget is None or not budget.spent():
        return
    budget.refused += 1
    meter = _current.get()
    if meter is not None:
        meter.refused = budget.message()
    raise BudgetSpent(f"not evaluated: {budget.message()}; no further judge call starts")


def charge(budget: TokenBudget | None, model: str, input: int, output: int) -> None:
    """An answer's tokens: to the budget and to the meter of the metric that asked."""
    if budget is not None:
        budget.charge(input + output)
    meter = _current.get()
    if meter is not None:
        meter.tokens = meter.tokens or Tokens()
        meter.tokens.add(input, output, model=model)


def count_vertex_instances(count: int) -> None:
    """Instances the Vertex AI evaluation service scored for the metric that asked: its
    EvaluateInstancesResponse has no usage field, so instances are all there is to count."""
    meter = _current.get()
    if meter is not None:
        meter.vertex_instances += count


class BudgetedGuard:
    """The run's JudgeGuard, refusing a call once the budget is spent: checked when the call
    has its slot (judge-concurrency), just before it starts, so that calls queued while the
    budget was being spent do not start."""

    def __init__(self, guard, budget: TokenBudget):
        self._guard, self._budget = guard, budget

    def left(self) -> float:
        admit(self._budget)
        return self._guard.left()

    def answered(self) -> None:
        self._guard.answered()

    def timed_out(self, seconds: float) -> None:
        self._guard.timed_out(seconds)
