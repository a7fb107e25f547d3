"""Scores as reports write them, and why a failed metric failed under the verdict rule."""

from __future__ import annotations

from ..models.verdict_rule import VerdictRule, run_passes
from ..models.results import MetricResult


def fmt_score(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def fmt_p(p: float) -> str:
    """A p-value with the digits that matter: ``0.05``, ``0.0025``, ``5.75e-08`` - never
    ``0.00`` for a drop that is certain."""
    if p >= 0.01 or p == 0:
        return f"{p:.2f}"
    return f"{p:.2g}" if p >= 0.001 else f"{p:.2e}"


def _runs_short(metric: MetricResult, rule: VerdictRule) -> tuple[int, int, int]:
    """(runs reaching the threshold, runs scored, runs the rule needs)."""
    passed, scored = run_passes(metric)
    return passed, scored, rule.needed(scored)


def shortfall(metric: MetricResult, rule: VerdictRule) -> str:
    """Why a failed metric failed, in its rule's terms: ``0.60 < 0.80`` under ``mean``;
    ``3/4 runs >= 0.50, all-runs needs 4 (mean 0.75)`` under a rule that counts runs, where
    a mean above the threshold is no contradiction."""
    worse, reach = (">", "<=") if metric.lower_is_better else ("<", ">=")
    if rule.kind == "mean" or metric.threshold is None:
        return f"{fmt_score(metric.score)} {worse} {fmt_score(metric.threshold)}"
    passed, scored, need = _runs_short(metric, rule)
    return (f"{passed}/{scored} runs {reach} {fmt_score(metric.threshold)}, {rule} needs {need} "
            f"(mean {fmt_score(metric.score)})")


def requirement(metric: MetricResult, rule: VerdictRule) -> str:
    """What a metric needs, for "scored X (needs ...)": the threshold under ``mean``, else
    the threshold in so many runs, and how many reached it."""
    if rule.kind == "mean" or metric.threshold is None:
        return fmt_score(metric.threshold)
    passed, scored, need = _runs_short(metric, rule)
    return (f"{fmt_score(metric.threshold)} in {need} of {scored} runs under {rule}; "
            f"{passed} reached it")


def not_evaluated(metric: MetricResult) -> str:
    """Why a gating metric that no run scored failed its case (as AgentEvaluator says it)."""
    return "was not evaluated" + (f": {metric.error}" if metric.error else "")
