"""Markdown reports rendered with Jinja2 templates shipped in the package.

The same context feeds the CLI's ``--markdown`` file, the PR comment, the job summary and a
user's own template: ``results`` (the results file as models), ``report`` (a view built
here: per-set tables and, for each failing case, why it failed), ``run_url``, ``title``,
``budget`` (what this rendering may show) and ``omitted`` (what was cut to fit, in words).

Everything that came from an agent or an eval file goes through a filter: ``md`` (plain
text), ``code`` (inline code span) or ``fence`` (code block); see report/text.py.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import jinja2

from ..models.results import CaseResult, EvalSetResult, MetricResult, Results
from .judged import JudgeTurn, judge_evidence
from .text import clip, clip_tail, fmt_duration, md_code, md_fence, printable

TEMPLATES = Path(__file__).parent / "templates"
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")

# Fixed caps per failing case, so one runaway agent cannot crowd out the others.
MAX_CALL_ROWS = 25        # tool calls shown per invocation
MAX_INVOCATIONS = 3       # failing turns explained per metric
MAX_TEXT = 1500           # characters of a response shown
MAX_CALL_TEXT = 200       # characters of one rendered tool call
STDERR_LINES, STDERR_CHARS = 30, 2500


def md_escape(text: Any) -> str:
    """Escape untrusted text for a markdown table cell or paragraph.

    HTML is entity-escaped, markdown punctuation that could open links, emphasis, code or
    tables is backslash-escaped, @mentions and #refs are defused, and newlines flattened.
    """
    s = html.escape(printable(str(text)), quote=False)
    s = re.sub(r"([\\`*_\[\]|~#!])", r"\\\1", s)
    s = _MENTION.sub("@\u200b", s)
    return " ".join(s.split())


def html_text(text: Any) -> str:
    """Untrusted text inside raw HTML (``<summary>``): entity-escaped, mentions defused."""
    s = html.escape(" ".join(printable(str(text)).split()), quote=True)
    return _MENTION.sub("@\u200b", s)


def fmt_score(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def fmt_range(metric: MetricResult) -> str:
    bounds = metric.min_max
    # One run, or every run alike: a range would only repeat the score.
    if bounds is None or bounds[0] == bounds[1]:
        return ""
    return f"{bounds[0]:.2f}\u2013{bounds[1]:.2f}"


STATUS_ICON = {"passed": "\u2705", "failed": "\u274c", "error": "\u26a0\ufe0f",
               "not_evaluated": "\u2796", "informational": "\u2139\ufe0f"}


# --- the view: what the templates show ------------------------------------------------

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
class CallRow:
    index: int
    expected: str | None
    actual: str | None
    diverges: bool


@dataclass
class Explanation:
    kind: str  # trajectory | f1 | response | judge | metric_error | run_error | not_evaluated | score
    metric: str = ""
    run: int | None = None
    turn: int | None = None
    score: str = ""
    threshold: str = ""
    first_divergence: int | None = None
    calls: list[CallRow] = field(default_factory=list)
    calls_hidden: int = 0
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    expected_text: str = ""
    actual_text: str = ""
    error: str = ""
    stderr: str = ""
    judge: str = ""                   # which judge scored: model and samples, or backend
    evidence: JudgeTurn | None = None  # kind "judge": what the judge said on one turn


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


@dataclass
class ReportView:
    sets: list[SetView]
    failing: list[CaseDetail]          # the explained cases (within budget)
    failing_total: int
    failing_metrics: list[tuple[str, int]]  # metric name, failing cases
    rows_hidden: int = 0
    footer: Footer = field(default_factory=Footer)


def fmt_call(call: Any) -> str:
    """``name(arg="value", n=2)`` from a call's JSON; clipped so one call stays one line."""
    if not isinstance(call, dict):
        return clip(str(call), MAX_CALL_TEXT)
    args = call.get("args") or {}
    if isinstance(args, dict):
        inner = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, sort_keys=True)}"
                          for k, v in args.items())
    else:
        inner = json.dumps(args, ensure_ascii=False)
    return clip(f"{call.get('name', '?')}({inner})", MAX_CALL_TEXT)


def _invocations(metric: MetricResult) -> list[dict[str, Any]]:
    inv = metric.details.get("invocations") if isinstance(metric.details, dict) else None
    return [i for i in inv if isinstance(i, dict)] if isinstance(inv, list) else []


def _worst_run(metric: MetricResult) -> int | None:
    run = metric.details.get("worstRun") if isinstance(metric.details, dict) else None
    return run if isinstance(run, int) else None


def _trajectory(metric: MetricResult) -> tuple[list[Explanation], int]:
    failing = [(n, i) for n, i in enumerate(_invocations(metric), 1)
               if i.get("score") is not None and i.get("score") < 1.0]
    out = []
    for turn, inv in failing[:MAX_INVOCATIONS]:
        expected = inv.get("expected") if isinstance(inv.get("expected"), list) else []
        actual = inv.get("actual") if isinstance(inv.get("actual"), list) else []
        div = inv.get("firstDivergence")
        div = div if isinstance(div, int) else None
        # The metric lists a window of calls starting at position `listedFrom` (0-based).
        start = inv.get("listedFrom")
        start = start if isinstance(start, int) and start >= 0 else 0
        rows = [CallRow(index=start + k + 1,
                        expected=fmt_call(expected[k]) if k < len(expected) else None,
                        actual=fmt_call(actual[k]) if k < len(actual) else None,
                        diverges=start + k == div)
                for k in range(max(len(expected), len(actual)))]
        shown = rows[:MAX_CALL_ROWS]
        # Keep the divergence row visible even when it lies past the cap.
        if div is not None and MAX_CALL_ROWS <= div - start < len(rows):
            shown = rows[:MAX_CALL_ROWS - 1] + [rows[div - start]]
        total = max(_count_of(inv, "expectedCount", expected, start),
                    _count_of(inv, "actualCount", actual, start))
        out.append(Explanation(kind="trajectory", metric=metric.name, run=_worst_run(metric),
                               turn=turn, score=fmt_score(inv.get("score")),
                               threshold=fmt_score(metric.threshold),
                               first_divergence=None if div is None else div + 1,
                               calls=shown, calls_hidden=max(0, total - len(shown))))
    return out, max(0, len(failing) - MAX_INVOCATIONS)


def _count_of(inv: dict[str, Any], key: str, listed: list[Any], start: int) -> int:
    count = inv.get(key)
    if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
        return count
    return start + len(listed)


def _f1(metric: MetricResult) -> tuple[list[Explanation], int]:
    failing = [(n, i) for n, i in enumerate(_invocations(metric), 1)
               if i.get("missing") or i.get("unexpected")]
    out = []
    for turn, inv in failing[:MAX_INVOCATIONS]:
        missing = [fmt_call(c) for c in inv.get("missing") or []][:MAX_CALL_ROWS]
        unexpected = [fmt_call(c) for c in inv.get("unexpected") or []][:MAX_CALL_ROWS]
        hidden = (int(inv.get("missingCount") or len(missing)) - len(missing)
                  + int(inv.get("unexpectedCount") or len(unexpected)) - len(unexpected))
        out.append(Explanation(kind="f1", metric=metric.name, run=_worst_run(metric), turn=turn,
                               score=fmt_score(inv.get("score")),
                               threshold=fmt_score(metric.threshold),
                               missing=missing, unexpected=unexpected, calls_hidden=max(0, hidden)))
    return out, max(0, len(failing) - MAX_INVOCATIONS)


def _response(metric: MetricResult) -> tuple[list[Explanation], int]:
    invs = [(n, i) for n, i in enumerate(_invocations(metric), 1)
            if "expected" in i or "actual" in i]
    # The lowest-scoring turns of the worst run say most about why the mean missed.
    invs.sort(key=lambda p: p[1].get("score") if isinstance(p[1].get("score"), (int, float)) else -1)
    out = [Explanation(kind="response", metric=metric.name, run=_worst_run(metric), turn=turn,
                       score=fmt_score(inv.get("score")), threshold=fmt_score(metric.threshold),
                       expected_text=clip(str(inv.get("expected") or ""), MAX_TEXT),
                       actual_text=clip(str(inv.get("actual") or ""), MAX_TEXT))
           for turn, inv in invs[:MAX_INVOCATIONS]]
    return out, max(0, len(invs) - MAX_INVOCATIONS)


def _judged(metric: MetricResult) -> tuple[list[Explanation], int, str]:
    """The judge's verdicts on the turns that explain a failed or errored judge metric,
    and which judge it was ("" for a metric no judge scored)."""
    evidence = judge_evidence(metric)
    if evidence is None:
        return [], 0, ""
    out = [Explanation(kind="judge", metric=metric.name, run=evidence.run, turn=turn.turn,
                       score=fmt_score(turn.score), threshold=fmt_score(metric.threshold),
                       judge=evidence.judge, evidence=turn)
           for turn in evidence.turns]
    return out, evidence.turns_hidden, evidence.judge


def _deterministic(metric: MetricResult) -> tuple[list[Explanation], int]:
    """Evidence of a metric computed without a judge: call tables, missing calls, texts."""
    invocations = _invocations(metric)
    if any("firstDivergence" in i or ("expected" in i and isinstance(i.get("expected"), list))
           for i in invocations):
        return _trajectory(metric)
    if any("missing" in i or "unexpected" in i for i in invocations):
        return _f1(metric)
    if any("expected" in i or "actual" in i for i in invocations):
        return _response(metric)
    return [], 0


def explain(case: CaseResult) -> tuple[list[Explanation], int]:
    """Why a case did not pass: errored agent runs first, then each failing metric's evidence."""
    out: list[Explanation] = []
    hidden = 0
    for run in case.runs:
        if run.status == "error" or run.error:
            out.append(Explanation(kind="run_error", run=run.run,
                                   error=clip(printable(run.error or "run errored"), MAX_TEXT),
                                   stderr=clip_tail(printable(run.stderr_tail or ""),
                                                    STDERR_LINES, STDERR_CHARS)))
    for metric in case.metrics:
        if metric.status == "error" or (metric.status == "not_evaluated" and metric.error):
            parts, more, judge = _judged(metric) if metric.status == "error" else ([], 0, "")
            out.append(Explanation(kind="metric_error" if metric.status == "error" else "not_evaluated",
                                   metric=metric.name, error=clip(printable(metric.error or ""), MAX_TEXT),
                                   judge=judge))
            out.extend(parts)  # what the judge did say before it failed
            hidden += more
            continue
        if metric.status != "failed":
            continue
        parts, more, judge = _judged(metric)
        if not parts:
            parts, more = _deterministic(metric)
        if not parts:  # a metric without per-turn evidence still says its score
            parts = [Explanation(kind="score", metric=metric.name, run=_worst_run(metric),
                                 score=fmt_score(metric.score), threshold=fmt_score(metric.threshold),
                                 judge=judge)]
        out.extend(parts)
        hidden += more
    return out, hidden


def _case_headline(case: CaseResult) -> str:
    bits = [f"{m.name} {fmt_score(m.score)} < {fmt_score(m.threshold)}"
            for m in case.metrics if m.status == "failed"]
    bits += [f"{m.name} could not be computed (metric error)" for m in case.metrics if m.status == "error"]
    errored = sum(1 for r in case.runs if r.status == "error")
    if errored:
        bits.insert(0, f"{errored} of {len(case.runs)} runs errored")
    if case.status == "not_evaluated":
        bits.append("no gating metric could be scored")
    return "; ".join(bits) or case.status


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
                                  _case_headline(case), explanations, turns_hidden))
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


# --- rendering --------------------------------------------------------------------------

def environment(template_dir: Path | None = None) -> jinja2.Environment:
    loaders: list[jinja2.BaseLoader] = [jinja2.FileSystemLoader(str(TEMPLATES))]
    if template_dir is not None:
        loaders.insert(0, jinja2.FileSystemLoader(str(template_dir)))
    env = jinja2.Environment(loader=jinja2.ChoiceLoader(loaders), autoescape=False,
                             undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(md=md_escape, score=fmt_score, range=fmt_range, code=md_code,
                       fence=md_fence, call=fmt_call, h=html_text)
    env.globals.update(icon=STATUS_ICON)
    return env


def render_markdown(results: Results, *, template: Path | None = None,
                    extra: dict[str, Any] | None = None) -> str:
    """Render the report. ``extra`` may carry ``links`` (Links), ``budget`` (Budget),
    ``title`` and anything a user template wants; it is passed to the template as is."""
    extra = dict(extra or {})
    links = extra.pop("links", None) or Links()
    budget = extra.pop("budget", None) or Budget()
    view = build_view(results, links, budget)
    context: dict[str, Any] = {
        "results": results, "report": view, "budget": budget, "omitted": omitted_notes(view),
        "run_url": links.run_url, "title": "Agent evaluation",
    }
    context.update(extra)
    env = environment(template.parent if template else None)
    tmpl = env.get_template(template.name if template else "report.md.j2")
    try:
        return tmpl.render(**context)
    except jinja2.TemplateError as exc:
        if template is None:
            raise
        from ..errors import InputError

        where = getattr(exc, "lineno", None)
        raise InputError(f"template error: {exc.message or exc}", file=str(template), line=where,
                         fix="see docs/github-action.md for the template context") from None


def render_within(results: Results, limit: int, measure: Callable[[str], int], *,
                  template: Path | None = None, extra: dict[str, Any] | None = None,
                  reserve: int = 0) -> tuple[str, list[str]]:
    """The richest rendering whose size (by ``measure``) is at most ``limit - reserve``.

    Shrinks in this order: explanations of the last failing cases, then rows of passing
    cases, then the remaining rows. Returns the text and what was left out, in words.
    """
    limit -= reserve
    extra = dict(extra or {})

    def attempt(budget: Budget) -> str:
        return render_markdown(results, template=template, extra={**extra, "budget": budget})

    full = attempt(Budget())
    if measure(full) <= limit:
        return full, []
    failing = len(results.failing_cases())
    best = _largest(0, failing, lambda k: measure(attempt(Budget(detail_cases=k))) <= limit)
    if best is not None:
        budget = Budget(detail_cases=best)
    else:
        budget = Budget(detail_cases=0, passing_rows=False)
        if measure(attempt(budget)) > limit:
            rows = sum(len(s.cases) for s in results.eval_sets)
            best_rows = _largest(0, rows, lambda r: measure(attempt(replace(budget, max_rows=r))) <= limit)
            budget = replace(budget, max_rows=best_rows or 0)
    text = attempt(budget)
    if measure(text) > limit:  # even the headline alone is too big (a huge user template)
        text = _hard_cut(text, limit, measure)
    view = build_view(results, extra.get("links"), budget)
    return text, omitted_notes(view)


def _largest(lo: int, hi: int, fits: Callable[[int], bool]) -> int | None:
    """Largest n in [lo, hi] with fits(n), assuming fits is monotone; None if none fits."""
    if not fits(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _hard_cut(text: str, limit: int, measure: Callable[[str], int]) -> str:
    note = "\n\n*(report cut to fit; see the job summary)*\n"
    keep = max(0, limit - measure(note))
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if measure(text[:mid]) <= keep:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo] + note
