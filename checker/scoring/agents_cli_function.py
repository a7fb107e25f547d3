"""agents-cli ``custom_function`` metrics, run as agents-cli runs them locally
(google-cloud-aiplatform's ``CustomMetricHandler``): ``evaluate(instance)`` with ``instance``
the eval case as written (without ``responses``), plus ``response`` (the agent's final
response, a Content dict) and ``prompt`` (the case's prompt), and ``agent_data`` the run as
``eval generate`` records it. It returns ``{"score": number, "explanation": ...}``, a number,
or an object with ``score`` (and ``error_message``).

Two halves: ``function_instance`` (the checker builds the instance: data only) and
``score_function_in_process`` (the custom metric worker, as the agent's user, compiles the
source and calls it). The checker never executes the source.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from ..metrics.base import RunInput, RunScore, ScoringContext


async def score_function(configured: Any, run: RunInput, context: ScoringContext) -> RunScore:
    """One run scored by ``configured``'s custom_function, in the custom metric worker."""
    from .custom_metric import worker_for

    instance = function_instance(run)
    if instance is None:
        return RunScore(error=f"no final response of the agent for custom_function "
                              f"'{configured.name}' to score")
    return await worker_for(context).score_function(configured.custom_function_source,
                                                    configured.name, instance)


def function_instance(run: RunInput) -> dict[str, Any] | None:
    """What ``evaluate`` gets for ``run``; None when the agent gave no final response (the
    SDK then reports an error without calling the function)."""
    from ..metrics.machinery.agents_cli_judge import agent_data_dict

    final = run.actual[-1].final_response if run.actual else None
    if final is None:
        return None
    raw = dict((run.case.agents_cli_case if run.case is not None else None) or {})
    raw.pop("responses", None)
    prompt = raw.get("prompt")
    if isinstance(prompt, str):  # a Content in the SDK's model
        raw["prompt"] = {"parts": [{"text": prompt}], "role": "user"}
    response = final.model_dump(mode="json", exclude_none=True)
    response.setdefault("role", "model")
    return {**raw, "agent_data": agent_data_dict(run.actual), "response": response}


async def score_function_in_process(source: str, name: str, instance: dict[str, Any]) -> RunScore:
    """In the worker process only: compile ``source``, call its ``evaluate(instance)``."""
    from .custom_metric import CustomMetricProblem, refuse_root

    try:
        refuse_root()
        namespace: dict[str, Any] = {"__name__": f"custom_metric_{name}"}
        exec(compile(source, f"<custom_metric:{name}>", "exec"), namespace)  # noqa: S102 - the worker
        evaluate = namespace.get("evaluate")
        if not callable(evaluate):
            return RunScore(error=f"custom_function '{name}' defines no callable evaluate(instance)")
        # A sync function may block (e.g. call a model); keep the worker's loop free.
        result = await asyncio.to_thread(evaluate, instance)
    except CustomMetricProblem as exc:
        return RunScore(error=str(exc))
    except Exception as exc:  # the user's code failed: an error metric, never a crash
        return RunScore(error=f"custom_function '{name}' raised {type(exc).__name__}: {exc}")
    return _as_score(result, name)


def _as_score(result: Any, name: str) -> RunScore:
    explanation = None
    if isinstance(result, dict) and "score" in result:
        score, explanation = result["score"], result.get("explanation")
    elif isinstance(result, (int, float)):  # bool too, as the SDK reads it
        score = result
    elif hasattr(result, "score") and not isinstance(result, dict):  # an EvalCaseMetricResult
        if getattr(result, "error_message", None):
            return RunScore(error=f"custom_function '{name}': {result.error_message}")
        score, explanation = result.score, getattr(result, "explanation", None)
    else:
        return RunScore(error=f"custom_function '{name}' returned {type(result).__name__}; "
                              "return {'score': number} or a number")
    if score is None:
        return RunScore(error=f"custom_function '{name}' returned no score")
    if isinstance(score, bool):
        score = float(score)
    if not isinstance(score, (int, float)) or not math.isfinite(score):
        return RunScore(error=f"custom_function '{name}' returned score {score!r}, not a finite number")
    details = {"explanation": str(explanation)[:2000]} if explanation else {}
    return RunScore(score=float(score), details=details)
