"""Custom metrics named by dotted path in test_config.json, called the way ADK calls them."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from checker.inputs.criteria import build_config
from checker.scoring.custom_metric import score_custom
from checker.scoring.custom_metric_worker import CustomMetricWorker
from checker.metrics.base import ScoringContext, ScoringServices

from .conftest import invocation, run_input

MODULE = '''
import asyncio

class Status:
    name = "PASSED"

class Item:
    def __init__(self, score):
        self.score = score
        self.eval_status = Status()

class Result:
    def __init__(self, overall, items):
        self.overall_score = overall
        self.per_invocation_results = items
        self.overall_eval_status = Status()

def adk_style(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    assert eval_metric.threshold is None
    assert eval_metric.criterion.threshold == 0.5
    assert conversation_scenario is None and len(expected_invocations) == len(actual_invocations)
    return Result(0.25, [Item(0.0), Item(0.5)])

async def async_dict(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    await asyncio.sleep(0)
    return {"overall_score": 1, "per_invocation_results": [{"score": 1.0}, {"score": 1.0}]}

def plain(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    return 0.75

def per_invocation_only(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    return {"per_invocation_results": [{"score": 0.0}, {"score": 1.0}]}

def boom(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    raise ValueError("the metric broke")

def nothing(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    return None

def not_a_number(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    return {"overall_score": "high"}

def not_evaluated(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    return {"overall_score": None, "overall_eval_status": "NOT_EVALUATED"}

def prints(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    print("noise on stdout", flush=True)
    return 1.0

def exits(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    import os
    os._exit(3)

def hangs(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    import time
    time.sleep(60)

def whoami(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    import os
    return float(os.getpid())

value = 3
'''


@pytest.fixture
def repo(tmp_path: Path, monkeypatch) -> Path:
    (tmp_path / ".git").mkdir()
    package = tmp_path / "my_evals_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "metrics.py").write_text(MODULE)
    (package / "broken.py").write_text("import no_such_module_anywhere\n")
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("my_evals_pkg")]:
        del sys.modules[name]


@pytest.fixture(params=["default", "worker"])
def mode(request) -> str:
    """Each behaviour holds with the worker score_custom makes itself (the command line) and
    with one given (the Action's, as the agent's user: checker/scoring/custom_metric_worker.py)."""
    return request.param


def custom(function: str):
    config = build_config({"criteria": {"mine": 0.5},
                           "custom_metrics": {"mine": {"code_config": {"name": function}}}},
                          None, "test_config.json")
    return config.metrics[0], run_input([invocation("a", "b"), invocation("c", "d")])


def run_custom(function: str, mode: str = "default"):
    configured, run = custom(function)
    before = list(sys.path)
    context = ScoringContext()
    if mode == "worker":
        context.services.custom_metric_worker = CustomMetricWorker(Path.cwd())
    result = asyncio.run(context.scoring(score_custom(configured, run, context)))
    assert sys.path == before  # the repository root was removed again
    return result


def test_adk_calling_convention_and_result_object(repo, mode):
    result = run_custom("my_evals_pkg.metrics.adk_style", mode)
    assert result.error is None
    assert result.score == 0.25
    assert [(i.score, i.details) for i in result.invocations] == [
        (0.0, {"status": "passed"}), (0.5, {"status": "passed"})]


@pytest.mark.parametrize("function, expected", [
    ("async_dict", 1.0), ("plain", 0.75), ("per_invocation_only", 0.5)])
def test_sync_async_dict_and_number_results(repo, function, expected, mode):
    result = run_custom(f"my_evals_pkg.metrics.{function}", mode)
    assert (result.error, result.score) == (None, expected)


@pytest.mark.parametrize("function, message", [
    ("my_evals_pkg.metrics.boom",
     "custom metric 'my_evals_pkg.metrics.boom' raised ValueError: the metric broke"),
    ("my_evals_pkg.metrics.nothing",
     "custom metric 'my_evals_pkg.metrics.nothing' returned None; return an EvaluationResult, "
     "an object with overall_score, or a number"),
    ("my_evals_pkg.metrics.not_a_number", "overall_score must be a number, got str"),
    ("my_evals_pkg.metrics.missing", "module 'my_evals_pkg.metrics' has no 'missing'"),
    ("my_evals_pkg.metrics.value", "custom metric 'my_evals_pkg.metrics.value' is not callable"),
    ("my_evals_pkg.broken.fn", "could not import module 'my_evals_pkg.broken' for custom metric "
                               "function 'my_evals_pkg.broken.fn'"),
    ("nodots", "is not a dotted path"),
])
def test_failures_become_metric_errors(repo, function, message, mode):
    result = run_custom(function, mode)
    assert result.score is None
    assert message in result.error


def test_not_evaluated_status_is_kept(repo, mode):
    result = run_custom("my_evals_pkg.metrics.not_evaluated", mode)
    assert result.score is None and result.error is None
    assert result.not_evaluated_reason == ("custom metric 'my_evals_pkg.metrics.not_evaluated' "
                                           "returned no score (status not_evaluated)")


@pytest.mark.parametrize("mode_", ["default", "worker"])
def test_the_metric_runs_in_another_process_and_its_prints_do_not_break_it(repo, mode_):
    """No code path imports a custom metric into the checker (issue 22: in replay mode the
    metric ran in the checker itself, as root in the Action)."""
    import os

    assert run_custom("my_evals_pkg.metrics.whoami", mode_).score != float(os.getpid())
    assert run_custom("my_evals_pkg.metrics.prints", mode_).score == 1.0
    assert not [m for m in sys.modules if m.startswith("my_evals_pkg")]


def test_a_worker_that_dies_or_hangs_fails_that_metric_and_the_next_gets_a_new_one(repo):
    async def scenario():
        context = ScoringContext(services=ScoringServices(custom_metric_worker=CustomMetricWorker(Path.cwd())))
        exits, run = custom("my_evals_pkg.metrics.exits")
        hangs, _ = custom("my_evals_pkg.metrics.hangs")
        plain, _ = custom("my_evals_pkg.metrics.plain")
        died = await score_custom(exits, run, context)
        with pytest.raises(TimeoutError):  # the metric deadline (score_run) cancels the call
            async with asyncio.timeout(1.0):
                await score_custom(hangs, run, context)
        after = await score_custom(plain, run, context)
        await context.services.custom_metric_worker.aclose()
        return died, after

    died, after = asyncio.run(scenario())
    assert died.score is None and "worker process exited" in died.error
    assert (after.error, after.score) == (None, 0.75)


ADK_WAY = '''
from google.adk.evaluation.eval_case import get_all_tool_calls
from google.adk.evaluation.eval_metrics import EvalStatus
from google.adk.evaluation.evaluator import EvaluationResult, PerInvocationResult

def tool_count(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    per = [PerInvocationResult(actual_invocation=inv, expected_invocation=exp,
                               score=float(len(get_all_tool_calls(inv.intermediate_data))),
                               eval_status=EvalStatus.PASSED)
           for inv, exp in zip(actual_invocations, expected_invocations)]
    return EvaluationResult(overall_score=sum(p.score for p in per) / len(per),
                            overall_eval_status=EvalStatus.PASSED, per_invocation_results=per)
'''


def test_a_metric_written_for_adk_gets_adks_own_invocations(repo, mode):
    """ADK's helpers and result types accept only ADK's models (user audit: 'Unsupported type
    for intermediate_data')."""
    (repo / "my_evals_pkg" / "adk_way.py").write_text(ADK_WAY)
    result = run_custom("my_evals_pkg.adk_way.tool_count", mode)
    assert (result.error, result.score) == (None, 0.0)
    assert [i.details for i in result.invocations] == [{"status": "passed"}] * 2


def test_a_worker_answer_with_an_infinite_score_is_refused(repo):
    """The metric's own process could write a reply line itself: Infinity parses, and must
    not pass a threshold."""
    (repo / "my_evals_pkg" / "forger.py").write_text(
        "import os\n"
        "def forge(eval_metric, actual, expected, scenario):\n"
        "    os.write(3, b'{\"score\": {\"score\": Infinity}}\\n')\n"  # the protocol's fd
        "    return 0.0\n")
    result = run_custom("my_evals_pkg.forger.forge", "worker")
    assert result.score is None and "not a score" in result.error


def test_a_custom_metric_with_a_baseline_and_an_agent_does_not_hang(tmp_path):
    """Adaptive runs (an agent and a baseline) score in the agents' event loop, and started
    the metric worker there; the pidfd child watcher that saw it start was closed before the
    worker was, so closing it waited for its exit forever (Python 3.11, the Action's image)."""
    import json
    import shutil
    import subprocess

    root = Path(__file__).resolve().parents[2]
    shutil.copytree(root / "examples" / "weather", tmp_path / "w")
    ws = tmp_path / "w"
    (ws / ".git").mkdir()
    (ws / "evalmetrics").mkdir()
    (ws / "evalmetrics" / "__init__.py").write_text("")
    (ws / "evalmetrics" / "one.py").write_text("def one(eval_metric, actual, expected, scenario):\n"
                                              "    return 1.0\n")
    config = ws / "agent_evals" / "test_config.json"
    data = json.loads(config.read_text())
    data["criteria"]["one"] = 0.5
    data["custom_metrics"] = {"one": {"code_config": {"name": "evalmetrics.one.one"}}}
    config.write_text(json.dumps(data))
    done = subprocess.run([sys.executable, "-m", "checker.cli", "run", "agent_evals", "--agent-command",
                           f"{sys.executable} {root / 'examples' / 'agents' / 'python_weather' / 'agent.py'}",
                           "--num-runs", "2", "--baseline", "baseline/results.json",
                           "--results", "results.json"],
                          cwd=ws, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "child watcher with pending handlers" not in done.stderr
    results = json.loads((ws / "results.json").read_text())
    assert {m["score"] for s in results["evalSets"] for c in s["cases"] for m in c["metrics"]
            if m["name"] == "one"} == {1.0}
