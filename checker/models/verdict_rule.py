"""Verdict rules: how a metric's per-run scores make its pass/fail (CONTRACT section 8).
Every stage reads them (the options, replay, scoring, comparing, the reports): they sit in
models/, below the stages.

- ``mean`` (default, ADK's rule): the metric's score (the mean over every scored turn of
  every run, scoring/aggregation.py) passes the threshold.
- ``all-runs``: every scored run passes (pass^k, the strictest).
- ``majority``: more than half of the scored runs pass.
- ``k-of-n:K``: at least K scored runs pass.

A run passes at ``score >= threshold``, or ``<=`` for a metric whose evaluator marks lower
scores as passing (``MetricResult.lower_is_better``). Runs whose agent failed have no score
(None) and are left out, as ADK's mean leaves them out; such a run already makes its case
``error``. A metric is *flaky* when its scored runs disagree: some pass the threshold,
some fail.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import InputError
from .results import MetricResult, meets_threshold


@dataclass(frozen=True)
class VerdictRule:
    kind: str  # "mean", "all-runs", "majority" or "k-of-n"
    k: int = 0  # for k-of-n

    def __str__(self) -> str:
        return f"k-of-n:{self.k}" if self.kind == "k-of-n" else self.kind

    def passes(self, runs: Sequence[float | None], threshold: float, lower_is_better: bool = False,
               score: float | None = None) -> bool | None:
        """The verdict over the scored runs; None when no run was scored. ``score``: the
        metric's (pooled over turns), which ``mean`` decides on; by default the runs' mean."""
        scored = [s for s in runs if s is not None]
        if not scored:
            return None
        if self.kind == "mean":
            mean = score if score is not None else sum(scored) / len(scored)
            return meets_threshold(mean, threshold, lower_is_better)
        passing = sum(meets_threshold(s, threshold, lower_is_better) for s in scored)
        return passing >= self.needed(len(scored))

    def needed(self, scored: int) -> int:
        """Passing runs a rule that counts runs needs out of ``scored`` (not for ``mean``)."""
        if self.kind == "all-runs":
            return scored
        if self.kind == "majority":
            return scored // 2 + 1
        return self.k

    def uncertain(self, runs: list[float | None], threshold: float,
                  lower_is_better: bool = False) -> bool:
        """Could one more run like those seen change this verdict? (adaptive runs)

        The next run is taken to score like the lowest or the highest run so far; the
        verdict is uncertain when either would change it. So runs that all pass (or all
        fail) are settled; under ``mean`` disagreeing runs are settled once one more run
        cannot move the mean across the threshold; under ``all-runs`` a failed run settles
        the case (no run can undo it); under ``k-of-n:K`` a case K-1 passes short with only
        passing runs is not settled. See docs/comparing.md.
        """
        scored = [s for s in runs if s is not None]
        if not scored:
            return False
        now = self.passes(scored, threshold, lower_is_better)
        return any(self.passes(scored + [nxt], threshold, lower_is_better) != now
                   for nxt in {min(scored), max(scored)})


MEAN = VerdictRule("mean")


def parse_verdict_rule(text: str, *, source: str = "--verdict") -> VerdictRule:
    """``mean``, ``all-runs``, ``majority`` or ``k-of-n:K`` (K >= 1); else InputError."""
    value = text.strip().lower()
    if value in ("mean", "all-runs", "majority"):
        return VerdictRule(value)
    if value.startswith("k-of-n:"):
        number = value.split(":", 1)[1]
        if number.isdigit() and int(number) >= 1:
            return VerdictRule("k-of-n", int(number))
    raise InputError(f"{source}: unknown verdict rule {text!r}",
                     fix="use mean, all-runs, majority or k-of-n:K with K >= 1, e.g. k-of-n:2")


def rule_of(text: str) -> VerdictRule:
    """A results file's ``verdictRule`` (written by evalcheck; ``mean`` when unreadable)."""
    try:
        return parse_verdict_rule(text or "mean")
    except InputError:
        return MEAN


def runs_needed(rule: VerdictRule) -> int:
    """Fewest runs under which the rule can pass at all."""
    return rule.k if rule.kind == "k-of-n" else 1


def run_passes(metric: MetricResult) -> tuple[int, int]:
    """(runs passing the threshold, runs scored) of a gating metric; (0, 0) otherwise."""
    if metric.threshold is None or metric.status == "informational":
        return (0, 0)
    scored = [s for s in metric.runs if s is not None]
    return (sum(metric.meets(s) for s in scored), len(scored))


def metric_flaky(metric: MetricResult) -> bool:
    passed, scored = run_passes(metric)
    return 0 < passed < scored


def case_flaky(metrics: list[MetricResult]) -> bool:
    return any(metric_flaky(m) for m in metrics)
