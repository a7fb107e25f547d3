"""Runs that pass and fail: each metric's passing runs, flakiness, pass counts with their
Wilson intervals. A metric is *flaky* when its scored runs disagree: some pass the threshold,
some fail. (The verdict rules themselves: models/verdict_rule.py.)"""

from __future__ import annotations

from dataclasses import dataclass

from ..models.results import CaseResult, MetricResult
from .stats import wilson


@dataclass(frozen=True)
class PassCount:
    """A case's runs passing every gating metric: k of n, with its Wilson 95% interval."""

    passed: int
    runs: int
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.passed}/{self.runs}"


def _gating(case: CaseResult) -> list[MetricResult]:
    return [m for m in case.metrics if m.threshold is not None and m.status != "informational"]


def _pass_count(runs_of: list[tuple[list[float | None], MetricResult]]) -> PassCount:
    """A run counts when at least one gating metric scored it; it passes when every gating
    metric that scored it passed."""
    width = max((len(r) for r, _ in runs_of), default=0)
    passed = runs = 0
    for i in range(width):
        verdicts = [m.meets(r[i]) for r, m in runs_of if i < len(r) and r[i] is not None]  # type: ignore[arg-type]
        if verdicts:
            runs += 1
            passed += all(verdicts)
    low, high = wilson(passed, runs)
    return PassCount(passed, runs, low, high)


def case_pass_counts(case: CaseResult) -> PassCount:
    """Runs of a case that pass every gating metric (k/N) and the Wilson interval of that
    rate: what reports show beside a flaky case."""
    return _pass_count([(m.runs, m) for m in _gating(case)])


def baseline_pass_counts(case: CaseResult) -> PassCount | None:
    """The same for the baseline's runs kept in a compared case (``baselineRuns``); None
    when the case was not compared (new, changed, no baseline)."""
    runs_of = [(m.baseline_runs, m) for m in _gating(case) if m.baseline_runs is not None]
    return _pass_count(runs_of) if runs_of else None

