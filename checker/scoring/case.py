"""Scoring: recorded runs of one eval case -> a CaseResult with every configured metric.

Aggregation (CONTRACT section 4): every turn of every run pooled, as google-adk's
AgentEvaluator does (scoring/aggregation.py), every run's own score kept. A gating metric
with no score fails its case, as in AgentEvaluator; one that could not be computed is
``error`` and fails its case too (ADK leaves a broken judge's metric not evaluated).
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from ..inputs.fingerprint import case_fingerprint
from ..models.verdict_rule import case_flaky
from ..models.verdict_rule import MEAN, VerdictRule
from ..inputs.criteria import ConfiguredMetric, EvalConfig
from ..metrics.base import RunInput, RunScore, ScoringContext
from ..models.evalset import EvalCase
from ..models.records import RecordedRun
from ..judges.meter import JudgeMeter, metering
from ..models.results import (CaseResult, CaseStatus, MetricResult, MetricStatus, MetricVerdict, RunResult,
                              RunStatus, RunVerdicts)
from ..models.usage import Usage, agent_tokens, sum_tokens, sum_usage
from .aggregation import NOT_EVALUATED, Pooled, Turn, pool, status_by_threshold
from .trajectories import summarise


async def metered_run(configured: ConfiguredMetric, run: RunInput,
                      context: ScoringContext) -> tuple[RunScore, JudgeMeter]:
    """``score_run`` with a meter of its judge calls: their tokens, and whether the judge
    token budget refused one (that metric on that run is then not evaluated)."""
    with metering() as meter:
        score = await score_run(configured, run, context)
    if meter.refused is not None:
        score = RunScore(not_evaluated_reason=meter.refused)
    return score, meter


async def score_run(configured: ConfiguredMetric, run: RunInput, context: ScoringContext) -> RunScore:
    """One metric on one run. Never raises: a failure becomes ``RunScore.error``."""
    try:
        if getattr(configured, "custom_function_source", None) is not None:  # agents-cli's evaluate(instance)
            from .agents_cli_function import score_function

            result: Any = score_function(configured, run, context)
        elif configured.metric is None:
            from .custom_metric import score_custom

            result = score_custom(configured, run, context)
        else:
            result = configured.metric().score(configured.criterion, run, context)
        if inspect.isawaitable(result):
            limits = context.services.judge_limits
            deadline = getattr(limits, "metric_deadline", None)
            window = asyncio.timeout(deadline)  # the metric's judge calls, retries included
            try:
                async with window:
                    result = await result
            except TimeoutError:
                if not window.expired():
                    raise
                from ..judges.limits import METRIC_DEADLINE

                return RunScore(error=f"no result within {deadline:g} s: the deadline of a metric "
                                      f"on one run ({METRIC_DEADLINE})")
        if not isinstance(result, RunScore):
            raise TypeError(f"metric returned {type(result).__name__}, not a RunScore")
        return result
    except Exception as exc:  # a metric bug or judge outage fails this metric, not the run
        return RunScore(error=f"{type(exc).__name__}: {exc}")


def _worst_run_details(scores: list[tuple[int, RunScore]], pooled: Pooled | None,
                       runs: list[int]) -> dict[str, Any]:
    """Details of the run that scored worst (by its mean over its scored turns, in the
    metric's direction)."""
    if pooled is None:
        return {}
    by_run = dict(scores)
    scored = [(n, s) for n, s in zip(runs, pooled.runs, strict=False) if s is not None and n in by_run]
    if not scored:
        return {}
    run_no, _ = (max if pooled.lower_is_better else min)(scored, key=lambda item: item[1])
    return _run_details(run_no, by_run[run_no])


def _run_details(run_no: int, score: RunScore) -> dict[str, Any]:
    """The details a report shows: one run's, with every invocation's."""
    return {**score.details, "worstRun": run_no,
            "invocations": [{"score": i.score, **i.all_details()} for i in score.invocations]}


def _errored_run_details(scores: list[tuple[int, RunScore]], pooled: Pooled,
                         runs: list[int]) -> dict[str, Any]:
    """Details of the first errored run that kept any (e.g. the verdicts a judge did give
    and the answers it could not read), else of the worst scored run: what a reader needs
    to see why the metric could not be computed."""
    for run_no, s in scores:
        if s.error and (s.details or s.invocations):
            return _run_details(run_no, s)
    return _worst_run_details(scores, pooled, runs)


def _average_details(scores: list[RunScore]) -> dict[str, Any]:
    """Each numeric detail averaged over the runs that have it. A detail no run could
    measure stays, as null: "n/a" (a token count the model did not report) is not 0."""
    keys = {k for s in scores for k, v in s.details.items()
            if v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))}
    out: dict[str, Any] = {}
    for key in sorted(keys):
        values = [s.details[key] for s in scores if isinstance(s.details.get(key), (int, float))]
        out[key] = sum(values) / len(values) if values else None
    return out


def run_turns(score: RunScore | None, threshold: float | None) -> list[Turn] | None:
    """One run's turns as AgentEvaluator pools them; None when the run has no result (its
    agent failed, or the metric did: the metric is then ``error``)."""
    if score is None or score.error:
        return None
    if score.invocations:
        return [Turn(i.score, i.status or status_by_threshold(i.score, threshold))
                for i in score.invocations]
    if score.score is not None:  # a score of the whole run only (a conversation-level metric)
        return [Turn(score.score, status_by_threshold(score.score, threshold))]
    return [Turn(None, NOT_EVALUATED)]


def aggregate_metric(configured: ConfiguredMetric, scores: list[tuple[int, RunScore | None]],
                     rule: VerdictRule = MEAN) -> MetricResult:
    """Fold per-run scores (None for a run whose agent failed) into one MetricResult.

    Score, direction and verdict as AgentEvaluator makes them (scoring/aggregation.py);
    ``rule`` other than ``mean`` counts the runs that pass instead."""
    done = [(n, s) for n, s in scores if s is not None]
    threshold = None if configured.informational else configured.threshold
    pooled = pool([run_turns(s, threshold) for _, s in scores], threshold)
    runs = [n for n, _ in scores]
    counts = {c for c, s in zip(pooled.run_turns, pooled.runs, strict=False) if s is not None}
    common: dict[str, Any] = {"name": configured.name, "score": pooled.score, "runs": pooled.runs,
                              "run_turns": pooled.run_turns if len(counts) > 1 else None}
    errors = [f"run {n}: {s.error}" for n, s in done if s.error]
    # An informational metric never gates, unless it is a judge whose failure must show
    # (an agents-cli metric without a threshold: checker/inputs/agents_cli.py).
    if (configured.informational and not (errors and configured.errors_gate)) or \
            (pooled.informational and not errors):
        return MetricResult(**common, threshold=None, status="informational",
                            details=_average_details([s for _, s in done]))
    common["lower_is_better"] = pooled.lower_is_better or None
    if errors:
        return MetricResult(**common, threshold=configured.threshold, status="error",
                            error="; ".join(errors), details=_errored_run_details(done, pooled, runs))
    if pooled.score is None:
        reasons = sorted({s.not_evaluated_reason for _, s in done if s.not_evaluated_reason})
        reason = "; ".join(reasons) or ("no run of the agent succeeded" if not done
                                        else "no invocation could be scored")
        return MetricResult(**common, threshold=configured.threshold, status="not_evaluated",
                            error=reason)
    assert configured.threshold is not None
    status: MetricStatus
    if rule.kind == "mean":
        status = pooled.status
    else:
        passes = rule.passes(pooled.runs, configured.threshold, pooled.lower_is_better)
        status = "passed" if passes else "failed"
    return MetricResult(**common, threshold=configured.threshold, status=status,
                        details=_worst_run_details(done, pooled, runs))


# The error of a run a spent agent token budget kept from starting (scoring/budget.py).
NOT_STARTED = "not started: "
# A first run an interrupted run did not finish (scoring/interrupted.py): counted as not started.
NOT_FINISHED = "interrupted before this run finished"


def not_started(run: RunResult) -> bool:
    return run.status == "not_evaluated" and (run.error or "").startswith((NOT_STARTED, NOT_FINISHED))


def case_status(runs: list[RunResult], metrics: list[MetricResult]) -> CaseStatus:
    """A gating metric that failed, or that no run scored (AgentEvaluator: "was not
    evaluated"), fails the case; an errored run or metric makes it ``error`` first. A case
    with runs a spent token budget kept from starting is not evaluated unless the runs that
    did happen failed it (or left a gating metric unscored): what was never run is not the
    agent's failure. A case with a run the model service kept refusing has no verdict."""
    gating = [m for m in metrics if m.status != "informational"]
    if any(r.unavailable is not None for r in runs):
        # The model service refused a run past --max-service-wait: no verdict on what is
        # left (a mean over fewer runs is not the case's), unless the agent itself errored.
        return "error" if any(r.status == "error" for r in runs) else "not_evaluated"
    if any(m.status == "failed" for m in gating):
        return "failed"
    if any(r.status == "error" for r in runs) or any(m.status == "error" for m in gating):
        return "error"
    if any(not_started(r) for r in runs):
        # A metric the runs that did happen left unscored fails as AgentEvaluator fails it.
        started = any(not not_started(r) for r in runs)
        if started and any(m.status == "not_evaluated" for m in gating):
            return "failed"
        return "not_evaluated"
    if any(m.status == "not_evaluated" for m in gating):
        return "failed"
    if any(m.status == "passed" for m in gating):
        return "passed"
    return "not_evaluated"


def _run_status(run: RecordedRun, index: int,
                per_metric: list[tuple[MetricResult, RunScore | None]]) -> RunStatus:
    """The agent run's verdict: ``error`` only when the agent failed.

    A metric that could not be computed on this run (a judge outage, a metric bug) is that
    metric's error, and its case's (CONTRACT section 4); the run is judged on the metrics
    that could be computed, so reports never blame the agent for a broken judge. Each run
    passes a metric as the metric passes: ``>=`` its threshold, ``<=`` when lower is better.
    """
    if run.unavailable is not None:  # the model service's refusal, not the agent's failure
        return "not_evaluated"
    if run.error is not None:
        return "error"
    verdicts = []
    for metric, score in per_metric:
        if metric.status == "informational" or score is None or score.error:
            continue
        if metric.threshold is not None and (run_score := metric.runs[index]) is not None:
            verdicts.append(metric.meets(run_score))
    if not verdicts:
        return "not_evaluated"
    return "passed" if all(verdicts) else "failed"


def own_time(run: RecordedRun) -> float | None:
    """The seconds a run's agent spent on the case's turns: its invocations' durations when
    each has one (a process's or warm worker's start-up before its ready message is not the
    case's time, nor is a simulated user's thinking), else the run's recorded time."""
    durations = [i.duration for i in run.invocations if i.duration is not None]
    if run.error is None and durations and len(durations) == len(run.invocations):
        return round(sum(durations), 3)
    return run.duration_seconds


def _bounded(run: RecordedRun) -> RecordedRun:
    """The one bound on what metrics score: a run whose invocations are too large is an
    errored run, never handed to ROUGE or a judge (checker/safety/limits.py)."""
    if run.error is not None:
        return run
    from ..safety.limits import scored_size_problem

    problem = scored_size_problem("".join(i.model_dump_json() for i in run.invocations))
    return run if problem is None else run.model_copy(update={"error": problem})


async def score_case(case: EvalCase, config: EvalConfig, runs: list[RecordedRun], line: int,
                     context: ScoringContext, rule: VerdictRule = MEAN) -> CaseResult:
    runs = [_bounded(r) for r in sorted(runs, key=lambda r: r.run)]
    jobs: list[tuple[ConfiguredMetric, RunInput] | None] = []
    for run in runs:
        run_input = RunInput(case=case, actual=run.invocations, expected=case.conversation,
                             scenario=case.conversation_scenario, run=run.run)
        for configured in config.metrics:
            jobs.append(None if run.error is not None else (configured, run_input))
    # Every (run, metric) pair is independent: those that await (judges, custom metrics) run
    # as tasks at once, so that their calls overlap; a metric that computes its score is
    # awaited in place (a task each made 120,000 tasks for 10,000 replayed cases).
    metered: list[tuple[RunScore, JudgeMeter] | None] = [None] * len(jobs)
    for i, job in enumerate(jobs):
        if job is not None and not _awaits(job[0]):
            metered[i] = await metered_run(*job, context)
    waiting = [i for i, job in enumerate(jobs) if job is not None and _awaits(job[0])]
    # jobs[i] is not None for every i in waiting (mypy cannot tell).
    for i, outcome in zip(waiting, await asyncio.gather(*(metered_run(*jobs[i], context)  # type: ignore[misc, call-arg]
                                                           for i in waiting)), strict=False):
        metered[i] = outcome
    scores = [m[0] if m is not None else None for m in metered]
    per_run: dict[int, list[tuple[ConfiguredMetric, RunScore | None]]] = {}
    meters: dict[int, list[JudgeMeter]] = {}
    width = len(config.metrics)
    for k, run in enumerate(runs):
        per_run[run.run] = list(zip(config.metrics, scores[k * width:(k + 1) * width], strict=False))
        meters[run.run] = [m[1] for m in metered[k * width:(k + 1) * width] if m is not None]

    metrics = [aggregate_metric(configured, [(r.run, per_run[r.run][i][1]) for r in runs], rule)
               for i, configured in enumerate(config.metrics)]
    refused = {configured.name for k in range(len(runs)) for i, configured in enumerate(config.metrics)
               if (pair := metered[k * width + i]) is not None and pair[1].refused}
    for metric in metrics:  # a metric the judge budget left out on some run: not evaluated
        if metric.name in refused:
            reason = next(m.refused for ms in meters.values() for m in ms if m.refused)
            metric.status, metric.error = "not_evaluated", reason
    run_results = [RunResult(run=r.run, status=_run_status(r, k, list(zip(metrics, [
                                 score for _, score in per_run[r.run]], strict=False))),
                             error=r.error, duration_seconds=own_time(r), stderr_tail=r.stderr_tail,
                             retries=r.retries, usage=_usage(r, meters[r.run]),
                             unavailable=r.unavailable, refusals=r.refusals)
                   for k, r in enumerate(runs)]
    # A metric the judge budget left out is not the agent's failure: such a case is not
    # evaluated (scoring/budget.py), unless the metrics that were computed failed it.
    status = case_status(run_results, [m for m in metrics if m.name not in refused])
    if refused and status != "failed":
        status = "not_evaluated"  # never passed on the metrics that could be computed
    result = CaseResult(eval_id=case.eval_id, status=status, line=line,
                        runs=run_results, metrics=metrics, usage=sum_usage(r.usage for r in run_results),
                        fingerprint=case_fingerprint(case, config), flaky=case_flaky(metrics),
                        trajectories=summarise(runs))
    result.keep_run_verdicts([RunVerdicts(run=r.run, metrics=[_verdict(c, s) for c, s in per_run[r.run]])
                              for r in runs if r.error is None])
    return result


def _awaits(configured: ConfiguredMetric) -> bool:
    """Whether the metric's score is awaited: a custom metric's or function's (its worker),
    or a coroutine (a judge)."""
    return (configured.metric is None or getattr(configured, "custom_function_source", None) is not None
            or inspect.iscoroutinefunction(configured.metric.score))


def _usage(run: RecordedRun, meters: list[JudgeMeter]) -> Usage | None:
    """The run's tokens: its agent's (as reported), its simulated user's (as recorded) and its
    judges' (every metric's calls), and the instances Vertex AI scored for it."""
    instances = sum(m.vertex_instances for m in meters)
    usage = Usage(agent=agent_tokens(run.invocations), judge=sum_tokens(m.tokens for m in meters),
                  simulator=run.simulator_usage, vertex_instances=instances or None)
    return None if usage.empty() else usage


def _verdict(configured: ConfiguredMetric, score: RunScore | None) -> MetricVerdict:
    """One metric's verdict on one run, on its own (the case's verdict is over its runs)."""
    assert score is not None  # only runs whose agent succeeded are scored
    threshold = None if configured.informational else configured.threshold
    status: MetricStatus
    if configured.informational:
        status = "informational"
    elif score.error:
        status = "error"
    elif score.score is None or threshold is None:
        status = "not_evaluated"
    else:
        status = "passed" if score.score >= threshold else "failed"
    return MetricVerdict(name=configured.name, threshold=threshold, score=score.score, status=status,
                         invocations=[i.score for i in score.invocations])
