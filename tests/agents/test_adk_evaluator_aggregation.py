"""google-adk's own AgentEvaluator and evalcheck, replaying the very runs ADK recorded, give
every metric the same score and verdict, and every case the same verdict.

ADK runs the real weather agent (tests/adk_agent; its model is scripted and offline) with
``evaluate_eval_set(num_runs=2)``: four fixed cases and a conversation_scenario case whose
simulated user (a scripted model registered in ADK's LLMRegistry) ends the first conversation
after one turn and the second after three. The criteria hold the built-in metrics, a
lower-is-better custom metric (tool calls as cost), an informational one, one whose
overall_score is the minimum of its turns, and one whose turns pass from 0.3 up under a 0.5
threshold (ADK's direction inference, quirks included). What ADK reports is read from its own
``_process_metrics_and_get_failures`` (the function wrapped, never copied); evalcheck replays
the invocations ADK recorded (``EvalCaseResult.eval_metric_result_per_invocation``), in ADK's
order, and scores them with the same criteria and metric functions.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
import json
import subprocess
import sys
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest

from .helpers import PY, REPO

pytest.importorskip("google.adk")

ADK_DIR = REPO / "tests" / "adk_agent"
EVAL_FILE = ADK_DIR / "evals" / "weather_app.evalset.json"

METRICS_MODULE = '''
"""Custom metrics of the ADK aggregation test, as ADK calls them."""
from google.adk.evaluation.eval_case import get_all_tool_calls
from google.adk.evaluation.eval_metrics import EvalStatus
from google.adk.evaluation.evaluator import EvaluationResult, PerInvocationResult


def _text(invocation):
    content = invocation.final_response
    return " ".join(p.text for p in (content.parts or []) if p.text) if content else ""


def _result(actual, scores, statuses, overall, overall_status):
    return EvaluationResult(
        overall_score=overall, overall_eval_status=overall_status,
        per_invocation_results=[PerInvocationResult(actual_invocation=inv, score=s, eval_status=st)
                                for inv, s, st in zip(actual, scores, statuses)])


def cost(eval_metric, actual, expected=None, scenario=None):
    """Lower is better: a quarter per tool call; a turn passes at or below the threshold."""
    threshold = eval_metric.criterion.threshold
    scores = [0.25 * len(get_all_tool_calls(i.intermediate_data)) for i in actual]
    statuses = [EvalStatus.PASSED if s <= threshold else EvalStatus.FAILED for s in scores]
    overall = sum(scores) / len(scores)
    return _result(actual, scores, statuses, overall,
                   EvalStatus.PASSED if overall <= threshold else EvalStatus.FAILED)


def chattiness(eval_metric, actual, expected=None, scenario=None):
    """Informational: words per answer, a hundredth each."""
    scores = [len(_text(i).split()) / 100 for i in actual]
    return _result(actual, scores, [EvalStatus.INFORMATIONAL] * len(scores),
                   sum(scores) / len(scores), EvalStatus.INFORMATIONAL)


def worst_turn(eval_metric, actual, expected=None, scenario=None):
    """1.0 for an answer with a temperature, else 0.2; its overall_score is the worst turn."""
    threshold = eval_metric.criterion.threshold
    scores = [1.0 if "degrees" in _text(i) else 0.2 for i in actual]
    statuses = [EvalStatus.PASSED if s >= threshold else EvalStatus.FAILED for s in scores]
    overall = min(scores)
    return _result(actual, scores, statuses, overall,
                   EvalStatus.PASSED if overall >= threshold else EvalStatus.FAILED)


def from_point_three(eval_metric, actual, expected=None, scenario=None):
    """0.4 for a turn that called a tool, else 0.9; a turn passes from 0.3 up."""
    scores = [0.4 if get_all_tool_calls(i.intermediate_data) else 0.9 for i in actual]
    statuses = [EvalStatus.PASSED if s >= 0.3 else EvalStatus.FAILED for s in scores]
    return _result(actual, scores, statuses, None, EvalStatus.NOT_EVALUATED)
'''

CUSTOM = {"cost": 0.3, "chattiness": 0.5, "worst_turn": 0.75, "from_point_three": 0.5}
CONFIG = {
    "criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5, **CUSTOM},
    "custom_metrics": {name: {"code_config": {"name": f"adk_pooling_metrics.{name}"}}
                       for name in CUSTOM},
    "user_simulator_config": {"model": "scripted-user-sim", "max_allowed_invocations": 10},
}
SCENARIO = {
    "eval_id": "scenario_paris",
    "conversation_scenario": {"starting_prompt": "What is the weather in Paris?",
                              "conversation_plan": "Ask about Paris, then Rome, then say thanks."},
    "session_input": {"app_name": "weather_app", "user_id": "eve",
                      "state": {"user_name": "Eve", "units": "celsius"}},
}
# What the scripted user says after the starting prompt, per conversation: the first ends at
# once, the second goes on for two more turns.
SCRIPTS = [[], ["And in Rome?", "Thanks!"]]
STATUS = {1: "passed", 2: "failed", 3: "not_evaluated", 4: "informational"}


def scripted_user_model():
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

    conversations = itertools.count()
    scripts: dict[int, list[str]] = {}

    class ScriptedUserSimulatorModel(BaseLlm):
        """TEST ONLY: a simulated user that follows SCRIPTS, conversation by conversation."""

        model: str = "scripted-user-sim"

        @classmethod
        def supported_models(cls) -> list[str]:
            return [r"scripted-user-sim"]

        async def generate_content_async(self, llm_request: LlmRequest,
                                         stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
            prompt = llm_request.contents[-1].parts[0].text
            said = prompt.count("user: ")  # the user turns of the history so far
            if said == 1:  # a new conversation: its script
                scripts[id(self)] = list(SCRIPTS[next(conversations) % len(SCRIPTS)])
            script = scripts.get(id(self), [])
            text = script[said - 1] if said - 1 < len(script) else "</finished>"
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))

    return ScriptedUserSimulatorModel


def run_adk(root: Path) -> tuple[dict[str, dict[str, tuple[str, float | None]]], dict[str, bool],
                                 dict[str, list[Any]]]:
    """ADK's verdicts: per case, each metric's (status, score); per case, whether it failed;
    per case, the EvalCaseResults of its runs in the order ADK pooled them."""
    from google.adk.evaluation.agent_evaluator import AgentEvaluator
    from google.adk.evaluation.eval_config import EvalConfig
    from google.adk.evaluation.eval_set import EvalSet
    from google.adk.models.registry import LLMRegistry

    data = json.loads(EVAL_FILE.read_text())
    data["eval_cases"].append(SCENARIO)
    reported: dict[str, dict[str, tuple[str, float | None]]] = {}
    failed: dict[str, bool] = {}
    recorded: dict[str, list[Any]] = {}
    current: list[str] = []
    evaluator = AgentEvaluator
    own = {name: getattr(evaluator, name) for name in (
        "_get_eval_metric_results_with_invocation", "_process_metrics_and_get_failures",
        "_get_failures_from_final_eval_status", "_print_details")}

    def grouped(eval_results_per_eval_id):
        eval_id = eval_results_per_eval_id[0].eval_id
        current[:] = [eval_id]
        recorded[eval_id] = list(eval_results_per_eval_id)
        return own["_get_eval_metric_results_with_invocation"](eval_results_per_eval_id)

    def metric_failures(**kwargs):
        failures = own["_process_metrics_and_get_failures"](**kwargs)
        failed[current[0]] = failed.get(current[0], False) or bool(failures)
        return failures

    def run_failures(**kwargs):
        failures = own["_get_failures_from_final_eval_status"](**kwargs)
        failed[kwargs["eval_id"]] = failed.get(kwargs["eval_id"], False) or bool(failures)
        return failures

    def details(eval_metric_result_with_invocations, overall_eval_status, overall_score,
                metric_name, threshold):
        reported.setdefault(current[0], {})[metric_name] = (STATUS[overall_eval_status.value],
                                                            overall_score)

    LLMRegistry.register(scripted_user_model())
    sys.path[0:0] = [str(root), str(ADK_DIR)]
    patched = {"_get_eval_metric_results_with_invocation": grouped,
               "_process_metrics_and_get_failures": metric_failures,
               "_get_failures_from_final_eval_status": run_failures, "_print_details": details}
    try:
        for name, function in patched.items():
            setattr(evaluator, name, staticmethod(function))
        with contextlib.suppress(AssertionError):  # failed thresholds: reported all the same
            asyncio.run(evaluator.evaluate_eval_set(
                agent_module="weather_app", eval_set=EvalSet.model_validate(data),
                eval_config=EvalConfig.model_validate(CONFIG), num_runs=2))
    finally:
        for name, function in own.items():
            setattr(evaluator, name, staticmethod(function))
        for entry in (str(root), str(ADK_DIR)):
            sys.path.remove(entry)
        sys.modules.pop("adk_pooling_metrics", None)
    return reported, failed, recorded


def replay_file(recorded: dict[str, list[Any]]) -> dict[str, Any]:
    """The runs ADK recorded, as evalcheck's replay format, numbered in ADK's order."""
    runs = []
    for eval_id, results in recorded.items():
        for number, result in enumerate(results, start=1):
            invocations = [r.actual_invocation.model_dump(mode="json", exclude_none=True)
                           for r in result.eval_metric_result_per_invocation]
            runs.append({"evalSetId": "weather_app", "evalId": eval_id, "run": number,
                         "invocations": invocations})
    return {"version": 1, "runs": runs}


@pytest.fixture(scope="module")
def both(tmp_path_factory) -> dict[str, Any]:
    pytest.importorskip("pandas")  # AgentEvaluator's own import
    root = tmp_path_factory.mktemp("pooling")
    (root / ".git").mkdir()  # the repository root, where evalcheck finds the metric module
    (root / "adk_pooling_metrics.py").write_text(METRICS_MODULE)
    reported, failed, recorded = run_adk(root)
    data = json.loads(EVAL_FILE.read_text())
    data["eval_cases"].append(SCENARIO)
    evals = root / "evals"
    evals.mkdir()
    (evals / "weather_app.evalset.json").write_text(json.dumps(data))
    (evals / "test_config.json").write_text(json.dumps(CONFIG))
    (root / "runs.json").write_text(json.dumps(replay_file(recorded)))
    done = subprocess.run([PY, "-c", "from checker.cli import main; main()", "run", "evals",
                           "--replay", "runs.json", "--results", "results.json"],
                          cwd=root, capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    results = json.loads((root / "results.json").read_text())
    cases = {c["evalId"]: c for c in results["evalSets"][0]["cases"]}
    return {"adk": reported, "adk_failed": failed, "recorded": recorded, "cases": cases,
            "output": done.stdout}


def test_every_metric_scores_and_passes_as_in_agent_evaluator(both):
    compared = 0
    for eval_id, metrics in both["adk"].items():
        ours = {m["name"]: m for m in both["cases"][eval_id]["metrics"]}
        assert set(ours) == set(metrics), eval_id
        for name, (status, score) in metrics.items():
            assert (ours[name]["status"], ours[name]["score"]) == (status, score), (eval_id, name)
            compared += 1
    assert len(both["adk"]) == 5 and compared == 5 * 10


def test_every_case_passes_or_fails_as_in_agent_evaluator(both):
    assert set(both["adk_failed"]) == set(both["cases"])
    for eval_id, adk_failed in both["adk_failed"].items():
        assert both["cases"][eval_id]["status"] == ("failed" if adk_failed else "passed"), eval_id


def test_the_runs_leave_the_common_path(both):
    """What makes this comparison more than the common path: each way in which pooling turns
    differs from averaging runs occurs, and ADK decided each the way evalcheck now does."""
    adk, cases = both["adk"], both["cases"]
    turns = [len(r.eval_metric_result_per_invocation) for r in both["recorded"]["scenario_paris"]]
    # Simulated conversations of different lengths (ADK runs them at once: either order).
    assert sorted(turns) == [1, 3]
    scenario = {m["name"]: m for m in cases["scenario_paris"]["metrics"]}
    cost = scenario["cost"]
    assert cost["runTurns"] == turns  # replayed in ADK's order
    assert sorted(zip(cost["runTurns"], cost["runs"])) == [(1, 0.25), (3, 0.5 / 3)]
    assert cost["score"] == 0.1875 != sum(cost["runs"]) / 2  # pooled, not the runs' mean
    assert cost["lowerIsBetter"] is True and cost["status"] == "passed"
    assert scenario["tool_trajectory_avg_score"]["status"] == "not_evaluated"
    # Every metric that scored the scenario passed it: it fails on the unscored ones alone
    # (AgentEvaluator: "was not evaluated").
    assert {m["status"] for m in scenario.values()} == {"not_evaluated", "passed", "informational"}
    assert cases["scenario_paris"]["status"] == "failed"
    tokens = scenario["token_usage_v1"]
    assert tokens["score"] != sum(tokens["runs"]) / 2
    # A lower-is-better metric passes below its threshold, fails above it.
    assert adk["paris_celsius"]["cost"] == ("passed", 0.25)
    assert adk["compare_fahrenheit"]["cost"] == ("failed", 0.5)
    # A metric whose turns say INFORMATIONAL never gates, whatever its threshold.
    assert all(adk[c]["chattiness"][0] == "informational" for c in adk)
    # Per-turn scores, not overall_score (the worst turn, 0.2, here).
    assert adk["weather_then_forecast"]["worst_turn"] == ("failed", 0.6)
    # Turns passing from 0.3 up under a 0.5 threshold: lower-is-better inferred, 0.4 passes.
    assert adk["paris_celsius"]["from_point_three"] == ("passed", 0.4)
    assert adk["scenario_paris"]["from_point_three"] == ("passed", (0.4 * 3 + 0.9) / 4)


def test_the_report_says_why_a_case_failed_on_an_unscored_metric(both):
    assert "tool_trajectory_avg_score was not evaluated" in both["output"]
