"""Plain terminal lines: one actionable line per failing metric, then a summary."""

from __future__ import annotations

from ..models.results import Results
from .text import one_line


def fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def failure_lines(results: Results) -> list[str]:
    lines: list[str] = []
    for eval_set, case in results.failing_cases():
        where = f"{eval_set.path}:{case.line} {case.eval_id}"
        for run in case.runs:
            if run.status == "error" and run.error:
                lines.append(f"{where}: run {run.run} errored: {one_line(run.error, 200)}")
        for metric in case.metrics:
            if metric.status == "failed":
                lines.append(f"{where}: {metric.name} {fmt(metric.score)} < {fmt(metric.threshold)}")
            elif metric.status == "error":
                lines.append(f"{where}: {metric.name} could not be computed: {one_line(metric.error or '', 200)}")
        if case.status == "not_evaluated":
            reasons = sorted({m.error for m in case.metrics if m.status == "not_evaluated" and m.error})
            lines.append(f"{where}: not evaluated: no gating metric could be scored"
                         + (f" ({one_line('; '.join(reasons), 200)})" if reasons else ""))
    return lines


def summary_line(results: Results) -> str:
    s = results.summary
    parts = [f"{s.passed} passed", f"{s.failed} failed", f"{s.errored} errored"]
    if s.not_evaluated:
        parts.append(f"{s.not_evaluated} not evaluated")
    verdict = "PASSED" if results.passed else "FAILED"
    return f"{verdict}: {s.cases} eval case(s) in {s.eval_sets} eval set(s): " + ", ".join(parts)
