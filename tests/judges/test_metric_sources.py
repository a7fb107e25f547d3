"""The private copy of custom metrics' sources: the metric's package and every repository
module it imports, copied before any agent runs; the worker imports from the copy only."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from types import SimpleNamespace

from checker.metrics.base import ScoringContext
from checker.scoring.custom_metric import score_custom
from checker.scoring.custom_metric_worker import CustomMetricWorker
from checker.scoring.metric_sources import copy_metric_sources

from .test_custom_metric import custom


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


REPO = {
    "evals/__init__.py": "",
    "evals/metrics.py": (
        "import json, importlib\n"
        "import helpers\n"
        "from shared.text import words\n"
        "from . import local\n"
        "def score(eval_metric, actual, expected, scenario):\n"
        "    return helpers.value() + words() + local.VALUE\n"),
    "evals/dynamic.py": (
        "import importlib\n"
        "FOUND = importlib.import_module('dyn' + 'amic')  # a name no import statement shows\n"
        "def score(eval_metric, actual, expected, scenario):\n"
        "    return FOUND.VALUE\n"),
    "evals/local.py": "VALUE = 0.0\n",
    "helpers.py": "import deep.inner\ndef value():\n    return deep.inner.VALUE\n",
    "deep/__init__.py": "",
    "deep/inner.py": "VALUE = 0.25\n",
    "shared/__init__.py": "",
    "shared/text.py": "def words():\n    return 0.5\n",
    "unrelated/__init__.py": "import evals\n",
    "dynamic.py": "VALUE = 1.0\n",
    "broken_elsewhere.py": "this is not python\n",
}


def _targets(*paths: str):
    metrics = [SimpleNamespace(custom_function_path=p, custom_function_origin=None) for p in paths]
    return [SimpleNamespace(config=SimpleNamespace(metrics=metrics))]


def test_the_copy_holds_the_metric_package_and_what_it_imports_transitively(tmp_path):
    _write(tmp_path, REPO)
    copy = copy_metric_sources(_targets("evals.metrics.score"), tmp_path)
    assert copy is not None
    try:
        files = sorted(str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file())
        assert files == ["deep/__init__.py", "deep/inner.py", "evals/__init__.py", "evals/dynamic.py",
                         "evals/local.py", "evals/metrics.py", "helpers.py",
                         "shared/__init__.py", "shared/text.py"]
    finally:
        shutil.rmtree(copy)


def _score(root: Path, sources: Path, function: str):
    configured, run = custom(function)
    context = ScoringContext()
    context.services.custom_metric_worker = CustomMetricWorker(root, sources=sources)
    return asyncio.run(context.scoring(score_custom(configured, run, context)))


def test_what_the_agent_writes_after_the_copy_does_not_change_the_score(tmp_path):
    _write(tmp_path, REPO)
    copy = copy_metric_sources(_targets("evals.metrics.score", "evals.dynamic.score"), tmp_path)
    assert copy is not None
    try:
        # The agent rewrites every module the metric reads, and adds one it would find first.
        _write(tmp_path, {"deep/inner.py": "VALUE = -100.0\n",
                          "shared/text.py": "def words():\n    return -100.0\n",
                          "helpers.py": "def value():\n    return -100.0\n",
                          "evals/local.py": "VALUE = -100.0\n"})
        assert _score(tmp_path, copy, "evals.metrics.score").score == 0.75
        # The repository root is not on the worker's path: a module the copy does not hold is
        # not read from the working directory, and the error says how to import it.
        dynamic = _score(tmp_path, copy, "evals.dynamic.score")
        assert dynamic.score is None
        assert "No module named 'dynamic'" in (dynamic.error or "")
        assert "plain import statement" in (dynamic.error or "")
    finally:
        shutil.rmtree(copy)
