"""One metric over every run of a case: its score and verdict as google-adk 2.13's
AgentEvaluator makes them (agent_evaluator.py: ``_get_eval_metric_results_with_invocation``,
then ``_process_metrics_and_get_failures``), the reference for every ``evalcheck run``.

- **Pooled turns.** Every turn of every run goes into one list; the score is the mean of every
  scored turn (the value of ADK's ``statistics.mean``), so a run with more scored turns weighs more. The
  evaluator's own score of a run (a custom metric's ``overall_score``, a rubric metric's
  pooled verdicts) is not used.
- **Informational** when the first pooled turn's status is INFORMATIONAL or the metric has no
  threshold: reported, never failing.
- **Direction** from the evaluator's own (score, status) of each turn: turns without a score,
  at the threshold, or with a status other than passed/failed are skipped; when the others all
  agree (passed exactly when above, or exactly when below) that direction holds, else higher is
  better. The metric passes at ``score >= threshold``, or ``score <= threshold`` when lower is
  better. Every built-in metric sets each turn's status from the threshold, so for them the
  direction is always higher-is-better.
- **No scored turn**: not evaluated (its case fails; scoring/case.py).

Each run's own score is the mean of its scored turns (what AgentEvaluator gives for that run
alone): the report's min-max and each run's pass/fail, with the metric's direction. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from ..models.results import MetricStatus, meets_threshold

PASSED: Final = "passed"
FAILED: Final = "failed"
NOT_EVALUATED: Final = "not_evaluated"
INFORMATIONAL: Final = "informational"


@dataclass(frozen=True)
class Turn:
    """One turn's result as its evaluator set it: score (None: not scored) and status."""

    score: float | None
    status: str


def status_by_threshold(score: float | None, threshold: float | None) -> str:
    """The status every built-in evaluator gives a turn (ADK's ``get_eval_status``)."""
    if score is None or threshold is None:
        return NOT_EVALUATED
    return PASSED if score >= threshold else FAILED


def exact_mean(values: Sequence[float]) -> float:
    """The mean ``statistics.mean`` gives (ADK's): the exact sum over the count, rounded once
    (a plain ``sum() / len()`` rounds at every addition and may differ in the last bit, which
    decides a score exactly at its threshold). ``math.fsum`` is the exact sum rounded once:
    divided by a power of two, or when nothing was rounded, that is the mean already.
    Otherwise each float is a whole number over a power of two, so the sum is exact over
    their largest denominator, and Python's int division rounds correctly."""
    count = len(values)
    if count == 1:
        return float(values[0])
    total = math.fsum(values)
    if abs(total) >= 2.0 ** -1000 and math.isfinite(total) and (
            count & (count - 1) == 0 or math.fsum([*values, -total]) == 0.0):
        return total / count
    ratios = [v.as_integer_ratio() for v in values]
    denominator = max(d for _, d in ratios)
    numerator = sum(n * (denominator // d) for n, d in ratios)
    return numerator / (denominator * count)


def higher_is_better(turns: Sequence[Turn], threshold: float) -> bool:
    """ADK's direction inference, quirks included (a mixed or empty vote is ``>=``)."""
    directions: set[bool] = set()
    for turn in turns:
        if turn.score is None or turn.score == threshold or turn.status not in (PASSED, FAILED):
            continue
        directions.add((turn.score > threshold) == (turn.status == PASSED))
    return directions.pop() if len(directions) == 1 else True


@dataclass(frozen=True)
class Pooled:
    """A metric over a case's runs."""

    score: float | None  # the mean of every scored turn of every run
    runs: list[float | None]  # each run's mean of its scored turns (None: no scored turn)
    run_turns: list[int]  # each run's scored turns
    informational: bool
    lower_is_better: bool
    status: MetricStatus  # passed, failed, not_evaluated or informational


def pool(runs: Sequence[Sequence[Turn] | None], threshold: float | None) -> Pooled:
    """``runs``: each run's turns, in run order; None for a run with no result (its agent or
    the metric failed on it)."""
    turns = [t for run in runs if run is not None for t in run]
    run_scores = [[t.score for t in run if t.score is not None] if run is not None else []
                  for run in runs]
    per_run = [exact_mean(s) if s else None for s in run_scores]
    scored = [s for scores in run_scores for s in scores]
    score = exact_mean(scored) if scored else None
    counts = [len(s) for s in run_scores]
    if threshold is None or (turns and turns[0].status == INFORMATIONAL):
        return Pooled(score, per_run, counts, True, False, INFORMATIONAL)
    lower = not higher_is_better(turns, threshold)
    status: MetricStatus
    if score is None:
        status = NOT_EVALUATED
    else:
        status = PASSED if meets_threshold(score, threshold, lower) else FAILED
    return Pooled(score, per_run, counts, False, lower, status)
