"""A shard's verdicts must follow from its own scores (issue 22).

A shard's results file travels as an artifact from a job that ran the pull request's code;
what a surviving process of the agent's might have written into it is caught by the
sandbox (no survivor, fresh files), and the merge checks it once more: every passed or
failed metric is what the shard's verdict rule makes of its runs and threshold, its score
is their mean (each run weighed by its scored turns), a not-evaluated metric has no score,
every case's status is what its
metrics and runs make it, and the shard's ``passed`` what its cases make it. A shard that
disagrees is bad input (exit status 2), never merged. (What the scores themselves are is the
shard job's word: nothing can recompute them without running the agent again.)
"""

from __future__ import annotations

import math
from pathlib import Path

from ..models.verdict_rule import parse_verdict_rule
from ..errors import InputError
from ..metrics import get_metric
from ..models.results import CaseResult, MetricResult, Results
from ..scoring.case import case_status

_FIX = "re-run the shard: its results file does not follow from its own scores"


def check_verdicts(path: Path, results: Results) -> None:
    """Raise InputError (naming the JSON path) when a verdict of ``results`` does not follow
    from its scores."""
    rule = parse_verdict_rule(results.verdict_rule or "mean", source=f"{path} $.verdictRule")
    cases = 0
    for si, eval_set in enumerate(results.eval_sets):
        for ci, case in enumerate(eval_set.cases):
            cases += 1
            at = f"$.evalSets[{si}].cases[{ci}]"
            for mi, metric in enumerate(case.metrics):
                _check_metric(path, f"{at}.metrics[{mi}]", metric, rule)
                _check_fresh(path, f"{at}.metrics[{mi}]", case, metric, results)
            if case_status(case.runs, case.metrics) != case.status:
                raise InputError(f"case {case.eval_id!r} is {case.status!r}, but its runs and metrics "
                                 f"make it {case_status(case.runs, case.metrics)!r}", file=str(path),
                                 path=f"{at}.status", fix=_FIX)
    passing = sum(c.status == "passed" for s in results.eval_sets for c in s.cases)
    if results.passed and cases and passing != cases:
        raise InputError(f"the shard says passed, but {cases - passing} of its {cases} cases did not pass",
                         file=str(path), path="$.passed", fix=_FIX)


def _check_fresh(path: Path, at: str, case: CaseResult, metric: MetricResult, results: Results) -> None:
    """A shard's confirmation runs (the merge decides on them) hang together: no more than the
    case's fresh runs, no more than its budget, which is no more than the shard's
    --confirm-runs, and finite scores."""
    family = results.shard.family if results.shard is not None else None
    fresh = len(case.fresh_runs) if case.fresh_runs is not None else None
    for key, runs in (("confirmRuns", metric.confirm_runs), ("disagreementRuns", metric.disagreement_runs)):
        if runs is None:
            continue
        if fresh is None or len(runs) > fresh:
            raise InputError(f"metric {metric.name!r} lists {len(runs)} {key} but its case "
                             f"{'records no' if fresh is None else f'has {fresh}'} fresh runs",
                             file=str(path), path=f"{at}.{key}", fix=_FIX)
        if any(r is not None and not math.isfinite(r) for r in runs):
            raise InputError(f"metric {metric.name!r} has a fresh run score that is not a finite number",
                             file=str(path), path=f"{at}.{key}", fix=_FIX)
    if metric.confirm_runs is not None:
        budget = metric.confirm_budget
        most = family.confirm_runs if family is not None else None
        if budget is None or len(metric.confirm_runs) > budget or (most is not None and budget > most):
            raise InputError(f"metric {metric.name!r} read {len(metric.confirm_runs)} confirmation runs "
                             f"on a budget of {budget}" + (f" (--confirm-runs {most})" if most is not None else ""),
                             file=str(path), path=f"{at}.confirmBudget", fix=_FIX)


def _check_metric(path: Path, at: str, metric, rule) -> None:
    scored = [r for r in metric.runs if r is not None]
    if any(not math.isfinite(r) for r in scored):
        raise InputError(f"metric {metric.name!r} has a run score that is not a finite number",
                         file=str(path), path=f"{at}.runs", fix=_FIX)
    if metric.status in ("passed", "failed"):
        if metric.threshold is None or not scored:
            raise InputError(f"metric {metric.name!r} is {metric.status!r} without a threshold or a "
                             "scored run", file=str(path), path=f"{at}.status", fix=_FIX)
        if metric.lower_is_better and get_metric(metric.name) is not None:
            raise InputError(f"metric {metric.name!r} is built in, and never lower-is-better (its turns "
                             "pass at the threshold and above)", file=str(path),
                             path=f"{at}.lowerIsBetter", fix=_FIX)
        mean = _pooled_mean(metric)
        if mean is None or metric.score is None or \
                not math.isclose(metric.score, mean, rel_tol=1e-9, abs_tol=1e-9):
            raise InputError(f"metric {metric.name!r} has score {metric.score}, but its runs' mean is "
                             f"{mean} (each run weighed by its scored turns)", file=str(path),
                             path=f"{at}.score", fix=_FIX)
        verdict = "passed" if rule.passes(metric.runs, metric.threshold, bool(metric.lower_is_better),
                                          metric.score) else "failed"
        if verdict != metric.status:
            raise InputError(f"metric {metric.name!r} is {metric.status!r}, but its runs "
                             f"{metric.runs} against threshold {metric.threshold} make it {verdict!r} "
                             f"(verdict rule {rule})", file=str(path), path=f"{at}.status", fix=_FIX)
    elif metric.status == "not_evaluated" and (metric.score is not None or scored):
        raise InputError(f"metric {metric.name!r} is 'not_evaluated' but has scores", file=str(path),
                         path=f"{at}.status", fix=_FIX)


def _pooled_mean(metric) -> float | None:
    """The mean over every scored turn, from each run's mean and its scored turns
    (``runTurns``; absent: the runs weigh equally); None when it cannot be made."""
    weights = metric.run_turns if metric.run_turns is not None else [1] * len(metric.runs)
    if len(weights) != len(metric.runs):
        return None
    pairs = [(s, w) for s, w in zip(metric.runs, weights, strict=False) if s is not None]
    total = sum(w for _, w in pairs)
    if total <= 0 or any(w <= 0 for _, w in pairs):
        return None
    return sum(s * w for s, w in pairs) / total
