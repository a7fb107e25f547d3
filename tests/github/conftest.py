"""Fixtures for the GitHub publishing tests: a fake API server and realistic results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from checker.models.results import Results
from fake_github import FakeGitHub

HOSTILE = ("Sure! <script>alert(1)</script> <img src=x onerror=alert(2)> ping @octocat and "
           "@github/security | col | ``` closed? </details> [click](javascript:alert(3)) "
           "::error::injected \x1b[31mred\x1b[0m")


def _metric(name: str, threshold: float | None, runs: list[float | None], status: str,
            details: dict[str, Any] | None = None, error: str | None = None) -> dict[str, Any]:
    scored = [r for r in runs if r is not None]
    return {"name": name, "threshold": threshold, "score": sum(scored) / len(scored) if scored else None,
            "status": status, "runs": runs, "details": details or {}, "error": error}


def realistic_results() -> dict[str, Any]:
    """A failing PR run: a wrong trajectory, an F1 miss, a weak answer with hostile agent
    text, an errored run with a stderr tail, and passing cases around them."""
    trajectory_fail = _metric("tool_trajectory_avg_score", 1.0, [1.0, 0.0], "failed", {
        "matchType": "IN_ORDER", "ignoreArgs": False, "worstRun": 2,
        "invocations": [{"score": 0.0,
                         "expected": [{"name": "get_weather", "args": {"city": "Rome"}},
                                      {"name": "get_weather", "args": {"city": "Oslo"}},
                                      {"name": "compare", "args": {"a": "Rome", "b": "Oslo"}}],
                         "actual": [{"name": "get_weather", "args": {"city": "Rome"}},
                                    {"name": "get_weather", "args": {"city": "Olso | `x`"}}],
                         "firstDivergence": 1}]})
    f1_fail = _metric("tool_trajectory_f1", 0.8, [0.5, 0.5], "failed", {
        "matchMode": "name_and_args", "ordered": True, "worstRun": 1,
        "invocations": [{"score": 0.5, "precision": 0.5, "recall": 0.5, "matched": 1,
                         "actualCount": 2, "expectedCount": 2,
                         "missing": [{"index": 1, "name": "book_table", "args": {"people": 4}}],
                         "missingCount": 1,
                         "unexpected": [{"index": 0, "name": "search_web", "args": {"q": "@octocat <b>"}}],
                         "unexpectedCount": 1}]})
    response_fail = _metric("response_match_score", 0.6, [0.2, 0.3], "failed", {
        "worstRun": 1, "invocations": [{"score": 0.2, "expected": "Rome is warmer: 24 C against 9 C in Oslo.",
                                        "actual": HOSTILE + "\n```\n# heading\n````", "precision": 0.1,
                                        "recall": 0.3}]})
    ok = lambda name, thr: _metric(name, thr, [1.0, 1.0], "passed", {"worstRun": 1, "invocations": []})  # noqa: E731
    info = _metric("tool_call_count_v1", None, [2.0, 2.0], "informational")
    return {
        "version": 1, "passed": False,
        "summary": {"evalSets": 2, "cases": 5, "passed": 2, "failed": 2, "errored": 1, "notEvaluated": 0},
        "evalSets": [
            {"evalSetId": "weather", "path": "agents/weather/weather.evalset.json",
             "configPath": "agents/weather/test_config.json",
             "cases": [
                 {"evalId": "paris_today", "status": "passed", "line": 7,
                  "runs": [{"run": 1, "status": "passed"}, {"run": 2, "status": "passed"}],
                  "metrics": [ok("tool_trajectory_avg_score", 1.0),
                              _metric("response_match_score", 0.6, [0.94, 0.86], "passed"), info]},
                 {"evalId": "compare_cities", "status": "failed", "line": 22,
                  "runs": [{"run": 1, "status": "passed"}, {"run": 2, "status": "failed"}],
                  "metrics": [trajectory_fail, response_fail, info]},
                 {"evalId": "storm_warning", "status": "error", "line": 41,
                  "runs": [{"run": 1, "status": "passed"},
                           {"run": 2, "status": "error", "error": "agent exited with status 1 before answering turn 1",
                            "stderrTail": "Traceback (most recent call last):\n  File \"agent.py\", line 3\n"
                                          "KeyError: 'OPENWEATHER_KEY' @octocat </details>"}],
                  "metrics": [_metric("tool_trajectory_avg_score", 1.0, [1.0, None], "passed"),
                              _metric("response_match_score", 0.6, [0.9, None], "passed")]},
             ]},
            {"evalSetId": "booking", "path": "agents/booking/booking.evalset.json",
             "configPath": None,
             "cases": [
                 {"evalId": "table_for_four", "status": "failed", "line": 5,
                  "runs": [{"run": 1, "status": "failed"}, {"run": 2, "status": "failed"}],
                  "metrics": [f1_fail]},
                 {"evalId": "cancel", "status": "passed", "line": 30,
                  "runs": [{"run": 1, "status": "passed"}, {"run": 2, "status": "passed"}],
                  "metrics": [_metric("tool_trajectory_f1", 0.8, [1.0, 0.9], "passed")]},
             ]},
        ],
    }


@pytest.fixture
def results() -> Results:
    return Results.model_validate(realistic_results())


@pytest.fixture
def fake():
    with FakeGitHub() as server:
        yield server
        assert server.violations == [], "\n".join(server.violations)


def pr_event(number: int = 7, head_sha: str = "a" * 40, fork: bool = False,
             repository: str = "octo/agents") -> dict[str, Any]:
    head_repo = "someone/agents" if fork else repository
    return {"action": "synchronize", "number": number,
            "pull_request": {"number": number, "head": {"sha": head_sha, "repo": {"full_name": head_repo}},
                             "base": {"sha": "b" * 40, "repo": {"full_name": repository}}},
            "repository": {"full_name": repository}}


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path
