"""Custom metrics: a Python function named in test_config.json's ``custom_metrics``.

``{"custom_metrics": {"my_metric": {"code_config": {"name": "evals.metrics.my_metric"}}}}``
names ``my_metric`` in module ``evals.metrics``, imported from the private copy of the
nearest folder holding ``evals/`` or ``evals.py``, from the eval file's folder up to the
repository root (inputs/metric_origin.py; ADK only searches the existing path, and its users
run ``adk eval`` from the agent's folder). The function is called the way ADK calls
it: ``fn(eval_metric, actual_invocations, expected_invocations, conversation_scenario)``,
the invocations and scenario as ADK's own models when google-adk is installed, where
``eval_metric`` has ``metric_name``, ``threshold`` (None, as in ADK) and ``criterion``
(with ``criterion.threshold``). It may be sync or async, and may return an ADK
``EvaluationResult`` (or a dict of its shape), any object or dict with ``overall_score``, or a
plain number. Each per-invocation result keeps its score and status: the metric's score is
their mean over every run and its direction comes from their statuses, as in AgentEvaluator
(scoring/aggregation.py); ``overall_score`` is only the run's own score. An exception or a
bad return value makes the metric an ``error`` with the reason; it never crashes the run.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..metrics.base import InvocationScore, RunInput, RunScore, ScoringContext


@dataclass
class CustomEvalMetric:
    """What ADK passes as ``eval_metric`` (a copy of EvalMetric with threshold None)."""

    metric_name: str
    criterion: Any
    threshold: float | None = None
    custom_function_path: str | None = None
    judge_model_options: Any = None


class CustomMetricProblem(Exception):
    pass


COPY_HINT = ("the copy of its package and of the repository modules it imports, made before "
             "any agent ran; import repository modules with a plain import statement: "
             "docs/metrics.md#custom-metrics")


def import_function(path: str, root: Path, sources: Path | None = None,
                    search: Path | None = None) -> Callable[..., Any]:
    """``pkg.module.function`` imported with ``search`` first on sys.path (removed after):
    the folder of the private copy (metric_sources.py: the metric's package and the modules
    it imports) for the metric's origin folder, or that origin folder itself when there is no
    copy; by default ``sources``, else ``root``. Never the working directory beside a copy:
    the agent can write there. Only ever called in the worker process
    (custom_metric_worker.py), never as root in evalcheck's image."""
    module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise CustomMetricProblem(f"custom metric function '{path}' is not a dotted path "
                                  "like package.module.function")
    refuse_root()
    folder = search or sources or root
    switch_folder(folder)
    entries = [str(folder)]
    added = [e for e in entries if e not in sys.path]
    sys.path[0:0] = added
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        where = f"the folder {folder}" if sources is None else COPY_HINT
        raise CustomMetricProblem(f"could not import module '{module_name}' for custom metric "
                                  f"function '{path}' (searched {where}): "
                                  f"{type(exc).__name__}: {exc}") from None
    finally:
        for entry in added:
            try:
                sys.path.remove(entry)
            except ValueError:
                pass
    function = getattr(module, attr, None)
    if function is None:
        raise CustomMetricProblem(f"module '{module_name}' has no '{attr}' (custom metric "
                                  f"function '{path}')")
    if not callable(function):
        raise CustomMetricProblem(f"custom metric '{path}' is not callable")
    return function


_IMPORTED_FROM: list[Path] = []  # the folder the worker last imported a metric from


def switch_folder(folder: Path) -> None:
    """Two agents of a monorepo may each have an ``eval`` package with the same module names:
    before importing from another folder, the modules imported from the previous one are
    forgotten (Python would otherwise hand back the other agent's cached module)."""
    previous = _IMPORTED_FROM[0] if _IMPORTED_FROM else None
    _IMPORTED_FROM[:] = [folder]
    if previous is None or previous == folder:
        return
    try:
        tops = {e.name.removesuffix(".py") for e in previous.iterdir()
                if e.is_dir() or e.name.endswith(".py")}
    except OSError:
        return
    for name, module in list(sys.modules.items()):
        if name.split(".", 1)[0] in tops and _loaded_from(module, previous):
            del sys.modules[name]


def _loaded_from(module: Any, folder: Path) -> bool:
    try:
        places = [getattr(module, "__file__", None), *(getattr(module, "__path__", None) or [])]
        return any(isinstance(p, str) and Path(p).is_relative_to(folder) for p in places)
    except Exception:  # an odd module object: not one of the metric's
        return False


def _get(value: Any, *names: str) -> Any:
    for name in names:
        if isinstance(value, dict):
            if name in value:
                return value[name]
        elif hasattr(value, name):
            return getattr(value, name)
    return None


def _number(value: Any, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CustomMetricProblem(f"{what} must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise CustomMetricProblem(f"{what} must be a finite number, got {value}")
    return float(value)


ADK_STATUSES = {1: "PASSED", 2: "FAILED", 3: "NOT_EVALUATED", 4: "INFORMATIONAL"}  # EvalStatus


def _status_name(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value in ADK_STATUSES:
        return ADK_STATUSES[value]  # an EvalStatus, or its number as ADK writes it in JSON
    name = getattr(value, "name", None) or str(value)
    return name.rsplit(".", 1)[-1].upper()


def to_run_score(result: Any, path: str) -> RunScore:
    """An ADK-style result (object, dict or number) as a RunScore."""
    if result is None:
        raise CustomMetricProblem(f"custom metric '{path}' returned None; return an "
                                  "EvaluationResult, an object with overall_score, or a number")
    if isinstance(result, (int, float)) and not isinstance(result, bool):
        return RunScore(score=_number(result, "the returned score"))
    overall = _get(result, "overall_score", "overallScore")
    per = _get(result, "per_invocation_results", "perInvocationResults") or []
    status = _status_name(_get(result, "overall_eval_status", "overallEvalStatus"))
    if overall is None and not per and status is None:
        raise CustomMetricProblem(f"custom metric '{path}' returned {type(result).__name__} "
                                  "without overall_score or per_invocation_results")
    invocations = []
    for i, item in enumerate(per):
        score = _number(item if isinstance(item, (int, float)) and not isinstance(item, bool)
                        else _get(item, "score"), f"per_invocation_results[{i}].score")
        status_name = _status_name(_get(item, "eval_status", "evalStatus"))
        item_status = status_name.lower() if status_name else None
        invocations.append(InvocationScore(score=score, status=item_status,
                                           details={"status": item_status} if item_status else {}))
    score = _number(overall, "overall_score")
    if score is None and invocations:
        scored = [i.score for i in invocations if i.score is not None]
        score = sum(scored) / len(scored) if scored else None
    if score is None:
        return RunScore(invocations=invocations,
                        not_evaluated_reason=f"custom metric '{path}' returned no score"
                        + (f" (status {status.lower()})" if status else ""))
    return RunScore(score=score, invocations=invocations)


def refuse_root() -> None:
    """The one guard: in evalcheck's image (where the unprivileged user exists) a process
    running as root never imports a custom metric."""
    import os
    import pwd

    from ..agents.sandbox import AGENT_USER

    if hasattr(os, "geteuid") and os.geteuid() == 0:
        try:
            pwd.getpwnam(AGENT_USER)
        except KeyError:
            return
        raise CustomMetricProblem("refusing to import a custom metric as root")


async def score_custom(configured: Any, run: RunInput, context: ScoringContext) -> RunScore:
    """Score one run with the custom metric of ``configured`` (a ConfiguredMetric), always in
    the worker process (checker/scoring/custom_metric_worker.py): the context's, or one made
    here for the repository root (closed with the context's other services)."""
    path = configured.custom_function_path or ""
    return await worker_for(context).score(path, configured.name, configured.criterion, run,
                                           getattr(configured, "custom_function_origin", None))


def worker_for(context: ScoringContext) -> Any:
    """The context's custom metric worker, or one made here for the repository root."""
    worker = context.services.custom_metric_worker
    if worker is None:
        from ..inputs.discover import find_repo_root
        from .custom_metric_worker import metric_worker

        worker = context.services.custom_metric_worker = metric_worker(find_repo_root(Path.cwd()))
    return worker


def as_adk_types(run: RunInput) -> tuple[list[Any], list[Any] | None, Any]:
    """The run's invocations and scenario as ADK's own models when google-adk is installed:
    ADK passes those, and a metric written for ADK uses them (``get_all_tool_calls``,
    ``PerInvocationResult(actual_invocation=...)``). Without google-adk, evalcheck's models,
    which have the same fields."""
    try:
        from google.adk.evaluation.conversation_scenarios import ConversationScenario
        from google.adk.evaluation.eval_case import Invocation
    except ImportError:
        return (list(run.actual), None if run.expected is None else list(run.expected),
                run.scenario)

    def adk(model: Any, kind: Any) -> Any:
        return kind.model_validate(model.model_dump(mode="json", by_alias=True, exclude_none=True))

    return ([adk(i, Invocation) for i in run.actual],
            None if run.expected is None else [adk(i, Invocation) for i in run.expected],
            None if run.scenario is None else adk(run.scenario, ConversationScenario))


async def score_in_process(path: str, name: str, criterion: Any, run: RunInput, root: Path, *,
                           sources: Path | None = None, search: Path | None = None) -> RunScore:
    """In the worker process: import the function at ``path`` (from ``search``, else
    ``sources``, else ``root``) and score ``run``."""
    try:
        function = import_function(path, root, sources, search)
        metric = CustomEvalMetric(
            metric_name=name, criterion=criterion, threshold=None, custom_function_path=path,
            judge_model_options=getattr(criterion, "judge_model_options", None))
        args = (metric, *as_adk_types(run))
        if inspect.iscoroutinefunction(function):
            result = await function(*args)
        else:
            # A sync function may block (e.g. call a model); keep the judges' loop running.
            result = await asyncio.to_thread(function, *args)
            if inspect.isawaitable(result):
                result = await result
        return to_run_score(result, path)
    except CustomMetricProblem as exc:
        return RunScore(error=str(exc))
    except Exception as exc:  # the user's code failed: an error metric, never a crash
        hint = (f" (modules are imported from {COPY_HINT})"
                if isinstance(exc, ModuleNotFoundError) and sources is not None else "")
        return RunScore(error=f"custom metric '{path}' raised {type(exc).__name__}: {exc}{hint}")
