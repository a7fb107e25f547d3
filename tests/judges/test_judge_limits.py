"""Bounds on judging through `evalcheck run` (issue 11, item 5): a hanging judge costs at
most the run's judge budget, a metric's deadline or three timed-out requests - never a
pass - and a judge that echoes the API key leaves it in no file and no log line (item 3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .fake_gemini import Reply, error_reply, json_reply

HANGS = Reply(status=200, body=b"{}", delay=30)  # a judge that answers after the test is over
KEY = "AIza-planted-judge-key-0123456789"


def repo_with_judged_case(tmp_path: Path, http_options: dict | None = None, runs: int = 2) -> Path:
    (tmp_path / ".git").mkdir()
    evals = tmp_path / "evals"
    evals.mkdir()
    turn = {"user_content": {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
            "final_response": {"role": "model", "parts": [{"text": "Sunny."}]}}
    (evals / "w.evalset.json").write_text(json.dumps(
        {"eval_set_id": "w", "eval_cases": [{"eval_id": "paris", "conversation": [turn]}]}))
    options = {"num_samples": 1}
    if http_options:
        options["judge_model_config"] = {"http_options": http_options}
    (evals / "test_config.json").write_text(json.dumps(
        {"criteria": {"final_response_match_v2": {"threshold": 0.5, "judge_model_options": options}}}))
    recorded = [{"evalSetId": "w", "evalId": "paris", "run": n, "invocations": [turn]}
                for n in range(1, runs + 1)]
    (tmp_path / "runs.json").write_text(json.dumps({"version": 1, "runs": recorded}))
    return tmp_path


def evalcheck(repo: Path, fake, *args: str, **env_extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "GEMINI_", "EVALCHECK_"))}
    env.update({"GOOGLE_API_KEY": KEY, "EVALCHECK_GEMINI_BASE_URL": fake.url, **env_extra})
    return subprocess.run([sys.executable, "-m", "checker.cli", "run", "evals", "--replay", "runs.json",
                           "--results", "results.json", "--markdown", "report.md", *args],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=120)


def judged_metric(repo: Path) -> tuple[dict, dict]:
    results = json.loads((repo / "results.json").read_text())
    (metric,) = [m for m in results["evalSets"][0]["cases"][0]["metrics"]
                 if m["name"] == "final_response_match_v2"]
    return metric, results["metadata"]["judge"]


def test_the_runs_of_a_case_are_judged_at_once(tmp_path, fake):
    """A metric that awaits a judge runs as a task of its own (checker/scoring/case.py):
    the judge calls of a case's runs overlap, while deterministic metrics need no task."""
    answer = {"reasoning": "same", "verdict": "valid"}
    fake.on(lambda p: True, json_reply(answer, delay=0.5))
    repo = repo_with_judged_case(tmp_path, runs=3)
    recorded = json.loads((repo / "runs.json").read_text())
    for run in recorded["runs"]:  # each run its own answer: three requests, none reused
        run["invocations"][0]["final_response"]["parts"][0]["text"] = f"Sunny ({run['run']})."
    (repo / "runs.json").write_text(json.dumps(recorded))
    done = evalcheck(repo, fake)
    assert done.returncode == 0, done.stderr
    assert len(fake.requests) == 3 and fake.max_in_flight == 3
    assert judged_metric(repo)[0]["status"] == "passed"


FAST_RETRIES = {"timeout": 300, "retry_options": {"attempts": 6, "initial_delay": 0.01, "jitter": 0}}


def test_the_circuit_opens_after_three_timeouts_in_a_row(tmp_path, fake):
    fake.on(lambda p: True, HANGS)
    repo = repo_with_judged_case(tmp_path, FAST_RETRIES, runs=3)
    began = time.monotonic()
    done = evalcheck(repo, fake, "--judge-concurrency", "1")
    took = time.monotonic() - began
    assert done.returncode == 1, done.stderr
    assert took < 15, f"{took:.1f} s"
    assert len(fake.requests) == 3  # then every further call failed at once
    metric, judge = judged_metric(repo)
    assert metric["status"] == "error"
    assert "circuit breaker" in json.dumps(metric) and "circuit breaker" in judge["stopped"]
    assert "EVALCHECK_JUDGE_BREAKER" in done.stdout


@pytest.mark.parametrize("variable, value, reason", [
    ("EVALCHECK_JUDGE_RUN_BUDGET", "1.5", "the run's judge budget of 1.5 s is spent"),
    ("EVALCHECK_JUDGE_METRIC_DEADLINE", "0.5", "the deadline of a metric on one run"),
])
def test_a_hanging_judge_costs_at_most_the_budget_or_deadline(tmp_path, fake, variable, value, reason):
    fake.on(lambda p: True, HANGS)
    repo = repo_with_judged_case(tmp_path)
    began = time.monotonic()
    done = evalcheck(repo, fake, **{variable: value})
    assert time.monotonic() - began < 12  # each sample would otherwise wait 6 x 180 s
    assert done.returncode == 1, done.stderr
    metric, judge = judged_metric(repo)
    assert metric["status"] == "error"
    assert reason in json.dumps(metric) + judge.get("stopped", "")
    assert variable in json.dumps(metric) + judge.get("stopped", "")


@pytest.mark.parametrize("name, value", [("EVALCHECK_JUDGE_BREAKER", "0"),
                                         ("EVALCHECK_JUDGE_RUN_BUDGET", "soon"),
                                         ("EVALCHECK_JUDGE_METRIC_DEADLINE", "inf")])
def test_a_bad_limit_is_bad_input(tmp_path, fake, name, value):
    repo = repo_with_judged_case(tmp_path)
    done = evalcheck(repo, fake, **{name: value})
    assert done.returncode == 2 and name in done.stderr and "Traceback" not in done.stderr


def test_a_judge_echoing_the_key_leaves_it_nowhere(tmp_path, fake):
    fake.on(lambda p: True, error_reply(400, f"API key not valid: {KEY}"))
    repo = repo_with_judged_case(tmp_path)
    done = evalcheck(repo, fake, "--junit", "junit.xml", "--inference-out", "inference.json")
    assert done.returncode == 1, done.stderr
    assert fake.requests[0].headers.get("x-goog-api-key") == KEY  # the key was sent, and echoed
    metric, _ = judged_metric(repo)
    assert metric["status"] == "error" and "***" in json.dumps(metric)
    for name in ("results.json", "report.md", "junit.xml", "inference.json"):
        assert KEY not in (repo / name).read_text(), name
    assert KEY not in done.stdout + done.stderr
