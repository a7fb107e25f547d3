"""A metric's score and verdict over a case's runs equal google-adk 2.13 AgentEvaluator's.

Differential: generated per-turn results (1-4 runs of 1-5 turns, scores in [0, 1] or None,
statuses PASSED / FAILED / NOT_EVALUATED / INFORMATIONAL, thresholds including scores exactly
at them, built-in and custom metrics, custom ones with and without ``overall_score``) go
to ADK's own aggregation (``AgentEvaluator._get_eval_metric_results_with_invocation``, then
``_process_metrics_and_get_failures``: called, never copied) as the ``EvalCaseResult``s
LocalEvalService builds, and to evalcheck's (``scoring/case.py: aggregate_metric`` and
``case_status``; a custom metric's result read by ``to_run_score``, as the worker reads it).
Every metric's score and status and every case's verdict must be equal. The end-to-end
counterpart, with a real ADK agent and AgentEvaluator's own runs:
tests/agents/test_adk_evaluator_aggregation.py.
"""

from __future__ import annotations

import random
import statistics
from collections import Counter
from dataclasses import dataclass
from typing import Any
from unittest import mock

import pytest

from google.adk.evaluation.agent_evaluator import AgentEvaluator
from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_config import EvalConfig as AdkEvalConfig
from google.adk.evaluation.eval_config import get_eval_metrics_from_config
from google.adk.evaluation.eval_metrics import EvalMetricResult, EvalMetricResultPerInvocation
from google.adk.evaluation.eval_result import EvalCaseResult
from google.adk.evaluation.evaluator import EvalStatus, EvaluationResult, PerInvocationResult
from google.adk.evaluation.llm_as_judge_utils import get_eval_status
from google.genai import types as genai_types

from checker.inputs.criteria import ConfiguredMetric
from checker.metrics.base import InvocationScore, RunScore
from checker.models.results import RunResult
from checker.scoring.aggregation import exact_mean
from checker.scoring.case import aggregate_metric, case_status
from checker.scoring.custom_metric import to_run_score

SEED = 20260131
PATTERNS = 10_000
THRESHOLDS = [0.0, 0.2, 0.25, 0.3, 0.5, 0.6, 0.75, 0.8, 1.0]
ADK_STATUS = {EvalStatus.PASSED: "passed", EvalStatus.FAILED: "failed",
              EvalStatus.NOT_EVALUATED: "not_evaluated", EvalStatus.INFORMATIONAL: "informational"}
STATUSES = list(ADK_STATUS)
INVOCATION = AdkInvocation(user_content=genai_types.Content(role="user", parts=[genai_types.Part(text="q")]))
EFFICIENCY = ("tool_call_count_v1", "token_usage_v1", "invocation_duration_v1")  # no threshold


@dataclass
class MetricPattern:
    name: str
    kind: str  # "builtin", "custom" or "efficiency"
    threshold: float | None
    # Per run: the turns' (score, ADK status), or None for a run on which the metric could not
    # run at all (ADK: every turn a NOT_EVALUATED placeholder).
    runs: list[list[tuple[float | None, EvalStatus]] | None]
    overall: list[float | None]  # a custom metric's overall_score per run
    as_dict: bool = False  # a custom metric returning a dict (statuses as ADK's numbers)


def draw_score(rng: random.Random, threshold: float | None) -> float | None:
    roll = rng.random()
    if roll < 0.2:
        return None
    if roll < 0.35 and threshold is not None:
        return threshold  # exactly at the threshold: skipped by the direction vote
    if roll < 0.75:
        return rng.choice([0.0, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.75, 0.8, 0.9, 1.0])
    return rng.random()


def draw_statuses(rng: random.Random, scores: list[float | None], threshold: float,
                  mode: str, cutoff: float) -> list[EvalStatus]:
    """How a custom metric marks its turns."""
    out = []
    for score in scores:
        if mode == "random":
            out.append(rng.choice(STATUSES))
        elif mode == "informational" or (mode == "first_informational" and not out):
            out.append(EvalStatus.INFORMATIONAL)
        elif score is None:
            out.append(EvalStatus.NOT_EVALUATED)
        elif mode == "lower":
            out.append(EvalStatus.PASSED if score <= threshold else EvalStatus.FAILED)
        elif mode == "cutoff":  # passes from another value up ("PASSED from 0.3, threshold 0.5")
            out.append(EvalStatus.PASSED if score >= cutoff else EvalStatus.FAILED)
        else:  # "higher", "first_informational", "noisy"
            out.append(EvalStatus.PASSED if score >= threshold else EvalStatus.FAILED)
    if mode == "noisy" and out:
        k = rng.randrange(len(out))
        out[k] = rng.choice(STATUSES)
    return out


def draw_overall(rng: random.Random, scores: list[float | None]) -> float | None:
    scored = [s for s in scores if s is not None]
    how = rng.choice(["none", "min", "max", "mean", "random"])
    if how == "none" or not scored:
        return None if how == "none" or rng.random() < 0.5 else rng.random()
    return {"min": min(scored), "max": max(scored), "mean": sum(scored) / len(scored),
            "random": rng.random()}[how]


def draw_pattern(rng: random.Random) -> tuple[list[int], list[MetricPattern]]:
    runs = rng.randint(1, 4)
    same = rng.random() < 0.5
    first = rng.randint(1, 5)
    turns = [first if same else rng.randint(1, 5) for _ in range(runs)]
    metrics = []
    for m in range(rng.randint(1, 3)):
        kind = rng.choices(["builtin", "custom", "efficiency"], [3, 6, 1])[0]
        if kind == "efficiency":
            name = EFFICIENCY[m]
            threshold = None
            per_run: list[Any] = [[(rng.choice([None, float(rng.randint(0, 300))]),
                                    EvalStatus.INFORMATIONAL) for _ in range(t)] for t in turns]
            metrics.append(MetricPattern(name, kind, None, per_run, [None] * runs))
            continue
        name = f"metric_{m}"
        threshold = rng.choice(THRESHOLDS)
        mode = rng.choice(["higher", "lower", "lower", "random", "cutoff", "noisy",
                           "informational", "first_informational"])
        cutoff = rng.choice(THRESHOLDS)
        per_run, overall = [], []
        for t in turns:
            if rng.random() < 0.08:
                per_run.append(None)  # the metric raised on this run
                overall.append(None)
                continue
            scores = [draw_score(rng, threshold) for _ in range(t)]
            if kind == "builtin":
                statuses = [get_eval_status(s, threshold) for s in scores]  # ADK's own rule
            else:
                statuses = draw_statuses(rng, scores, threshold, mode, cutoff)
            per_run.append(list(zip(scores, statuses)))
            overall.append(draw_overall(rng, scores))
        metrics.append(MetricPattern(name, kind, threshold, per_run, overall,
                                     as_dict=rng.random() < 0.3))
    return turns, metrics


# ------------------------------------------------------------------ ADK's side


def adk_metrics(metrics: list[MetricPattern]) -> dict[str, Any]:
    """Each metric as ADK makes it from an eval config (criteria, custom metrics)."""
    criteria = {m.name: m.threshold for m in metrics if m.kind != "efficiency"}
    custom = {m.name: {"code_config": {"name": f"metrics.{m.name}"}}
              for m in metrics if m.kind == "custom"}
    config = AdkEvalConfig(criteria=criteria, custom_metrics=custom or None)
    return {m.metric_name: m for m in get_eval_metrics_from_config(config)}


def adk_verdicts(turns: list[int], metrics: list[MetricPattern],
                 eval_metrics: dict[str, Any]) -> tuple[dict[str, tuple[str, float | None]], bool]:
    """Per metric (status, score), and whether the case failed, by AgentEvaluator."""
    fields = {name: metric.model_dump() for name, metric in eval_metrics.items()}
    case_results = []
    for run, count in enumerate(turns):
        per_invocation = [EvalMetricResultPerInvocation(actual_invocation=INVOCATION,
                                                        eval_metric_results=[])
                          for _ in range(count)]
        for m in metrics:
            data = m.runs[run] or [(None, EvalStatus.NOT_EVALUATED)] * count  # the placeholders
            for (score, status), invocation in zip(data, per_invocation):
                # As LocalEvalService copies each per-invocation result.
                invocation.eval_metric_results.append(EvalMetricResult(
                    score=score, eval_status=status, **fields[m.name]))
        case_results.append(EvalCaseResult(
            eval_set_id="s", eval_id="c", final_eval_status=EvalStatus.NOT_EVALUATED,
            overall_eval_metric_results=[], eval_metric_result_per_invocation=per_invocation,
            session_id="session"))
    reported: dict[str, tuple[str, float | None]] = {}

    def record(eval_metric_result_with_invocations, overall_eval_status, overall_score,
               metric_name, threshold):
        reported[metric_name] = (ADK_STATUS[overall_eval_status], overall_score)

    grouped = AgentEvaluator._get_eval_metric_results_with_invocation(case_results)
    with mock.patch.object(AgentEvaluator, "_print_details", staticmethod(record)):
        failures = AgentEvaluator._process_metrics_and_get_failures(
            eval_metric_results=grouped, print_detailed_results=True, agent_module="agent")
    failures += AgentEvaluator._get_failures_from_final_eval_status(
        eval_id="c", eval_results_per_eval_id=case_results, agent_module="agent")
    return reported, bool(failures)


# ------------------------------------------------------------------ evalcheck's side


def custom_result(m: MetricPattern, run: int) -> Any:
    """What the custom metric function returns on a run: ADK's EvaluationResult, or a dict."""
    data = m.runs[run]
    assert data is not None
    if m.as_dict:
        return {"overall_score": m.overall[run],
                "per_invocation_results": [{"score": s, "eval_status": st.value} for s, st in data]}
    return EvaluationResult(
        overall_score=m.overall[run],
        per_invocation_results=[PerInvocationResult(actual_invocation=INVOCATION, score=s,
                                                    eval_status=st) for s, st in data])


def run_score(m: MetricPattern, run: int) -> RunScore:
    data = m.runs[run]
    if data is None:
        return RunScore(not_evaluated_reason="the metric could not run")
    if m.kind == "custom":
        return to_run_score(custom_result(m, run), f"metrics.{m.name}")
    scored = [s for s, _ in data if s is not None]
    # A built-in metric: per-turn scores (statuses from the threshold), its own mean of them.
    return RunScore(score=sum(scored) / len(scored) if scored else None,
                    invocations=[InvocationScore(score=s) for s, _ in data])


def ours(turns: list[int], metrics: list[MetricPattern]) -> tuple[dict[str, tuple[str, float | None]], str]:
    results = []
    for m in metrics:
        configured = ConfiguredMetric(m.name, None, None, m.threshold, m.kind == "efficiency",
                                      custom_function_path=f"metrics.{m.name}" if m.kind == "custom" else None)
        results.append(aggregate_metric(configured, [(n + 1, run_score(m, n)) for n in range(len(turns))]))
    runs = [RunResult(run=n + 1, status="passed") for n in range(len(turns))]
    return {r.name: (r.status, r.score) for r in results}, case_status(runs, results)


def compare(rng: random.Random) -> tuple[str, tuple[list[int], list[MetricPattern]]]:
    turns, metrics = pattern = draw_pattern(rng)
    adk, adk_failed = adk_verdicts(turns, metrics, adk_metrics(metrics))
    mine, status = ours(turns, metrics)
    assert mine == adk, pattern
    if all(s == "informational" for s, _ in mine.values()):
        # No gating metric: AgentEvaluator passes the case, evalcheck calls it not evaluated
        # (never a pass; docs/adk-users.md).
        assert (status, adk_failed) == ("not_evaluated", False), pattern
        return "no gating metric", pattern
    assert status == ("failed" if adk_failed else "passed"), pattern
    return status, pattern


def test_generated_patterns_score_and_pass_as_in_agent_evaluator():
    rng = random.Random(SEED)
    outcomes: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    for _ in range(PATTERNS):
        outcome, (turns, metrics) = compare(rng)
        outcomes[outcome] += 1
        seen.update(m.kind for m in metrics)
        if len(set(turns)) > 1:
            seen["runs of different lengths"] += 1
    # Every kind of pattern was met often (the comparison is not decided by a few).
    assert outcomes["passed"] > 1000 and outcomes["failed"] > 1000, outcomes
    assert outcomes["no gating metric"] > 100, outcomes
    assert min(seen.values()) > 1000, seen


def test_the_generated_patterns_leave_the_common_path():
    """Each of AgentEvaluator's rules decides some generated patterns differently from a
    mean of per-run means under ``>=`` on the config's informational flag alone."""
    rng = random.Random(SEED)
    differ: Counter[str] = Counter()
    for _ in range(2000):
        turns, metrics = draw_pattern(rng)
        for result in ours(turns, metrics)[0].items():
            name, (status, score) = result
            m = next(p for p in metrics if p.name == name)
            run_means = [exact_mean([s for s, _ in r if s is not None])
                         for r in m.runs if r is not None and any(s is not None for s, _ in r)]
            naive = sum(run_means) / len(run_means) if run_means else None
            if score is not None and naive is not None and score != naive:
                differ["pooled"] += 1
            if status == "informational" and m.kind == "custom":
                differ["informational by status"] += 1
            if m.threshold is not None and score is not None and status in ("passed", "failed") \
                    and (status == "passed") != (score >= m.threshold):
                differ["lower is better"] += 1
            if m.kind == "custom" and score is not None and any(
                    o is not None and o != score for o in m.overall):
                differ["overall_score not used"] += 1
            if status == "not_evaluated":
                differ["not evaluated"] += 1
    assert len(differ) == 5 and min(differ.values()) > 50, differ


# ------------------------------------------------------------------ hand-computed cases


def one(turn_runs: list[list[tuple[float | None, EvalStatus]]], threshold: float,
        overall: list[float | None] | None = None) -> tuple[tuple[str, float | None], Any]:
    """A custom metric over the given runs, by evalcheck, checked against AgentEvaluator."""
    m = MetricPattern("m", "custom", threshold, turn_runs, overall or [None] * len(turn_runs))
    turns = [len(r) for r in turn_runs]
    adk, _ = adk_verdicts(turns, [m], adk_metrics([m]))
    mine, _ = ours(turns, [m])
    assert mine == adk
    configured = ConfiguredMetric("m", None, None, threshold, False, custom_function_path="metrics.m")
    return mine["m"], aggregate_metric(configured, [(n + 1, run_score(m, n)) for n in range(len(turns))])


P, F, N, I = EvalStatus.PASSED, EvalStatus.FAILED, EvalStatus.NOT_EVALUATED, EvalStatus.INFORMATIONAL


def test_pooled_turns_weigh_each_turn():
    # Run 1 = [1.0, unscored], run 2 = [0.2, 0.2]: (1.0 + 0.2 + 0.2) / 3, not (1.0 + 0.2) / 2.
    (status, score), result = one([[(1.0, P), (None, N)], [(0.2, F), (0.2, F)]], 0.5)
    assert (status, score) == ("failed", statistics.mean([1.0, 0.2, 0.2]))
    assert result.runs == [1.0, 0.2] and result.run_turns == [1, 2]
    # Simulated conversations of 1 turn at 0.9 and 3 turns at 0.3: 0.45.
    (status, score), _ = one([[(0.9, P)], [(0.3, F)] * 3], 0.5)
    assert (status, score) == ("failed", 0.45)


def test_lower_is_better_is_inferred_from_the_turns():
    # A cost metric: turns pass at or below 0.3.
    (status, score), result = one([[(0.1, P), (0.2, P)]], 0.3)
    assert (status, score, result.lower_is_better) == ("passed", 0.15000000000000002, True)
    assert result.model_dump(by_alias=True, exclude_none=True)["lowerIsBetter"] is True
    (status, score), _ = one([[(0.5, F)]], 0.3)
    assert (status, score) == ("failed", 0.5)
    # Turns passing from 0.3 up, threshold 0.5: a 0.4 turn that passed votes lower-is-better.
    (status, score), result = one([[(0.4, P)]], 0.5)
    assert (status, score, result.lower_is_better) == ("passed", 0.4, True)
    # Turns that disagree, or sit at the threshold, leave ">=".
    (status, score), result = one([[(0.4, P), (0.9, P)]], 0.5)
    assert (status, result.lower_is_better) == ("passed", None)
    (status, score), _ = one([[(0.5, P), (0.2, N)]], 0.5)
    assert (status, score) == ("failed", 0.35)


def test_informational_by_the_first_turn_and_no_score_fails():
    (status, score), result = one([[(0.1, I), (0.2, F)]], 0.5)
    assert (status, result.threshold) == ("informational", None)
    (status, score), _ = one([[(0.1, F), (0.2, I)]], 0.5)  # only the first turn decides
    assert status == "failed"
    (status, score), result = one([[(None, N)], [(None, F)]], 0.5)
    assert (status, score) == ("not_evaluated", None)
    assert case_status([], [result]) == "failed"


def test_per_turn_scores_over_overall_score():
    # Turns [1.0, 0.2], overall_score = min = 0.2: AgentEvaluator's 0.6 passes.
    (status, score), result = one([[(1.0, P), (0.2, F)]], 0.5, overall=[0.2])
    assert (status, score, result.runs) == ("passed", 0.6, [0.6])


def test_runs_pass_in_the_metric_direction():
    """The comparison's per-run pass/fail: each run against the threshold in the metric's
    direction (compare/verdict.py reads MetricResult.meets)."""
    from checker.models.verdict_rule import run_passes

    _, result = one([[(0.1, P)], [(0.5, F)], [(0.3, P)]], 0.3)
    assert result.lower_is_better and run_passes(result) == (2, 3)
    from checker.compare.pooling import run_passes as pooled_passes
    from checker.models.results import CaseResult

    from checker.compare.verdict import case_pass_counts

    case = CaseResult(eval_id="c", status="failed", runs=[RunResult(run=n, status="passed") for n in (1, 2, 3)],
                      metrics=[result])
    assert pooled_passes(case, result) == [True, False, True]
    assert str(case_pass_counts(case)) == "2/3"
    # The verdict rules that count runs count them in that direction too.
    from checker.models.verdict_rule import VerdictRule

    configured = ConfiguredMetric("m", None, None, 0.3, False, custom_function_path="metrics.m")
    m = MetricPattern("m", "custom", 0.3, [[(0.1, P)], [(0.5, F)], [(0.2, P)]], [None] * 3)
    scores = [(n + 1, run_score(m, n)) for n in range(3)]
    assert [aggregate_metric(configured, scores, VerdictRule(kind)).status
            for kind in ("all-runs", "majority")] == ["failed", "passed"]


def test_a_shard_with_pooled_scores_merges_and_a_forged_direction_does_not(tmp_path):
    """The merge checks each shard's verdicts from its own runs (scale/verify.py): runs of
    different lengths weigh by their scored turns (runTurns); a built-in metric is never
    lower-is-better."""
    from checker.errors import InputError
    from checker.models.results import CaseResult, EvalSetResult, Results
    from checker.scale.verify import check_verdicts

    (_, _), cost = one([[(0.1, P)], [(0.2, P), (0.4, F), (0.2, P)]], 0.3)
    (_, _), quality = one([[(0.9, P)], [(0.3, F)] * 3], 0.5)
    quality.name = "quality"
    assert (cost.run_turns, cost.lower_is_better, quality.status) == ([1, 3], True, "failed")
    runs = [RunResult(run=n, status="passed") for n in (1, 2)]

    def shard(*metrics):
        case = CaseResult(eval_id="c", status=case_status(runs, list(metrics)), runs=runs,
                          metrics=list(metrics))
        return Results(passed=False, summary={}, eval_sets=[EvalSetResult(eval_set_id="s", path="s.json",
                                                                          cases=[case])])

    check_verdicts(tmp_path / "s.json", shard(cost, quality))
    forged = quality.model_copy(update={"name": "tool_trajectory_avg_score", "lower_is_better": True,
                                        "status": "passed"})
    with pytest.raises(InputError, match="never lower-is-better"):
        check_verdicts(tmp_path / "s.json", shard(forged))
    unweighted = quality.model_copy(update={"run_turns": None})
    with pytest.raises(InputError, match="its runs' mean is"):
        check_verdicts(tmp_path / "s.json", shard(unweighted))


def test_exact_mean_is_statistics_mean():
    """ADK averages with statistics.mean (exact, rounded once); so does evalcheck, faster."""
    rng = random.Random(SEED)
    edge = [0.1, 0.2, 0.3, 1 / 3, 0.7, 0.0, -0.0, 5e-324, 1e-300, 1e300, 8.98846567431158e306, 1.0]
    for _ in range(20_000):
        n = rng.randint(1, 9)
        kind = rng.randrange(4)
        values = ([rng.random() for _ in range(n)] if kind == 0 else
                  [rng.choice(edge) for _ in range(n)] if kind == 1 else
                  [rng.uniform(-1, 1) * 10.0 ** rng.randint(-300, 300) for _ in range(n)] if kind == 2 else
                  [rng.randint(0, 10**6) for _ in range(n)])
        assert exact_mean(values) == statistics.mean(values), values
    assert exact_mean([0.1, 0.2, 0.3]) == 0.2 != (0.1 + 0.2 + 0.3) / 3
