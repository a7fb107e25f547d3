"""The report as plain data: what the templates show (``report`` in their context).

Built from a results file: per-set tables (cases that need attention first, the rest
collapsed), the explained failing cases, what changed against a baseline, and the footer.
A ``Budget`` says how much of it one rendering may include (report/markdown.py shrinks it
until the text fits a comment).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..models.results import CaseResult, EvalSetResult, MetricResult, Results
from ..compare.decision import family_words
from ..compare.gate import accepted_keys
from ..compare.headline import without_fresh_runs
from .behaviour import BehaviourView, behaviour_views
from .changes import ChangeView, Flaky, build_changes, flaky_counts
from .cost import usage_line
from .efficiency import token_line
from ..models.verdict_rule import rule_of
from .explain import Explanation, case_headline, explain, fmt_score
from .reliability import row_note, suite_k_of
from .scores import fmt_p
from .text import fmt_duration


def fmt_range(metric: MetricResult) -> str:
    bounds = metric.min_max
    # One run, or every run alike: a range would only repeat the score.
    if bounds is None or bounds[0] == bounds[1]:
        return ""
    return f"{bounds[0]:.2f}\u2013{bounds[1]:.2f}"



# A behaviour diff in a comment: the calls around the first divergence, the first answers
# that differ, so many words of each (the HTML report shows everything).
COMPACT = {"max_rows": 8, "max_answers": 2, "max_words": 60}


@dataclass
class Budget:
    """What one rendering may include; the publisher shrinks it until the text fits."""

    detail_cases: int | None = None   # failing cases explained in <details>; None = all
    passing_rows: bool = True         # table rows of cases that need no attention (collapsed)
    max_rows: int | None = None       # rows of cases that need attention; None = all
    behaviour_cases: int | None = None  # behaviour diffs against main shown; None = all


@dataclass
class Cell:
    status: str
    score: str
    range: str
    threshold: str
    delta: str = ""     # against the baseline: "+0.25", "-0.50"; "" without one
    p_value: str = ""   # of a drop the test cannot tell from noise: "0.50"


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
    change: str | None = None    # regressed | improved | unchanged | new | changed
    flaky: Flaky | None = None   # runs disagree: their pass counts
    attention: bool = False      # shown first; otherwise collapsed with the passing cases
    position: int = 0            # in the eval set's file order
    quarantined: bool = False    # the base branch's quarantine file: reported, not gating
    accepted: bool = False       # a regression the pull request's accept label accepted


@dataclass
class SetView:
    eval_set_id: str
    path: str
    url: str | None
    columns: list[Column]
    rows: list[CaseRow]          # every row shown, in file order
    hidden_rows: int = 0
    attention: list[CaseRow] = field(default_factory=list)  # need a look, worst first
    quiet: list[CaseRow] = field(default_factory=list)      # passing, steady: collapsed
    quiet_total: int = 0         # quiet cases, listed or not
    quiet_counts: str = ""       # "15 unchanged, 2 improved" (with a baseline)
    criteria: str = ""           # the criteria file that applied, or "ADK's default criteria"


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
    carried: bool = False  # main's results, not re-run (--changed-since)


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
    usage: str = ""  # the run's tokens and estimated cost (report/cost.py), "" without counts


@dataclass
class ReportView:
    sets: list[SetView]
    failing: list[CaseDetail]          # the explained cases (within budget)
    failing_total: int
    failing_metrics: list[tuple[str, int]]  # metric name, failing cases
    rows_hidden: int = 0
    footer: Footer = field(default_factory=Footer)
    quiet_hidden: int = 0              # passing rows left out to fit
    changes: ChangeView = field(default_factory=lambda: ChangeView(compared=False))
    verdict_rule: str = "mean"
    behaviour: list[BehaviourView] = field(default_factory=list)  # within budget
    behaviour_total: int = 0

    @property
    def attention_sets(self) -> list[SetView]:
        """The eval sets with cases that need a look (the report's first tables)."""
        return [s for s in self.sets if s.attention]

    @property
    def quiet_sets(self) -> list[SetView]:
        return [s for s in self.sets if s.quiet_total]


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
    footer.usage = usage_line(results)
    return footer


def familywise_line(results: Results) -> str:
    """The footer's statement of how regressions were decided (the comment's and the HTML
    report's): the alpha, the method, the tests, whether fresh runs decided, the results of
    main pooled."""
    comparison = results.comparison
    if comparison is None or not comparison.familywise:
        return ""
    fw = comparison.familywise
    history = comparison.baseline.history
    # Given is not pooled: a change point or other eval data stops a case's pooling.
    most = max((len(c.baseline_pool or []) for s in results.eval_sets for c in s.cases), default=0)
    pooled = ("1 result of main" if not history else f"{len(history)} results of main pooled"
              if most >= len(history) else f"up to {max(most, 1)} of {len(history)} results of main pooled")
    if fw.get("confirmed") and not fw.get("tests"):
        how = "no case looked worse than main, nothing to confirm"
    elif fw.get("confirmed"):
        how = "decided on fresh confirmation runs"
    elif without_fresh_runs(results):  # compare: the file's fresh runs could not decide again
        how = "decided on the runs recorded, " + without_fresh_runs(results).replace("re-decided ", "", 1)
    else:  # replay, compare, merge, or --confirm-runs 0
        how = "decided on the runs recorded, with no confirmation runs"
    return f"regressions at family-wise {family_words(fw, 'Tarone')}, {how}; {pooled}"


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

    def commit(self, sha: str) -> str | None:
        if not self.blob_base or "/blob/" not in self.blob_base:
            return None
        return f"{self.blob_base.rsplit('/blob/', 1)[0]}/commit/{sha}"


# Which attention rows come first: regressions, then failing or errored cases (in file
# order), new cases, flaky ones.
_URGENCY = {"regressed": 0, "error": 1, "failed": 1, "not_evaluated": 1, "new": 2, "flaky": 3,
            "behaviour": 4}


def columns_for(view: SetView, rows: list[CaseRow]) -> list[Column]:
    """The set's columns that some of ``rows`` has a score in (a table of a few cases need
    not carry every metric of the set)."""
    return [c for c in view.columns if any(c.name in r.cells for r in rows)]


def behaviour_changed(case: CaseResult) -> bool:
    """The case's behaviour changed beyond noise against main (compare/behaviour.py)."""
    return case.behaviour is not None and case.behaviour.shift is not None


def needs_attention(case: CaseResult) -> bool:
    return case.status != "passed" or case.flaky or case.change in ("regressed", "new") \
        or behaviour_changed(case)


def _urgency(row: CaseRow) -> int:
    keys = [row.status, row.change or "", "flaky" if row.flaky else "", "behaviour" if row.attention else ""]
    return min(_URGENCY.get(k, 9) for k in keys)


def _cell(case: CaseResult, metric: MetricResult) -> Cell:
    cell = Cell(metric.status, fmt_score(metric.score), fmt_range(metric), fmt_score(metric.threshold))
    if metric.delta is not None and round(metric.delta, 2) != 0:  # "+0.00" is clutter
        cell.delta = f"{metric.delta:+.2f}"
        # a drop the case's label does not call a regression: say how likely noise is
        if metric.delta < 0 and metric.p_value is not None and case.change != "regressed" \
                and not case.screening_disagrees:  # never "within noise": the note says why
            cell.p_value = fmt_p(metric.p_value)
    return cell


def _row(case: CaseResult, eval_set: EvalSetResult, links: Links, k: int | None = None) -> CaseRow:
    errored = sum(1 for r in case.runs if r.status == "error")
    metric_errors = any(m.status == "error" for m in case.metrics)
    note = (f"{errored} of {len(case.runs)} runs errored" if errored
            else "metric error" if metric_errors else "")
    note = "; ".join(filter(None, [note, row_note(case, k)]))  # a flaky case's badge says its runs
    if case.screening_disagrees:
        note = "; ".join(filter(None, [note, "screening and confirmation disagree"]))
    if behaviour_changed(case) and case.change != "regressed":  # e.g. a drop within noise
        note = "; ".join(filter(None, [note, "behaviour changed (see What the agent does differently)"]))
    return CaseRow(eval_id=case.eval_id, status=case.status, url=links.file(eval_set.path, case.line),
                   cells={m.name: _cell(case, m) for m in case.metrics if m.status != "informational"},
                   note=note, change=case.change, flaky=flaky_counts(case) if case.flaky else None,
                   attention=needs_attention(case), quarantined=case.quarantined is not None)


def attention_first(results: Results) -> list[tuple[int, list[int]]]:
    """(eval set index, its case indices) in the markdown's order, for the HTML report: the
    eval sets with cases that need attention first, each set's such cases worst first
    (regressed, failing, new, flaky), then the rest; file order within each kind."""
    k = suite_k_of(results)
    urgent: list[tuple[int, list[int]]] = []
    calm: list[tuple[int, list[int]]] = []
    for i, eval_set in enumerate(results.eval_sets):
        rows = [(_row(case, eval_set, Links(), k), j) for j, case in enumerate(eval_set.cases)]
        first = sorted(((r, j) for r, j in rows if r.attention), key=lambda pair: _urgency(pair[0]))
        order = [j for _, j in first] + [j for r, j in rows if not r.attention]
        (urgent if first else calm).append((i, order))
    return urgent + calm


def _set_view(eval_set: EvalSetResult, links: Links, budget: Budget, k: int | None) -> SetView:
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
    view = SetView(eval_set.eval_set_id, eval_set.path, links.file(eval_set.path), columns, [],
                   criteria=eval_set.config_path or "ADK's default criteria")
    labels: dict[str, int] = {}
    for position, case in enumerate(eval_set.cases):
        row = _row(case, eval_set, links, k)
        row.position = position
        if row.attention:
            view.attention.append(row)
            continue
        view.quiet_total += 1
        if case.change:
            labels[case.change] = labels.get(case.change, 0) + 1
        if budget.passing_rows:
            view.quiet.append(row)
        else:
            view.hidden_rows += 1
    view.attention.sort(key=_urgency)  # stable: file order within one kind
    view.quiet_counts = ", ".join(f"{n} {label}" for label, n in sorted(labels.items(), key=lambda p: -p[1]))
    return view


def build_view(results: Results, links: Links | None = None, budget: Budget | None = None) -> ReportView:
    links = links or Links()
    budget = budget or Budget()
    k = suite_k_of(results)
    sets = [_set_view(s, links, budget, k) for s in results.eval_sets]
    accepted = accepted_keys(results)  # regressions the accept label accepted
    for s in sets:
        for row in s.attention + s.quiet:
            row.accepted = (s.eval_set_id, row.eval_id) in accepted
    if budget.max_rows is not None:
        left = budget.max_rows
        for s in sets:
            keep = max(0, min(left, len(s.attention)))
            s.hidden_rows += len(s.attention) - keep
            s.attention = s.attention[:keep]
            left -= keep
    for s in sets:
        s.rows = sorted(s.attention + s.quiet, key=lambda r: r.position)
    rows_hidden = sum(s.hidden_rows for s in sets)
    failing_cases = results.failing_cases()
    limit = len(failing_cases) if budget.detail_cases is None else budget.detail_cases
    failing = []
    rule = rule_of(results.verdict_rule)
    for eval_set, case in failing_cases[:limit]:
        explanations, turns_hidden = explain(case, rule)
        failing.append(CaseDetail(eval_set.eval_set_id, case.eval_id, eval_set.path, case.line,
                                  links.file(eval_set.path, case.line), case.status,
                                  case_headline(case, rule), explanations, turns_hidden,
                                  carried=case.change == "carried"))
    counts: dict[str, int] = {}
    for _, case in failing_cases:
        for m in case.metrics:
            if m.status in ("failed", "error"):
                counts[m.name] = counts.get(m.name, 0) + 1
    behaviour = behaviour_views(results, **COMPACT)
    shown = behaviour if budget.behaviour_cases is None else behaviour[:budget.behaviour_cases]
    return ReportView(sets=[s for s in sets if s.rows or s.hidden_rows or s.quiet_total], failing=failing,
                      failing_total=len(failing_cases), failing_metrics=list(counts.items()),
                      rows_hidden=rows_hidden, footer=build_footer(results),
                      quiet_hidden=sum(s.quiet_total - len(s.quiet) for s in sets),
                      changes=build_changes(results, links.commit), verdict_rule=results.verdict_rule,
                      behaviour=shown, behaviour_total=len(behaviour))


def omitted_notes(view: ReportView) -> list[str]:
    notes = []
    if view.quiet_hidden:
        n = view.quiet_hidden
        notes.append(f"the table rows of {n} passing case{'s' if n != 1 else ''}")
    if len(view.failing) < view.failing_total:
        n = view.failing_total - len(view.failing)
        notes.append(f"the explanation of {n} failing case{'s' if n != 1 else ''}")
    if len(view.behaviour) < view.behaviour_total:
        n = view.behaviour_total - len(view.behaviour)
        notes.append(f"the behaviour diff of {n} case{'s' if n != 1 else ''}")
    trimmed = view.rows_hidden - view.quiet_hidden
    if trimmed:
        notes.append(f"{trimmed} table row{'s' if trimmed != 1 else ''} of cases that need attention")
    return notes


