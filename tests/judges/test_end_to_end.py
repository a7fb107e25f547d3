"""`evalcheck run --replay` end to end with judge metrics, a custom metric and the cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .fake_gemini import error_reply, labels, rubric_verdicts, sentences, verdict

SEGMENT = "Split the text of an AI agent's response into sentences"
LABEL = "You check whether each sentence"
RUBRIC = "You review the final answer"
MATCH = "You grade answers given by an AI agent"


def turn(user: str, answer: str, rubrics: list[dict] | None = None) -> dict:
    out = {"user_content": {"role": "user", "parts": [{"text": user}]},
           "final_response": {"role": "model", "parts": [{"text": answer}]}}
    if rubrics:
        out["rubrics"] = rubrics
    return out


def rubric(rid: str, text: str) -> dict:
    return {"rubric_id": rid, "rubric_content": {"text_property": text},
            "type": "FINAL_RESPONSE_QUALITY"}


CUSTOM = '''
from dataclasses import dataclass

@dataclass
class PerInvocation:
    score: float

@dataclass
class Result:
    overall_score: float
    per_invocation_results: list

def short_answers(eval_metric, actual_invocations, expected_invocations, conversation_scenario):
    assert eval_metric.threshold is None and eval_metric.metric_name == "short_answers"
    limit = eval_metric.criterion.max_words
    scores = [float(len(inv.final_response.parts[0].text.split()) <= limit)
              for inv in actual_invocations]
    return Result(sum(scores) / len(scores), [PerInvocation(s) for s in scores])
'''


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    evals = tmp_path / "evals"
    evals.mkdir()
    (evals / "__init__.py").write_text("")
    (evals / "custom.py").write_text(CUSTOM)
    eval_set = {"eval_set_id": "trip", "eval_cases": [
        {"eval_id": "booking", "conversation": [
            turn("Book a table for two", "Booked a table for two at 8pm.",
                 [rubric("time", "States the booking time.")]),
            turn("Cancel it", "Your booking is cancelled.",
                 [rubric("cancel", "Confirms the cancellation.")])]},
        {"eval_id": "greeting", "conversation": [turn("Hello", "Hello! How can I help?")]},
    ]}
    (evals / "trip.evalset.json").write_text(json.dumps(eval_set))
    (evals / "test_config.json").write_text(json.dumps({
        "criteria": {
            "final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"num_samples": 3}},
            "rubric_based_final_response_quality_v1": {"threshold": 1.0,
                                                       "judge_model_options": {"num_samples": 1}},
            "hallucinations_v1": {"threshold": 0.5, "judge_model_options": {"num_samples": 1}},
            "short_answers": {"threshold": 1.0, "max_words": 6},
        },
        "custom_metrics": {"short_answers": {"code_config": {"name": "evals.custom.short_answers"}}},
    }))
    runs = []
    for n, (first, second) in enumerate([("Booked for 8pm.", "Cancelled."),
                                         ("Booked for 8pm.", "Okay, your booking is now cancelled for good.")], 1):
        runs.append({"evalSetId": "trip", "evalId": "booking", "run": n, "invocations": [
            turn("Book a table for two", first), turn("Cancel it", second)]})
        runs.append({"evalSetId": "trip", "evalId": "greeting", "run": n,
                     "invocations": [turn("Hello", "Hi there!")]})
    (tmp_path / "runs.json").write_text(json.dumps({"version": 1, "runs": runs}))
    return tmp_path


def script(fake) -> None:
    fake.on(lambda p: MATCH in p and "Booked for 8pm." in p, verdict(True))
    fake.on(lambda p: MATCH in p and '"Cancelled."' in p, verdict(True), verdict(False), verdict(False))
    fake.on(lambda p: MATCH in p and "cancelled for good" in p, verdict(True))
    fake.on(lambda p: MATCH in p and "Hi there!" in p, verdict(True))
    fake.on(lambda p: RUBRIC in p and "Booked for 8pm." in p, rubric_verdicts({"time": True}))
    fake.on(lambda p: RUBRIC in p and "cancelled" in p.lower(), rubric_verdicts({"cancel": True}))
    fake.on(lambda p: SEGMENT in p, sentences(["One sentence."]))
    fake.on(lambda p: LABEL in p and "Hi there!" in p, labels(["not_applicable"]))
    fake.on(lambda p: LABEL in p, labels(["supported"]))


def evalcheck(repo: Path, fake, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GOOGLE_", "GEMINI_", "EVALCHECK_"))}
    env.update({"GOOGLE_API_KEY": "test-key", "EVALCHECK_GEMINI_BASE_URL": fake.url})
    return subprocess.run([sys.executable, "-m", "checker.cli", "run", "evals", "--replay",
                           "runs.json", *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=120)


def metric(results: dict, case: str, name: str) -> dict:
    [found] = [c for c in results["evalSets"][0]["cases"] if c["evalId"] == case]
    return {m["name"]: m for m in found["metrics"]}[name]


def test_replay_with_judges_twice_uses_the_cache_the_second_time(repo, fake):
    script(fake)
    first = evalcheck(repo, fake, "--judge-cache", "cache", "--results", "r1.json")
    assert first.returncode == 1, first.stderr
    r1 = json.loads((repo / "r1.json").read_text())

    frm = metric(r1, "booking", "final_response_match_v2")
    # run 1: turn 1 valid (3/3), turn 2 "Cancelled." 1 valid 2 invalid -> invalid; run 2: both valid
    assert (frm["runs"], frm["score"], frm["status"]) == ([0.5, 1.0], 0.75, "passed")
    rubrics = metric(r1, "booking", "rubric_based_final_response_quality_v1")
    assert (rubrics["runs"], rubrics["status"]) == ([1.0, 1.0], "passed")
    assert [[r["rubricId"] for r in inv["rubrics"]] for inv in rubrics["details"]["invocations"]] == [
        ["time"], ["cancel"]]
    assert metric(r1, "greeting", "hallucinations_v1")["score"] == 1.0
    custom = metric(r1, "booking", "short_answers")
    assert (custom["runs"], custom["status"]) == ([1.0, 0.5], "failed")
    assert metric(r1, "greeting", "short_answers")["status"] == "passed"
    # The greeting has no rubric: that metric is not evaluated, which fails the case, as
    # google-adk's AgentEvaluator reports it ("Rubrics are required.", then "was not evaluated").
    assert metric(r1, "greeting", "rubric_based_final_response_quality_v1")["status"] == "not_evaluated"
    assert [c["status"] for c in r1["evalSets"][0]["cases"]] == ["failed", "failed"]

    judge = r1["metadata"]["judge"]
    calls = len(fake.requests)
    assert judge["calls"] == calls > 0
    assert judge["cacheHits"] == 0
    # identical turns across the two runs ("Booked for 8pm.", the greeting) are asked once
    assert judge["reusedInRun"] > 0
    assert judge["samples"] == judge["cacheMisses"] + judge["reusedInRun"]
    assert (f"judge: {calls} calls, {judge['cacheHits']} cache hits, {judge['reusedInRun']} identical "
            f"requests not sent again, {judge['tokens']:,} tokens") in first.stdout

    second = evalcheck(repo, fake, "--judge-cache", "cache", "--results", "r2.json")
    assert second.returncode == 1, second.stderr
    assert len(fake.requests) == calls  # no judge call at all
    r2 = json.loads((repo / "r2.json").read_text())
    assert r2["metadata"]["judge"]["calls"] == 0
    assert r2["metadata"]["judge"]["cacheHits"] == judge["cacheMisses"]
    assert "judge: 0 calls" in second.stdout
    # The fake's usage counts (100 prompt, 20 output tokens an answer) are the judge tokens,
    # each run's sum is its case's, the cases' sum the summary's; a cached answer costs none.
    usage = r1["summary"]["usage"]["judge"]
    assert (usage["input"], usage["output"]) == (100 * calls, 20 * calls)
    assert usage["models"] == {"gemini-2.5-flash": {"input": 100 * calls, "output": 20 * calls}}
    cases = r1["evalSets"][0]["cases"]
    assert sum(c["usage"]["judge"]["input"] for c in cases) == 100 * calls
    for c in cases:  # a run whose every request was its twin's in the other run used none
        assert sum(r.get("usage", {}).get("judge", {}).get("output", 0) for r in c["runs"]) \
            == c["usage"]["judge"]["output"]
    assert any("usage" not in r for c in cases for r in c["runs"])
    assert "usage" not in r2["summary"]
    for r in (r1, r2):
        r.pop("metadata")
        r["summary"].pop("usage", None)
        for c in r["evalSets"][0]["cases"]:
            c.pop("usage", None)
            for run in c["runs"]:
                run.pop("usage", None)
    assert r1 == r2


def test_cache_hits_need_no_credentials(repo, fake):
    script(fake)
    assert evalcheck(repo, fake, "--judge-cache", "cache").returncode == 1
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GOOGLE_", "GEMINI_", "EVALCHECK_"))}
    again = subprocess.run([sys.executable, "-m", "checker.cli", "run", "evals", "--replay",
                            "runs.json", "--judge-cache", "cache", "--results", "r.json"],
                           cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    results = json.loads((repo / "r.json").read_text())
    assert metric(results, "booking", "final_response_match_v2")["status"] == "passed", again.stdout


def test_judge_outage_errors_the_judge_metrics_and_the_run_goes_on(repo, fake):
    fake.on(lambda p: True, error_reply(503, "overloaded"))
    config = json.loads((repo / "evals" / "test_config.json").read_text())
    for name in ("final_response_match_v2", "rubric_based_final_response_quality_v1", "hallucinations_v1"):
        config["criteria"][name]["judge_model_options"]["judge_model_config"] = {
            "http_options": {"retry_options": {"attempts": 2, "initial_delay": 0.01, "jitter": 0}}}
    (repo / "evals" / "test_config.json").write_text(json.dumps(config))
    done = evalcheck(repo, fake, "--results", "r.json")
    # No verdict from the judge: exit 2 naming its refusals, not a failed gate (issue 38.3)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "evalcheck: error: the judge service refused" in done.stderr
    assert "(503 UNAVAILABLE x" in done.stderr and "no verdict on them" in done.stderr
    results = json.loads((repo / "r.json").read_text())
    for case in ("booking", "greeting"):
        frm = metric(results, case, "final_response_match_v2")
        assert frm["status"] == "error"
        assert "HTTP 503 UNAVAILABLE: overloaded" in frm["error"]
    assert metric(results, "greeting", "short_answers")["status"] == "passed"
    assert [c["status"] for c in results["evalSets"][0]["cases"]] == ["failed", "error"]
    assert results["metadata"]["judge"]["calls"] == len(fake.requests)


def test_bad_judge_config_is_bad_input(repo, fake):
    config = {"criteria": {"final_response_match_v2": {
        "threshold": 0.5, "judge_model_options": {"judge_model_config": {"temprature": 0}}}}}
    (repo / "evals" / "test_config.json").write_text(json.dumps(config))
    done = evalcheck(repo, fake)
    assert done.returncode == 2
    assert "test_config.json" in done.stderr and "temprature" in done.stderr
    assert fake.requests == []
