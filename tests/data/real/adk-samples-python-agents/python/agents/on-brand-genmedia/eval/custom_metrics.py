"""A stand-in, written for evalcheck's tests, for adk-samples'
python/agents/on-brand-genmedia/eval/custom_metrics.py (not copied: code): the same function
name and behaviour - each invocation scores 1.0 when the agent called every expected tool
by name, in any order, extra calls allowed (arguments ignored), else 0.0; no expected
invocations is not evaluated."""

from collections import Counter

from google.adk.evaluation.eval_case import get_all_tool_calls
from google.adk.evaluation.eval_metrics import EvalStatus
from google.adk.evaluation.evaluator import EvaluationResult, PerInvocationResult


def _names(invocation):
    return Counter(call.name for call in get_all_tool_calls(invocation.intermediate_data))


def name_only_trajectory_evaluator(eval_metric, actual_invocations, expected_invocations=None,
                                   conversation_scenario=None):
    if not expected_invocations:
        return EvaluationResult(overall_eval_status=EvalStatus.NOT_EVALUATED)
    threshold = 1.0 if eval_metric.threshold is None else eval_metric.threshold
    per = []
    for actual, expected in zip(actual_invocations, expected_invocations):
        missing = _names(expected) - _names(actual)
        score = 0.0 if missing else 1.0
        per.append(PerInvocationResult(
            actual_invocation=actual, expected_invocation=expected, score=score,
            eval_status=EvalStatus.PASSED if score >= threshold else EvalStatus.FAILED))
    overall = sum(p.score for p in per) / len(per) if per else 0.0
    return EvaluationResult(
        overall_score=overall, per_invocation_results=per,
        overall_eval_status=EvalStatus.PASSED if overall >= threshold else EvalStatus.FAILED)
