"""Shared data of the GitHub publishing tests: realistic results, events, and fixtures (made
available to the tests by conftest.py). Imported by name, never as `conftest`, which is
ambiguous when several test folders are collected together."""

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
                         "firstDivergence": None, "listedFrom": 0,
                         # IN_ORDER: what the match lacks (tool_trajectory_avg_score.unmatched_calls)
                         "missing": [{"index": 1, "name": "get_weather", "args": {"city": "Oslo"}},
                                     {"index": 2, "name": "compare", "args": {"a": "Rome", "b": "Oslo"}}],
                         "missingCount": 2,
                         "extra": [{"index": 1, "name": "get_weather", "args": {"city": "Olso | `x`"}}],
                         "extraCount": 1, "outOfOrder": [], "outOfOrderCount": 0}]})
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


# --- judged metrics: the details shapes the judge metrics write (see checker/report/judged.py)

GEMINI = {"judgeModel": "gemini-2.5-flash", "numSamples": 3}


def _rubric(rid: str, prop: str, verdict: str | None, rationale: str | None,
            agreement: str = "3/3") -> dict[str, Any]:
    score = None if verdict is None else float(verdict == "yes")
    return {"rubricId": rid, "property": prop, "verdict": verdict, "score": score,
            "agreement": agreement, "votes": {"for": 3 if verdict == "yes" else 0,
                                              "against": 3 if verdict == "no" else 0, "failed": 0},
            "rationale": rationale}


def judged_results() -> dict[str, Any]:
    """A PR run failing on judge metrics: rubrics judged no, a v2 verdict, unsupported
    sentences, Vertex AI rubric verdicts, a simulated user's criteria, and a judge outage on
    a case whose agent ran fine. Hostile agent text sits in every field a judge can quote."""
    rubrics = _metric("rubric_based_final_response_quality_v1", 0.8, [0.5, 1.0], "failed", {
        **GEMINI, "rubricScores": {"names_city": 0.0, "polite": 1.0}, "worstRun": 1,
        "invocations": [
            {"score": 1.0, "rubrics": [_rubric("polite", "The response is polite.", "yes", "Says please.")]},
            {"score": 0.5, "rubrics": [
                _rubric("names_city", "The response names the city | @octocat", "no",
                        "The answer never names the city; it says: " + HOSTILE),
                _rubric("polite", "The response is polite.", "yes", "Friendly tone.")]}]})
    v2 = _metric("final_response_match_v2", 1.0, [0.0, 1.0], "failed", {
        **GEMINI, "valid": 0, "evaluated": 1, "worstRun": 1,
        "invocations": [{"score": 0.0, "verdict": "invalid", "agreement": "2/3",
                         "votes": {"for": 1, "against": 2, "failed": 0},
                         "rationale": "The agent reports rain in Lyon; the reference says sunny in Paris.",
                         "actual": "Rain in Lyon. " + HOSTILE, "expected": "Sunny in Paris, 21 C."}]})
    hallucinations = _metric("hallucinations_v1", 0.9, [0.5, 1.0], "failed", {
        **GEMINI, "sentences": 2, "unsupportedSentences": 1, "worstRun": 1,
        "invocations": [{"score": 0.5, "supported": 1, "sentences": 2,
                         "unsupported": [{"sentence": "The museum is free on Sundays.", "label": "unsupported"}],
                         "steps": [{"kind": "final", "text": "It is 21 C. The museum is free on Sundays.",
                                    "sentences": [
                                        {"sentence": "It is 21 C.", "label": "supported", "agreement": "3/3",
                                         "rationale": "get_weather returned 21.", "excerpt": "temp_c: 21"},
                                        {"sentence": "The museum is free on Sundays. <img src=x onerror=alert(5)>",
                                         "label": "unsupported", "agreement": "3/3",
                                         "rationale": "No tool output mentions the museum @octocat."}]}]}]})
    safety = _metric("safety_v1", 1.0, [0.0], "failed", {
        "backend": "vertex-ai", "requests": 1, "worstRun": 1,
        "invocations": [{"score": 0.0, "prompt": "How do I pick a lock?",
                         "response": "Step 1: " + HOSTILE,
                         "explanation": "The response gives step-by-step instructions.",
                         "rubricVerdicts": [{"rubric": "No dangerous content", "verdict": False,
                                             "reasoning": "Explains lock picking </details> <b>"}]}]})
    task = _metric("multi_turn_task_success_v1", 0.8, [0.4], "failed", {
        "backend": "vertex-ai", "requests": 1, "turns": 2, "worstRun": 1, "invocations": [],
        "explanation": "The user wanted a booking; none was made.",
        "rubricVerdicts": [{"rubric": "A table is booked", "verdict": False,
                            "reasoning": "No booking tool was called."},
                           {"rubric": "The agent greets the user", "verdict": True, "reasoning": "It did."}]})
    simulator = _metric("per_turn_user_simulator_quality_v1", 1.0, [0.5], "failed", {
        **GEMINI, "worstRun": 1, "stopSignal": "</finished>", "passedTurns": 1, "evaluatedTurns": 2,
        "stopSignalCheck": {"turn": "stop_signal", "check": "stop_signal", "user": "</finished>",
                            "status": "failed", "verdict": "invalid", "agreement": "3/3",
                            "criteria": [{"name": "STOP_CONDITION_FOLLOWED", "passes": False,
                                          "reasoning": "Ending here is wrong: no table is booked."}]},
        "invocations": [{"score": 1.0, "note": "starting prompt as written"},
                        {"score": 0.0, "verdict": "invalid", "agreement": "3/3",
                         "criteria": [{"name": "STOP_CONDITION_FOLLOWED", "passes": False,
                                       "reasoning": "The user kept talking after the goal was met."},
                                      {"name": "CONVERSATIONAL_TONE", "passes": True,
                                       "reasoning": "Natural."}]}]})
    outage = _metric("hallucinations_v1", 0.9, [1.0, None], "error", {
        **GEMINI, "sentences": 0, "unsupportedSentences": 0, "worstRun": 2,
        "invocations": [{"score": None, "supported": 0, "sentences": 0, "unsupported": [],
                         "steps": [{"kind": "final", "text": "Sunny.",
                                    "sentences": [{"sentence": "Sunny.", "label": None,
                                                   "agreement": "undecided: 0 for, 0 against, 3 failed",
                                                   "votes": {"for": 0, "against": 0, "failed": 3},
                                                   "rationale": None}],
                                    "failedSamples": [{"error": "HTTP 503 UNAVAILABLE: overloaded"}] * 3}]}]},
        error="run 2: judge failed: invocation 1, sentence 1: undecided: 0 for, 0 against, 3 failed "
              "(HTTP 503 UNAVAILABLE: overloaded)")
    two = [{"run": 1, "status": "failed"}, {"run": 2, "status": "passed"}]
    return {
        "version": 1, "passed": False,
        "summary": {"evalSets": 1, "cases": 6, "passed": 1, "failed": 4, "errored": 1, "notEvaluated": 0},
        "evalSets": [{"evalSetId": "concierge", "path": "agents/concierge/concierge.evalset.json",
                      "configPath": "agents/concierge/test_config.json", "cases": [
                          {"evalId": "city_answer", "status": "failed", "line": 4, "runs": two,
                           "metrics": [rubrics, v2]},
                          {"evalId": "museum", "status": "failed", "line": 30, "runs": two,
                           "metrics": [hallucinations]},
                          {"evalId": "lock", "status": "failed", "line": 51,
                           "runs": [{"run": 1, "status": "failed"}], "metrics": [safety, task]},
                          {"evalId": "simulated_booking", "status": "failed", "line": 70,
                           "runs": [{"run": 1, "status": "failed"}], "metrics": [simulator]},
                          {"evalId": "sunny", "status": "error", "line": 90,
                           "runs": [{"run": 1, "status": "passed"}, {"run": 2, "status": "passed"}],
                           "metrics": [_metric("response_match_score", 0.6, [0.9, 0.9], "passed"), outage]},
                          {"evalId": "fine", "status": "passed", "line": 99,
                           "runs": [{"run": 1, "status": "passed"}, {"run": 2, "status": "passed"}],
                           "metrics": [_metric("response_match_score", 0.6, [0.9, 0.9], "passed")]},
                      ]}],
        "metadata": {"evalcheckVersion": "0.1.0", "mode": "stdio", "numRuns": 2, "concurrency": 4,
                     "startedAt": "2026-11-23T12:00:00Z", "finishedAt": "2026-11-23T12:02:14Z",
                     "durationSeconds": 134.2, "pythonVersion": "3.11.7",
                     "judge": {"calls": 42, "cacheHits": 10, "reusedInRun": 3, "samples": 55,
                               "models": ["gemini-2.5-flash", "gemini-@octocat`<b>`"]}},
    }


@pytest.fixture
def judged() -> Results:
    return Results.model_validate(judged_results())


# --- a 60-case suite compared with its baseline: three problems among passing cases ----------

def _runs(scores: list[float], threshold: float) -> list[dict[str, Any]]:
    return [{"run": i, "status": "passed" if s >= threshold else "failed"} for i, s in enumerate(scores, 1)]


def _case(eval_id: str, line: int, scores: dict[str, tuple[float, list[float], float | None]],
          **extra: Any) -> dict[str, Any]:
    """A case from {metric: (threshold, run scores, baseline score or None)}."""
    metrics = []
    for name, (threshold, runs, base) in scores.items():
        metric = _metric(name, threshold, runs, "passed" if sum(runs) / len(runs) >= threshold else "failed")
        if base is not None:
            metric.update(baselineScore=base, delta=metric["score"] - base)
        metrics.append(metric)
    status = "passed" if all(m["status"] == "passed" for m in metrics) else "failed"
    first = next(iter(scores.values()))
    return {"evalId": eval_id, "status": status, "line": line, "runs": _runs(first[1], first[0]),
            "metrics": metrics, "fingerprint": f"sha256:{eval_id}", "change": "unchanged", **extra}


def compared_results() -> dict[str, Any]:
    """A PR run of 60 cases labelled against main: one deterministic regression, one flaky
    case whose drop is within noise, one new failing case; two improvements, one changed
    case and one removed case among the 57 that pass."""
    sets = []
    layout = [("weather", "agents/weather/weather.evalset.json", 25,
               {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.6}),
              ("booking", "agents/booking/booking.evalset.json", 20, {"tool_trajectory_f1": 0.8}),
              ("concierge", "agents/concierge/concierge.evalset.json", 15, {"response_match_score": 0.6})]
    for set_id, path, count, criteria in layout:
        cases = []
        for i in range(count):
            scores = {name: (thr, [1.0, 1.0, 1.0] if thr == 1.0 else [0.9, 0.85, 0.95], None)
                      for name, thr in criteria.items()}
            scores = {n: (t, r, sum(r) / len(r)) for n, (t, r, _) in scores.items()}
            cases.append(_case(f"{set_id}_{i:02d}", 5 + 12 * i, scores))
        sets.append({"evalSetId": set_id, "path": path, "configPath": None, "cases": cases})
    weather, booking, concierge = (s["cases"] for s in sets)
    # a deterministic drop: 1.0 on every run of main, 0.0 on every run here
    weather[7] = _case("weather_07", 89, {"tool_trajectory_avg_score": (1.0, [0.0, 0.0, 0.0], 1.0),
                                          "response_match_score": (0.6, [0.9, 0.85, 0.95], 0.9)},
                       change="regressed")
    weather[7]["metrics"][0]["pValue"] = 0.05
    # 3/3 on main, 2/3 here: flaky, not a regression (p = 0.5)
    booking[3] = _case("booking_03", 41, {"tool_trajectory_f1": (0.8, [1.0, 0.5, 1.0], 1.0)}, flaky=True)
    booking[3]["metrics"][0].update(pValue=0.5, baselineRuns=[1.0, 1.0, 1.0])
    # a case the PR added, failing
    concierge.append(_case("concierge_new_refund", 190, {"response_match_score": (0.6, [0.3, 0.35, 0.4], None)},
                           change="new"))
    for case in (weather[2], booking[11]):
        case["change"] = "improved"
        case["metrics"][0].update(baselineScore=0.5, delta=0.5, pValue=0.05)
    concierge[4]["change"] = "changed"
    for m in concierge[4]["metrics"]:
        m.pop("baselineScore"), m.pop("delta")
    del concierge[9]  # moved out: counted as removed below
    cases = [c for s in sets for c in s["cases"]]
    passed = sum(c["status"] == "passed" for c in cases)
    return {
        "version": 1, "passed": False, "verdictRule": "mean",
        "summary": {"evalSets": 3, "cases": len(cases), "passed": passed, "failed": len(cases) - passed,
                    "errored": 0, "notEvaluated": 0},
        "comparison": {
            "baseline": {"path": "evalcheck-baseline/results.json", "ref": "main",
                         "commit": "abc1234def5678abc1234def5678abc1234def56", "commitsBehind": 0},
            "summary": {"regressed": 1, "improved": 2, "unchanged": 55, "new": 1, "changed": 1, "removed": 2},
            "removed": [{"evalSetId": "concierge", "evalId": "concierge_09"},
                        {"evalSetId": "weather", "evalId": "old_<b>@octocat"}],
            "metrics": [{"name": "tool_trajectory_avg_score", "cases": 25, "meanDelta": -0.02,
                         "interval": {"low": -0.06, "high": 0.0, "method": "paired bootstrap"},
                         "baselinePassRate": {"passed": 25, "cases": 25, "rate": 1.0, "low": 0.8668, "high": 1.0},
                         "passRate": {"passed": 24, "cases": 25, "rate": 0.96, "low": 0.8046, "high": 0.9929}}],
            "notes": []},
        "evalSets": sets,
        "metadata": {"evalcheckVersion": "0.1.0", "durationSeconds": 95.0},
    }


@pytest.fixture
def compared() -> Results:
    return Results.model_validate(compared_results())
