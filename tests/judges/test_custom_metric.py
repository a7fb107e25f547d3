"""Custom metrics named by dotted path in test_config.json, called the way ADK calls them."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from checker.config import build_config
from checker.custom_metric import score_custom
from checker.metrics.base import ScoringContext

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


def run_custom(function: str):
    config = build_config({"criteria": {"mine": 0.5},
                           "custom_metrics": {"mine": {"code_config": {"name": function}}}},
                          None, "test_config.json")
    run = run_input([invocation("a", "b"), invocation("c", "d")])
    before = list(sys.path)
    result = asyncio.run(score_custom(config.metrics[0], run, ScoringContext()))
    assert sys.path == before  # the repository root was removed again
    return result


def test_adk_calling_convention_and_result_object(repo):
    result = run_custom("my_evals_pkg.metrics.adk_style")
    assert result.error is None
    assert result.score == 0.25
    assert [(i.score, i.details) for i in result.invocations] == [
        (0.0, {"status": "passed"}), (0.5, {"status": "passed"})]


@pytest.mark.parametrize("function, expected", [
    ("async_dict", 1.0), ("plain", 0.75), ("per_invocation_only", 0.5)])
def test_sync_async_dict_and_number_results(repo, function, expected):
    result = run_custom(f"my_evals_pkg.metrics.{function}")
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
def test_failures_become_metric_errors(repo, function, message):
    result = run_custom(function)
    assert result.score is None
    assert message in result.error


def test_not_evaluated_status_is_kept(repo):
    result = run_custom("my_evals_pkg.metrics.not_evaluated")
    assert result.score is None and result.error is None
    assert result.not_evaluated_reason == ("custom metric 'my_evals_pkg.metrics.not_evaluated' "
                                           "returned no score (status not_evaluated)")
