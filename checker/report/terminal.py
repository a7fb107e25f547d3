"""Plain terminal lines: one actionable line per failing metric (with up to three lines of
what the judge said, for a judged one, or of what differs, e.g. where a tool trajectory first
diverged), then a summary. Passing cases print nothing here."""

from __future__ import annotations

from ..compare.comparison import deterministic_change, suite_drops
from ..compare.disagreement import disagreement_words
from ..compare.verdict import baseline_pass_counts, case_pass_counts
from ..models.verdict_rule import rule_of
from ..models.results import CaseResult, EvalSetResult, MetricResult, Results
from ..scoring.refusals import no_verdict
from .differences import MAX_TERMINAL_LINES, terminal_notes
from .judged import judge_evidence, place, statements
from ..scoring.case import NOT_FINISHED
from .scores import fmt_score as fmt, not_evaluated, shortfall
from ..safety.text import one_line, plural
from .text import fmt_duration

MAX_JUDGE_LINES = 3  # per metric: the log stays scannable with hundreds of cases


def judge_lines(metric: MetricResult) -> list[str]:
    """Indented lines: the verdicts not met and the judge's reasons, worst turns first."""
    evidence = judge_evidence(metric)
    if evidence is None:
        return []
    items = [f"{place(evidence.run, turn.turn, turn.title)}: {item}"
             for turn in evidence.turns for item in statements(turn)]
    lines = ["    " + one_line(item, 220) for item in items[:MAX_JUDGE_LINES]]
    if len(items) > MAX_JUDGE_LINES or evidence.turns_hidden:
        lines.append("    ... more in the markdown report")
    return lines


def case_labels(case: CaseResult) -> list[str]:
    """The labels a reader must see beside a case: regressed/new/changed, flaky k/N."""
    labels: list[str] = [case.change] if case.change in ("regressed", "improved", "new", "changed") else []
    if case.change == "carried":  # main's verdict, not this run's (--changed-since)
        labels.append("carried from main")
    if case.quarantined is not None:  # runs and is reported, does not gate
        labels.append(f"quarantined until {case.quarantined.expires}, not gating")
    if case.screening_disagrees:
        labels.append("screening and confirmation disagree")
    if case.behaviour is not None and case.behaviour.shift is not None and case.change != "regressed":
        labels.append("behaviour changed")  # beyond noise, whatever the scores say
    if case.flaky:
        before = baseline_pass_counts(case)
        labels.append(f"flaky {case_pass_counts(case)} runs passed"
                      + (f", baseline {before}" if before is not None else ""))
    return labels


def _where(eval_set: EvalSetResult, case: CaseResult) -> str:
    labels = case_labels(case)
    return (f"{eval_set.path}:{case.line} {case.eval_id}"
            + (f" [{', '.join(labels)}]" if labels else ""))


def _against_baseline(metric: MetricResult, case: CaseResult) -> str:
    if metric.baseline_score is None:
        return ""
    p = f", p of the pass rate {metric.p_value:.3g}" if metric.p_value is not None else ""
    # A drop the exact test cannot tell from noise is said to be so, not hidden.
    noise = (", within noise" if case.change == "unchanged" and metric.delta is not None
             and metric.delta < 0 else "")
    if deterministic_change(metric):
        noise = ", every run the same on each side"
    if metric.screening_disagreement is not None:  # never "within noise"
        noise = ", " + disagreement_words(metric.screening_disagreement)
    return f" (baseline {fmt(metric.baseline_score)}{p}{noise})"


def difference_lines(metric: MetricResult) -> list[str]:
    """Indented lines a deterministic metric's numbers do not say (see differences.py)."""
    invocations = metric.details.get("invocations") if isinstance(metric.details, dict) else None
    if not isinstance(invocations, list):
        return []
    items = terminal_notes(metric.name, [i for i in invocations if isinstance(i, dict)],
                           metric.threshold)
    run = metric.details.get("worstRun")  # the details are this run's
    if isinstance(run, int) and not isinstance(run, bool):
        items = [f"run {run}, {item}" for item in items]
    lines = ["    " + one_line(item, 220) for item in items[:MAX_TERMINAL_LINES]]
    if len(items) > MAX_TERMINAL_LINES:
        lines.append("    ... more in the markdown report")
    return lines


def failure_lines(results: Results) -> list[str]:
    lines: list[str] = []
    rule = rule_of(results.verdict_rule)
    # A judge's missing or refused credentials are said once, at the end (report/finish.py).
    judge = results.metadata.get("judge") if isinstance(results.metadata, dict) else None
    setup = judge.get("setupError") if isinstance(judge, dict) else None
    for eval_set, case in results.failing_cases():
        where = _where(eval_set, case)
        for run in case.runs:
            if run.status == "error" and run.error:
                lines.append(f"{where}: agent run {run.run} errored: {one_line(run.error, 200)}")
        for metric in case.metrics:
            if metric.status == "failed":
                lines.append(f"{where}: {metric.name} {shortfall(metric, rule)}"
                             + _against_baseline(metric, case))
                lines += judge_lines(metric) or difference_lines(metric)
            elif metric.status == "not_evaluated" and case.status == "failed":
                lines.append(f"{where}: {metric.name} {one_line(not_evaluated(metric), 200)}")
            elif metric.status == "error" and setup and setup in (metric.error or ""):
                continue
            elif metric.status == "error":
                # A metric or judge failure, never the agent's (that is the line above).
                lines.append(f"{where}: {metric.name} could not be computed (metric error): "
                             f"{one_line(metric.error or '', 200)}")
        stopped = [r for r in case.runs if r.status == "not_evaluated" and (r.error or "").startswith(NOT_FINISHED)]
        if (refusal := no_verdict(case)) is not None:
            lines.append(f"{where}: not evaluated: {refusal}")
        elif case.status == "not_evaluated" and stopped:  # an interrupted run (scoring/interrupted.py)
            lines.append(f"{where}: not evaluated: {stopped[0].error} (runs {', '.join(str(r.run) for r in stopped)})")
        elif case.status == "not_evaluated":
            reasons = sorted({m.error for m in case.metrics if m.status == "not_evaluated" and m.error})
            lines.append(f"{where}: not evaluated: no gating metric could be scored"
                         + (f" ({one_line('; '.join(reasons), 200)})" if reasons else ""))
    return lines


def claim_lines(results: Results) -> list[str]:
    """What the pull request brought that the gate read (a baseline file it changed, its own
    recorded runs), each with what its version says."""
    lines = []
    for claim in results.pull_request_files or []:
        lines.append(f"warning: {claim.said}")
        lines += [f"  {detail}" for detail in claim.details]
    return lines


def comparison_lines(results: Results, limit: int = 20) -> list[str]:
    """Against a baseline: passing cases that still need a look (regressed, flaky, behaviour
    changed), the removed cases, the notes, then one line of counts. Failing cases are in
    failure_lines."""
    comparison = results.comparison
    if comparison is None:
        return []
    lines = []
    for eval_set in results.eval_sets:
        for case in eval_set.cases:
            shifted = case.behaviour is not None and case.behaviour.shift is not None
            if case.status != "passed" or not (case.change == "regressed" or case.flaky or shifted):
                continue
            moved = [f"{m.name} {fmt(m.score)}{_against_baseline(m, case)}" for m in case.metrics
                     if m.baseline_score is not None and m.status != "informational"]
            lines.append(f"{_where(eval_set, case)}: passed; " + ", ".join(moved))
    if len(lines) > limit:
        lines = lines[:limit] + [f"... {len(lines) - limit} more in the reports"]
    for ref in comparison.removed[:limit]:
        lines.append(f"removed since the baseline: {ref.eval_set_id}/{ref.eval_id}")
    if len(comparison.removed) > limit:
        lines.append(f"... {len(comparison.removed) - limit} more removed")
    lines += [f"note: {note}" for note in comparison.notes]
    lines += [f"suite dropped: {drop}, over the cases compared on both sides" for drop in suite_drops(comparison)]
    c = comparison.summary
    base = comparison.baseline
    where = (f" {base.path}" if base.path else
             f" {base.ref or 'commit'} at {base.commit[:7]}" if base.commit else "")
    lines.append(f"compared with baseline{where}: {c.regressed} regressed, {c.improved} improved, "
                 f"{c.unchanged} unchanged, {c.new} new, {c.changed} changed, {c.removed} removed"
                 + (f", {c.carried} carried from main (not re-run)" if c.carried else "")
                 + (f", {c.outside} outside this run" if c.outside else ""))
    return lines


def summary_line(results: Results, *, timed: bool = True) -> str:
    """The cases' counts, the line before the gate's: no verdict of its own (a failed case
    is no failed gate under ``fail-on: regression``). ``timed``: say how long the run took
    (not for `compare`, which ran nothing: the file's duration is the earlier run's)."""
    s = results.summary
    parts = [f"{s.passed} passed", f"{s.failed} failed", f"{s.errored} errored"]
    if s.not_evaluated:
        parts.append(f"{s.not_evaluated} not evaluated")
    if s.carried:
        parts.append(f"{s.carried} carried from main (not re-run)")
    duration = results.metadata.get("durationSeconds") \
        if timed and isinstance(results.metadata, dict) else None
    took = (f" in {fmt_duration(duration)}" if isinstance(duration, (int, float))
            and not isinstance(duration, bool) and duration >= 0 else "")
    return (f"{plural(s.cases, 'eval case')} in {plural(s.eval_sets, 'eval set')}{took}: "
            + ", ".join(parts))


def retries_line(results: Results) -> str | None:
    """How many runs errored and were run again (--retries), and how many came back."""
    runs = [r for s in results.eval_sets for c in s.cases for r in c.runs if r.retries]
    if not runs:
        return None
    recovered = sum(r.status != "error" for r in runs)
    return (f"retries: {len(runs)} run(s) errored and were run again; {recovered} then "
            f"succeeded, {len(runs) - recovered} still errored and count as failing runs")
