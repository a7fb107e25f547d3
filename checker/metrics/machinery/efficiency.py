"""Shared shape of the informational efficiency metrics (lower is better, never gating)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...models.evalset import Invocation
from ..base import InformationalCriterion, InvocationScore, Metric, RunInput, RunScore, ScoringContext


class EfficiencyMetric(Metric):
    criterion_model = InformationalCriterion
    informational = True
    needs_reference = False
    max_value = float("inf")

    def value(self, invocation: Invocation) -> tuple[float | None, dict[str, Any]]:
        raise NotImplementedError

    def score(self, criterion: Any, run: RunInput, context: ScoringContext) -> RunScore:
        per_invocation = []
        for invocation in run.actual:
            value, details = self.value(invocation)
            per_invocation.append(InvocationScore(score=value, details=details))
        return RunScore(score=self.overall([i.score for i in per_invocation]),
                        invocations=per_invocation, details=self.overall_details(per_invocation))

    def overall(self, values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return sum(present) / len(present) if present else None

    def overall_details(self, per_invocation: list[InvocationScore]) -> dict[str, Any]:
        return {}


def average_fields(per_invocation: list[InvocationScore], *, over_all: bool,
                   rounding: Callable[[float], float] = lambda x: x) -> dict[str, Any]:
    """Average each detail field: over every invocation (``over_all``) or those reporting it."""
    fields: dict[str, list[Any]] = {}
    for inv in per_invocation:
        for key, value in inv.details.items():
            fields.setdefault(key, []).append(value)
    out: dict[str, Any] = {}
    for key, values in fields.items():
        present = [v for v in values if v is not None]
        denominator = len(per_invocation) if over_all else len(present)
        out[key] = rounding(sum(present) / denominator) if present else None
    return out
