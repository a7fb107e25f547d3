"""The report as plain data: what the templates show (``report`` in their context).

Built from a results file: per-set tables (cases that need attention first, the rest
collapsed), the explained failing cases, what changed against a baseline, and the footer.
A ``Budget`` says how much of it one rendering may include (report/markdown.py shrinks it
until the text fits a comment).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..models.results import EvalSetResult, MetricResult, Results
from .efficiency import token_line
from .explain import Explanation, case_headline, explain, fmt_score
from .text import fmt_duration


def fmt_range(metric: MetricResult) -> str:
    bounds = metric.min_max
    # One run, or every run alike: a range would only repeat the score.
    if bounds is None or bounds[0] == bounds[1]:
        return ""
    return f"{bounds[0]:.2f}\u2013{bounds[1]:.2f}"



@dataclass
class Budget:
    """What one rendering may include; the publisher shrinks it until the text fits."""

    detail_cases: int | None = None   # failing cases explained in <details>; None = all
    passing_rows: bool = True         # table rows of passing cases
    max_rows: int | None = None       # table rows per report; None = all


@dataclass
class Cell:
    status: str
    score: str
    range: str
    threshold: str


@dataclass
class Column:
    name: str
    threshold: str | None  # shown in the header when every case shares it


@dataclass
class CaseRow:
    eval_id: str
    status: str
    url: str | None
    cells: dict[str, Cell]
    note: str  # e.g. "1 of 2 runs errored"


@dataclass
class SetView:
    eval_set_id: str
    path: str
    url: str | None
    columns: list[Column]
    rows: list[CaseRow]
    hidden_rows: int = 0

@dataclass
class CaseDetail:
    eval_set_id: str
    eval_id: str
    path: str
    line: int
    url: str | None
    status: str
    headline: str
    explanations: list[Explanation]
    turns_hidden: int = 0


@dataclass
class Footer:
    """The report's last line: which evalcheck, how long, which judges at what cost."""

    version: str = ""
    duration: str = ""
    judges: list[str] = field(default_factory=list)  # judge models and backends that scored
    judge_calls: int | None = None                   # None: no judge statistics recorded
    judge_cached: int = 0
    warnings: list[str] = field(default_factory=list)  # settings read but not acted on
    tokens: str = ""  # the token breakdown per turn (report/efficiency.py), "" without counts


@dataclass
class ReportView:
    sets: list[SetView]
    failing: list[CaseDetail]          # the explained cases (within budget)
    failing_total: int
    failing_metrics: list[tuple[str, int]]  # metric name, failing cases
    rows_hidden: int = 0
    footer: Footer = field(default_factory=Footer)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def build_footer(results: Results) -> Footer:
    """From ``results.metadata`` (written by ``evalcheck run``) and the metrics' details;
    a results file without metadata (an older one, a hand-made one) gives an empty footer."""
    meta = results.metadata if isinstance(results.metadata, dict) else {}
    footer = Footer()
    version = meta.get("evalcheckVersion")
    if isinstance(version, str):
        footer.version = version
    duration = meta.get("durationSeconds")
    if isinstance(duration, (int, float)) and not isinstance(duration, bool) and duration >= 0:
        footer.duration = fmt_duration(float(duration))
    warnings = meta.get("warnings")
    if isinstance(warnings, list):
        footer.warnings = [w for w in warnings if isinstance(w, str)][:10]
    judges: set[str] = set()
    judge = meta.get("judge")
    if isinstance(judge, dict):
        footer.judge_calls = _count(judge.get("calls"))
        footer.judge_cached = _count(judge.get("cacheHits")) + _count(judge.get("reusedInRun"))
        models = judge.get("models")
        if isinstance(models, list):
            judges.update(m for m in models if isinstance(m, str) and m)
    # Every answer may have come from the cache (no model in the statistics): the metrics'
    # details still say which judge scored them.
    for eval_set in results.eval_sets:
        for case in eval_set.cases:
            for metric in case.metrics:
                details = metric.details if isinstance(metric.details, dict) else {}
                # The model when there is one (safety_v1 on Gemini), else the backend (Vertex AI).
                for key in ("judgeModel", "backend"):
                    if isinstance(details.get(key), str) and details[key]:
                        judges.add(details[key])
                        break
    footer.judges = sorted(judges)
    footer.tokens = token_line(results)
    return footer


@dataclass
class Links:
    """Where the report may link to; all optional (a local CLI run has none)."""

    run_url: str | None = None
    blob_base: str | None = None  # https://github.com/o/r/blob/<sha>

    def file(self, path: str, line: int | None = None) -> str | None:
        if not self.blob_base:
            return None
        from urllib.parse import quote

        return f"{self.blob_base}/{quote(path)}" + (f"#L{line}" if line else "")


def _set_view(eval_set: EvalSetResult, links: Links, budget: Budget) -> SetView:
    names: list[str] = []
    thresholds: dict[str, set[str]] = {}
    for case in eval_set.cases:
        for m in case.metrics:
            if m.status == "informational":
                continue
            if m.name not in names:
                names.append(m.name)
            thresholds.setdefault(m.name, set()).add(fmt_score(m.threshold))
    columns = [Column(n, next(iter(thresholds[n])) if len(thresholds[n]) == 1 else None) for n in names]
    rows = []
    hidden = 0
    for case in eval_set.cases:
        if case.status == "passed" and not budget.passing_rows:
            hidden += 1
            continue
        errored = sum(1 for r in case.runs if r.status == "error")
        metric_errors = any(m.status == "error" for m in case.metrics)
        note = (f"{errored} of {len(case.runs)} runs errored" if errored
                else "metric error" if metric_errors else "")
        rows.append(CaseRow(
            eval_id=case.eval_id, status=case.status, url=links.file(eval_set.path, case.line),
            cells={m.name: Cell(m.status, fmt_score(m.score), fmt_range(m), fmt_score(m.threshold))
                   for m in case.metrics if m.status != "informational"},
            note=note))
    return SetView(eval_set.eval_set_id, eval_set.path, links.file(eval_set.path), columns, rows, hidden)


def build_view(results: Results, links: Links | None = None, budget: Budget | None = None) -> ReportView:
    links = links or Links()
    budget = budget or Budget()
    sets = [_set_view(s, links, budget) for s in results.eval_sets]
    rows_hidden = sum(s.hidden_rows for s in sets)
    if budget.max_rows is not None:
        left = budget.max_rows
        for s in sets:
            keep = max(0, min(left, len(s.rows)))
            s.hidden_rows += len(s.rows) - keep
            rows_hidden += len(s.rows) - keep
            s.rows = s.rows[:keep]
            left -= keep
    failing_cases = results.failing_cases()
    limit = len(failing_cases) if budget.detail_cases is None else budget.detail_cases
    failing = []
    for eval_set, case in failing_cases[:limit]:
        explanations, turns_hidden = explain(case)
        failing.append(CaseDetail(eval_set.eval_set_id, case.eval_id, eval_set.path, case.line,
                                  links.file(eval_set.path, case.line), case.status,
                                  case_headline(case), explanations, turns_hidden))
    counts: dict[str, int] = {}
    for _, case in failing_cases:
        for m in case.metrics:
            if m.status in ("failed", "error"):
                counts[m.name] = counts.get(m.name, 0) + 1
    return ReportView(sets=[s for s in sets if s.rows or s.hidden_rows], failing=failing,
                      failing_total=len(failing_cases), failing_metrics=list(counts.items()),
                      rows_hidden=rows_hidden, footer=build_footer(results))


def omitted_notes(view: ReportView) -> list[str]:
    notes = []
    if len(view.failing) < view.failing_total:
        n = view.failing_total - len(view.failing)
        notes.append(f"the explanation of {n} failing case{'s' if n != 1 else ''}")
    if view.rows_hidden:
        notes.append(f"{view.rows_hidden} table row{'s' if view.rows_hidden != 1 else ''}")
    return notes


