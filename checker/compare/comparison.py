"""Compare a results file with a baseline's: change labels, p-values, suite-level deltas.

Cases are matched by (eval set id, eval id). Per gating metric, the runs' pass/fail counts
of both sides go through a one-sided Fisher exact test; a case is ``regressed`` only when
some metric is significantly worse (p <= alpha) or dropped deterministically (every run of
both sides scored the same, at least two runs a side, and the PR's score is lower and fails
the threshold). ``improved`` is the mirror image. Anything else is ``unchanged``: a drop the
test cannot tell from noise keeps its p-value for the reports ("within noise").
See docs/comparing.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..inputs.bulk import paused_gc
from ..models.results import (BaselineInfo, CaseRef, CaseResult, ChangeSummary, Comparison,
                              MetricResult, Results)
from .stats import BOOTSTRAP_SEED, fisher_better, fisher_worse, paired_bootstrap, wilson
from .verdict import case_flaky

DEFAULT_ALPHA = 0.05
# A "deterministic" drop needs this many identical runs a side: one run shows no spread.
MIN_DETERMINISTIC_RUNS = 2


@dataclass(frozen=True)
class MetricComparison:
    direction: str | None  # "regressed", "improved" or None
    baseline_score: float | None
    delta: float | None
    p_value: float | None


def _deterministic(base: list[float], head: list[float]) -> bool:
    return (len(base) >= MIN_DETERMINISTIC_RUNS and len(head) >= MIN_DETERMINISTIC_RUNS
            and min(base) == max(base) and min(head) == max(head))


def deterministic_change(metric: MetricResult) -> bool:
    """A compared metric whose runs scored the same on each side (at least two runs a side)
    and moved: the evidence is the determinism, not the p-value (reports say which)."""
    if metric.baseline_runs is None:
        return False
    base, head = _scored_runs(metric.baseline_runs), _scored_runs(metric.runs)
    return _deterministic(base, head) and base[0] != head[0]


def _scored_runs(runs: list[float | None]) -> list[float]:
    return [s for s in runs if s is not None]


def compare_metric(base: MetricResult, head: MetricResult, alpha: float = DEFAULT_ALPHA) -> MetricComparison:
    """One metric of one case on both sides. Informational metrics get a delta only."""
    delta = (head.score - base.score if head.score is not None and base.score is not None
             else None)
    threshold = head.threshold
    gating = head.status != "informational" and threshold is not None and \
        base.threshold == threshold
    base_runs, head_runs = _scored_runs(base.runs), _scored_runs(head.runs)
    if not gating or not base_runs or not head_runs:
        return MetricComparison(None, base.score, delta, None)
    k_base = len([s for s in base_runs if s >= threshold])
    k_head = len([s for s in head_runs if s >= threshold])
    n_base, n_head = len(base_runs), len(head_runs)
    worse = fisher_worse(k_base, n_base, k_head, n_head)
    better = fisher_better(k_base, n_base, k_head, n_head)
    fixed = _deterministic(base_runs, head_runs)
    direction = None
    if worse <= alpha or (fixed and head_runs[0] < base_runs[0] and head_runs[0] < threshold):
        direction = "regressed"
    elif better <= alpha or (fixed and head_runs[0] > base_runs[0] and head_runs[0] >= threshold):
        direction = "improved"
    # The p-value of the direction the pass rate moved in ("worse" when it did not move).
    p_value = worse if k_head * n_base <= k_base * n_head else better
    return MetricComparison(direction, base.score, delta, p_value)


def _criteria(case: CaseResult) -> dict[str, float | None]:
    return {m.name: m.threshold for m in case.metrics if m.status != "informational"}


_AGAINST_BASELINE = ("baseline_score", "delta", "p_value", "baseline_runs")


def _uncompared(metric: MetricResult) -> MetricResult:
    """The metric without figures of an earlier comparison (HEAD may be a compared file)."""
    if all(getattr(metric, key) is None for key in _AGAINST_BASELINE):
        return metric
    return metric.model_copy(update=dict.fromkeys(_AGAINST_BASELINE))


def _label_case(base: CaseResult | None, head: CaseResult, alpha: float) -> CaseResult:
    # Flakiness is recomputed: a results file older than the label has none.
    flaky = case_flaky(head.metrics)
    if base is None or (base.fingerprint and head.fingerprint and base.fingerprint != head.fingerprint) \
            or _criteria(base) != _criteria(head):
        return head.model_copy(update={"change": "new" if base is None else "changed", "flaky": flaky,
                                       "metrics": [_uncompared(m) for m in head.metrics]})
    base_metrics = {m.name: m for m in base.metrics}
    metrics, directions = [], set()
    for metric in head.metrics:
        other = base_metrics.get(metric.name)
        if other is None:
            metrics.append(_uncompared(metric))
            continue
        found = compare_metric(other, metric, alpha)
        if found.direction:
            directions.add(found.direction)
        metrics.append(metric.model_copy(update={"baseline_score": found.baseline_score,
                                                 "delta": found.delta, "p_value": found.p_value,
                                                 "baseline_runs": other.runs}))
    change = ("regressed" if "regressed" in directions else
              "improved" if "improved" in directions else "unchanged")
    return head.model_copy(update={"metrics": metrics, "change": change, "flaky": flaky})


def _rate(passed: int, cases: int) -> dict[str, Any]:
    low, high = wilson(passed, cases)
    return {"passed": passed, "cases": cases, "rate": passed / cases if cases else None,
            "low": low, "high": high}


def suite_metrics(pairs: list[tuple[CaseResult, CaseResult]], *,
                  seed: int = BOOTSTRAP_SEED) -> list[dict[str, Any]]:
    """Per gating metric, over the cases compared on both sides with a score on both: the
    mean score delta with its paired-bootstrap 95% interval, and each side's pass rate
    (cases whose metric passed) with its Wilson 95% interval."""
    collected: dict[str, tuple[list[float], list[int], list[int]]] = {}
    for base, head in pairs:
        base_metrics = {m.name: m for m in base.metrics}
        for metric in head.metrics:
            other = base_metrics.get(metric.name)
            if metric.status == "informational" or other is None \
                    or metric.score is None or other.score is None:
                continue
            deltas, base_passed, head_passed = collected.setdefault(metric.name, ([], [], []))
            deltas.append(metric.score - other.score)
            base_passed.append(other.status == "passed")
            head_passed.append(metric.status == "passed")
    out = []
    for name, (deltas, base_passed, head_passed) in collected.items():
        interval = paired_bootstrap(deltas, seed=seed)
        assert interval is not None
        out.append({"name": name, "cases": len(deltas), "meanDelta": interval.mean,
                    "interval": {"low": interval.low, "high": interval.high,
                                 "method": interval.method},
                    "baselinePassRate": _rate(sum(base_passed), len(deltas)),
                    "passRate": _rate(sum(head_passed), len(deltas))})
    return out


@dataclass(frozen=True)
class SuiteShift:
    """A gating metric whose suite-level mean moved beyond its 95% interval's reach of 0."""

    metric: str
    mean: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.metric} {self.mean:+.2f} (95% interval {self.low:+.2f} to {self.high:+.2f})"


def suite_drops(comparison: Comparison | None) -> list[SuiteShift]:
    """The metrics whose mean score dropped over the compared cases with the whole 95%
    interval below 0. Many cases can each drop within noise and together drop for sure: the
    per-case labels cannot say it, so the reports must (read defensively: from a file)."""
    drops = []
    for row in comparison.metrics if comparison is not None else []:
        interval = row.get("interval") if isinstance(row, dict) else None
        if not isinstance(interval, dict) or not isinstance(row.get("name"), str):
            continue
        mean, low, high = row.get("meanDelta"), interval.get("low"), interval.get("high")
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (mean, low, high)) \
                and high < 0:
            drops.append(SuiteShift(row["name"], mean, low, high))
    return drops


def compare(baseline: Results, head: Results, *, alpha: float = DEFAULT_ALPHA,
            baseline_info: BaselineInfo | None = None, seed: int = BOOTSTRAP_SEED) -> Results:
    """``head`` with every case labelled against ``baseline`` and ``comparison`` filled in.

    Pure: neither input is modified (cases and metrics that change are copies).
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    with paused_gc():
        return _compare(baseline, head, alpha, baseline_info, seed)


def _compare(baseline: Results, head: Results, alpha: float, baseline_info: BaselineInfo | None,
             seed: int) -> Results:
    by_key = {(s.eval_set_id, c.eval_id): c for s in baseline.eval_sets for c in s.cases}
    seen: set[tuple[str, str]] = set()
    pairs: list[tuple[CaseResult, CaseResult]] = []
    summary = ChangeSummary()
    unknown = 0
    sets = []
    for eval_set in head.eval_sets:
        cases = []
        for case in eval_set.cases:
            key = (eval_set.eval_set_id, case.eval_id)
            seen.add(key)
            base = by_key.get(key)
            labelled = _label_case(base, case, alpha)
            if base is not None and not (base.fingerprint and case.fingerprint):
                unknown += 1
            if labelled.change not in ("new", "changed"):
                pairs.append((base, labelled))  # type: ignore[arg-type]
            setattr(summary, labelled.change, getattr(summary, labelled.change) + 1)
            cases.append(labelled)
        sets.append(eval_set.model_copy(update={"cases": cases}))
    removed = [CaseRef(eval_set_id=k[0], eval_id=k[1]) for k in by_key if k not in seen]
    summary.removed = len(removed)
    notes = []
    if unknown:
        notes.append(f"fingerprint unknown for {unknown} case(s) (a results file written before "
                     "fingerprints): matched by eval set and case id only, a change of their "
                     "eval data cannot be seen")
    if baseline.verdict_rule != head.verdict_rule:
        notes.append(f"verdict rules differ: baseline '{baseline.verdict_rule}', this run "
                     f"'{head.verdict_rule}'")
    comparison = Comparison(baseline=baseline_info or BaselineInfo(), summary=summary,
                            removed=removed, metrics=suite_metrics(pairs, seed=seed), notes=notes)
    return head.model_copy(update={"eval_sets": sets, "comparison": comparison})
