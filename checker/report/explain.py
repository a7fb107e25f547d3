"""Why a case did not pass: the evidence of each failing metric and errored run, as plain
data for the templates (report/templates/_explain.md.j2) and the check-run annotations.

Every list is capped per case so one runaway agent cannot crowd out the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..models.verdict_rule import MEAN, VerdictRule
from ..models.results import CaseResult, MetricResult
from ..scoring.refusals import no_verdict
from .differences import failing_turns, parameter_notes, response_notes, trajectory_note, unmatched_notes
from .judged import JudgeTurn, judge_evidence
from .scores import fmt_score, not_evaluated, requirement, shortfall
from .text import clip, clip_tail, fmt_call, printable

# Fixed caps per failing case, so one runaway agent cannot crowd out the others.
MAX_CALL_ROWS = 25        # tool calls shown per invocation
MAX_INVOCATIONS = 3       # failing turns explained per metric
MAX_TEXT = 1500           # characters of a response shown
STDERR_LINES, STDERR_CHARS = 30, 2500


@dataclass
class CallRow:
    index: int
    expected: str | None
    actual: str | None
    diverges: bool
    missing: bool = False  # IN_ORDER / ANY_ORDER: the expected call there is missing
    extra: bool = False    # the actual call there is one the expected calls do not hold


@dataclass
class Explanation:
    # trajectory | f1 | parameters | response | judge | metric_error | run_error | run_refused | run_not_run
    # | not_evaluated | score
    kind: str
    metric: str = ""
    run: int | None = None
    turn: int | None = None
    score: str = ""
    threshold: str = ""
    first_divergence: int | None = None
    match_type: str = ""              # a trajectory's: EXACT, IN_ORDER, ANY_ORDER ("" unknown)
    calls: list[CallRow] = field(default_factory=list)
    calls_hidden: int = 0
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)         # a trajectory's calls beyond the expected
    out_of_order: list[str] = field(default_factory=list)  # IN_ORDER: called, not in order
    expected_text: str = ""
    actual_text: str = ""
    error: str = ""
    stderr: str = ""
    judge: str = ""                   # which judge scored: model and samples, or backend
    evidence: JudgeTurn | None = None  # kind "judge": what the judge said on one turn
    notes: list[str] = field(default_factory=list)  # what the evidence alone does not show



def _invocations(metric: MetricResult) -> list[dict[str, Any]]:
    inv = metric.details.get("invocations") if isinstance(metric.details, dict) else None
    return [i for i in inv if isinstance(i, dict)] if isinstance(inv, list) else []


def _worst_run(metric: MetricResult) -> int | None:
    run = metric.details.get("worstRun") if isinstance(metric.details, dict) else None
    return run if isinstance(run, int) else None


def _indices(inv: dict[str, Any], key: str) -> set[int]:
    listed = inv.get(key)
    return {c["index"] for c in listed if isinstance(c, dict) and isinstance(c.get("index"), int)} \
        if isinstance(listed, list) else set()


def _calls(inv: dict[str, Any], key: str) -> tuple[list[str], int]:
    """The calls a trajectory's turn lists under ``key`` (formatted) and how many more it counts."""
    listed = inv.get(key)
    listed = listed if isinstance(listed, list) else []
    shown = [fmt_call(c) for c in listed][:MAX_CALL_ROWS]
    count = inv.get(key + "Count")
    total = count if isinstance(count, int) and not isinstance(count, bool) else len(listed)
    return shown, max(0, total - len(shown))


def by_match_type(inv: dict[str, Any]) -> bool:
    """Whether a trajectory turn's details name what is missing and extra (IN_ORDER and
    ANY_ORDER, written since evalcheck said it by match type), not a first divergence."""
    return isinstance(inv.get("missing"), list) and isinstance(inv.get("extra"), list)


def _trajectory(metric: MetricResult) -> tuple[list[Explanation], int]:
    failing = [(n, i) for n, i in enumerate(_invocations(metric), 1)
               if (score := i.get("score")) is not None and score < 1.0]
    match_type = metric.details.get("matchType") if isinstance(metric.details, dict) else None
    out = []
    for turn, inv in failing[:MAX_INVOCATIONS]:
        expected = inv.get("expected")
        expected = expected if isinstance(expected, list) else []
        actual = inv.get("actual")
        actual = actual if isinstance(actual, list) else []
        div = inv.get("firstDivergence")
        div = div if isinstance(div, int) else None
        # The metric lists a window of calls starting at position `listedFrom` (0-based).
        start = inv.get("listedFrom")
        start = start if isinstance(start, int) and start >= 0 else 0
        counted = by_match_type(inv)
        missing_at = _indices(inv, "missing") | _indices(inv, "outOfOrder")
        extra_at = _indices(inv, "extra")
        rows = [CallRow(index=start + k + 1,
                        expected=fmt_call(expected[k]) if k < len(expected) else None,
                        actual=fmt_call(actual[k]) if k < len(actual) else None,
                        diverges=start + k == div,
                        missing=counted and start + k in missing_at and k < len(expected),
                        extra=counted and start + k in extra_at and k < len(actual))
                for k in range(max(len(expected), len(actual)))]
        shown = rows[:MAX_CALL_ROWS]
        # Keep the divergence row visible even when it lies past the cap.
        if div is not None and MAX_CALL_ROWS <= div - start < len(rows):
            shown = rows[:MAX_CALL_ROWS - 1] + [rows[div - start]]
        total = max(_count_of(inv, "expectedCount", expected, start),
                    _count_of(inv, "actualCount", actual, start))
        ex = Explanation(kind="trajectory", metric=metric.name, run=_worst_run(metric),
                         turn=turn, score=fmt_score(inv.get("score")),
                         threshold=fmt_score(metric.threshold),
                         first_divergence=None if div is None or counted else div + 1,
                         match_type=match_type if isinstance(match_type, str) else "",
                         calls=shown, calls_hidden=max(0, total - len(shown)),
                         notes=[n for n in [trajectory_note(inv)] if n])
        if counted:
            ex.missing, more_missing = _calls(inv, "missing")
            ex.extra, more_extra = _calls(inv, "extra")
            ex.out_of_order, more_moved = _calls(inv, "outOfOrder")
            ex.notes = unmatched_notes(inv) + [f"{n} more {what} not listed" for n, what in (
                (more_missing, "missing calls"), (more_moved, "calls out of order"),
                (more_extra, "extra calls")) if n]
        out.append(ex)
    return out, max(0, len(failing) - MAX_INVOCATIONS)


def _count_of(inv: dict[str, Any], key: str, listed: list[Any], start: int) -> int:
    count = inv.get(key)
    if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
        return count
    return start + len(listed)


def _f1(metric: MetricResult) -> tuple[list[Explanation], int]:
    failing = [(n, i) for n, i in failing_turns(_invocations(metric), metric.threshold)
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
    invs = [(n, i) for n, i in failing_turns(_invocations(metric), metric.threshold)
            if "expected" in i or "actual" in i]
    # The lowest-scoring turns of the worst run say most about why the mean missed.
    invs.sort(key=lambda p: p[1]["score"])
    out = [Explanation(kind="response", metric=metric.name, run=_worst_run(metric), turn=turn,
                       score=fmt_score(inv.get("score")), threshold=fmt_score(metric.threshold),
                       expected_text=clip(str(inv.get("expected") or ""), MAX_TEXT),
                       actual_text=clip(str(inv.get("actual") or ""), MAX_TEXT),
                       notes=response_notes(metric.name, str(inv.get("expected") or ""),
                                            str(inv.get("actual") or "")))
           for turn, inv in invs[:MAX_INVOCATIONS]]
    return out, max(0, len(invs) - MAX_INVOCATIONS)


def _parameters(metric: MetricResult) -> tuple[list[Explanation], int]:
    turns = parameter_notes(_invocations(metric), metric.threshold)
    out = [Explanation(kind="parameters", metric=metric.name, run=_worst_run(metric), turn=t.turn,
                       score=fmt_score(t.score), threshold=fmt_score(metric.threshold),
                       notes=t.notes, calls_hidden=t.hidden)
           for t in turns[:MAX_INVOCATIONS]]
    return out, max(0, len(turns) - MAX_INVOCATIONS)


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
    if any("parameterMismatches" in i for i in invocations):
        return _parameters(metric)
    if any("firstDivergence" in i or ("expected" in i and isinstance(i.get("expected"), list))
           for i in invocations):
        return _trajectory(metric)
    if any("missing" in i or "unexpected" in i for i in invocations):
        return _f1(metric)
    if any("expected" in i or "actual" in i for i in invocations):
        return _response(metric)
    return [], 0


def explain(case: CaseResult, rule: VerdictRule = MEAN) -> tuple[list[Explanation], int]:
    """Why a case did not pass: errored agent runs first, then each failing metric's evidence
    (a metric's own score said in ``rule``'s terms)."""
    out: list[Explanation] = []
    hidden = 0
    for run in case.runs:
        if run.unavailable is not None:  # the model service's refusal, not the agent's failure
            out.append(Explanation(kind="run_refused", run=run.run,
                                   error=clip(printable(run.error or run.unavailable.code), MAX_TEXT)))
        elif run.status == "not_evaluated" and run.error:  # not run to its end: budget, interrupt
            out.append(Explanation(kind="run_not_run", run=run.run, error=clip(printable(run.error), MAX_TEXT)))
        elif run.status == "error" or run.error:
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
                                 score=fmt_score(metric.score), threshold=requirement(metric, rule),
                                 judge=judge)]
        out.extend(parts)
        hidden += more
    return out, hidden


def case_headline(case: CaseResult, rule: VerdictRule = MEAN) -> str:
    bits = [f"{m.name} {shortfall(m, rule)}" for m in case.metrics if m.status == "failed"]
    if case.status == "failed":
        bits += [f"{m.name} {not_evaluated(m)}" for m in case.metrics if m.status == "not_evaluated"]
    bits += [f"{m.name} could not be computed (metric error)" for m in case.metrics if m.status == "error"]
    errored = sum(1 for r in case.runs if r.status == "error")
    if errored:
        bits.insert(0, f"{errored} of {len(case.runs)} runs errored")
    if (refusal := no_verdict(case)) is not None:
        bits.append(refusal)
    elif case.status == "not_evaluated":
        bits.append("no gating metric could be scored")
    return "; ".join(bits) or case.status

