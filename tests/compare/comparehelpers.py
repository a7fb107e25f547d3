"""Results built by hand for comparison tests: one eval set, cases with per-run scores."""

from __future__ import annotations

from checker.models.results import CaseResult, EvalSetResult, MetricResult, Results, RunResult
from checker.scoring.pipeline import summarize


def metric(runs: list[float | None], threshold: float = 1.0, name: str = "tool_trajectory_avg_score") -> MetricResult:
    scored = [s for s in runs if s is not None]
    score = sum(scored) / len(scored) if scored else None
    status = "not_evaluated" if score is None else "passed" if score >= threshold else "failed"
    return MetricResult(name=name, threshold=threshold, score=score, status=status, runs=runs)


def case_result(eval_id: str, *metrics: MetricResult, fingerprint: str | None = "sha256:same") -> CaseResult:
    width = max(len(m.runs) for m in metrics)
    runs = [RunResult(run=i + 1, status="passed" if all(
        m.runs[i] is not None and m.runs[i] >= m.threshold for m in metrics) else "failed")
        for i in range(width)]
    status = "failed" if any(m.status == "failed" for m in metrics) else "passed"
    return CaseResult(eval_id=eval_id, status=status, runs=runs, metrics=list(metrics),
                      fingerprint=fingerprint)


def results(*cases: CaseResult, set_id: str = "weather") -> Results:
    sets = [EvalSetResult(eval_set_id=set_id, path=f"{set_id}.evalset.json", cases=list(cases))]
    summary = summarize(sets)
    return Results(passed=summary.passed == summary.cases, summary=summary, eval_sets=sets)


def label(base: Results, head: Results, eval_id: str):
    from checker.compare.comparison import compare

    compared = compare(base, head)
    (found,) = [c for s in compared.eval_sets for c in s.cases if c.eval_id == eval_id]
    return found, compared
