"""`evalcheck run --replay` with provider/model judges end to end: scores, tokens and cost,
the cache, and the judge's setup errors (a missing or refused key) said once with exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .fake_openai import FakeOpenAI, error, json_answer

KEY = "gsk-fake-0123456789abcdef"
MATCH = "You grade answers given by an AI agent"
RUBRIC = "You review the final answer"
GROQ = "groq/llama-3.3-70b-versatile"


def turn(user: str, answer: str) -> dict:
    return {"user_content": {"role": "user", "parts": [{"text": user}]},
            "final_response": {"role": "model", "parts": [{"text": answer}]}}


def write_repo(root: Path, judge: str = GROQ) -> Path:
    (root / ".git").mkdir()
    evals = root / "evals"
    evals.mkdir()
    cases = [("paris", "Weather in Paris?", "Sunny, 21 degrees."),
             ("rome", "Weather in Rome?", "Rainy, 14 degrees."),
             ("oslo", "Weather in Oslo?", "Snow, -3 degrees.")]
    (evals / "w.evalset.json").write_text(json.dumps({"eval_set_id": "w", "eval_cases": [
        {"eval_id": cid, "conversation": [turn(q, a)]} for cid, q, a in cases]}))
    options = {"judge_model": judge, "num_samples": 3, "judge_model_config": {
        "temperature": 0.0, "http_options": {"retry_options": {"attempts": 2, "initial_delay": 0.01,
                                                               "jitter": 0}}}}
    (evals / "test_config.json").write_text(json.dumps({"criteria": {
        "final_response_match_v2": {"threshold": 0.5, "judge_model_options": options},
        "rubric_based_final_response_quality_v1": {
            "threshold": 1.0, "judge_model_options": {**options, "num_samples": 1},
            "rubrics": [{"rubric_id": "temp", "rubric_content": {"text_property": "Gives a temperature."}}]},
    }}))
    # the agent said the same as the reference in paris and rome, something else in oslo
    said = {"paris": "Sunny, 21 degrees.", "rome": "Rainy and 14 degrees.", "oslo": "I do not know."}
    runs = [{"evalSetId": "w", "evalId": cid, "run": 1, "invocations": [turn(q, said[cid])]}
            for cid, q, _ in cases]
    (root / "runs.json").write_text(json.dumps({"version": 1, "runs": runs}))
    return root


def script(fake: FakeOpenAI) -> None:
    def verdict(valid: bool) -> object:
        return json_answer({"reasoning": "r", "verdict": "valid" if valid else "invalid"},
                           prompt_tokens=50, completion_tokens=5)
    fake.on(lambda r: MATCH in r.prompt and "I do not know." in r.prompt, verdict(False))
    fake.on(lambda r: MATCH in r.prompt, verdict(True))
    fake.on(lambda r: RUBRIC in r.prompt and "I do not know." in r.prompt, json_answer(
        {"verdicts": [{"rubric_id": "temp", "evidence": "", "rationale": "none", "verdict": "no"}]}))
    fake.on(lambda r: RUBRIC in r.prompt, json_answer(
        {"verdicts": [{"rubric_id": "temp", "evidence": "21", "rationale": "has it", "verdict": "yes"}]}))


def evalcheck(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("GOOGLE_", "GEMINI_", "EVALCHECK_", "GROQ_", "OPENAI_", "AZURE_"))}
    return subprocess.run([sys.executable, "-m", "checker.cli", "run", "evals", "--replay", "runs.json",
                           "--results", "r.json", *args], cwd=root, env={**base, **env},
                          capture_output=True, text=True, timeout=180)


def cases(root: Path) -> dict[str, dict[str, dict]]:
    results = json.loads((root / "r.json").read_text())
    return {c["evalId"]: {m["name"]: m for m in c["metrics"] if m["status"] != "informational"}
            for c in results["evalSets"][0]["cases"]}


@pytest.fixture
def fake():
    with FakeOpenAI(KEY) as server:
        yield server


def groq_env(fake: FakeOpenAI, **extra: str) -> dict[str, str]:
    return {"GROQ_API_KEY": KEY, "GROQ_API_BASE": fake.url + "/openai/v1", **extra}


def test_a_groq_judge_scores_every_judge_metric_with_its_tokens_cost_and_cache(tmp_path, fake):
    root = write_repo(tmp_path)
    script(fake)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({GROQ: {"input": 0.59, "output": 0.79}}))
    done = evalcheck(root, groq_env(fake), "--prices", str(prices), "--judge-cache", "cache")
    assert done.returncode == 1, done.stdout + done.stderr  # oslo fails: a verdict, not an error
    found = cases(root)
    assert {c: (m["final_response_match_v2"]["status"], m["final_response_match_v2"]["score"])
            for c, m in found.items()} == {"paris": ("passed", 1.0), "rome": ("passed", 1.0),
                                           "oslo": ("failed", 0.0)}
    rubric = {c: m["rubric_based_final_response_quality_v1"]["score"] for c, m in found.items()}
    assert rubric == {"paris": 1.0, "rome": 1.0, "oslo": 0.0}
    assert found["paris"]["final_response_match_v2"]["details"]["judgeModel"] == GROQ
    # 3 cases x (3 samples + 1 rubric sample), each a separate request, model name stripped
    assert len(fake.requests) == 12 and {r.model for r in fake.requests} == {"llama-3.3-70b-versatile"}
    results = json.loads((root / "r.json").read_text())
    judge = results["summary"]["usage"]["judge"]
    assert judge["models"] == {GROQ: {"input": 50 * 9 + 100 * 3, "output": 5 * 9 + 20 * 3}}
    cost = results["summary"]["usage"]["cost"]
    assert cost["judge"] == pytest.approx((750 * 0.59 + 105 * 0.79) / 1e6, abs=1e-6)
    assert "unpriced" not in cost
    assert KEY not in done.stdout + done.stderr + (root / "r.json").read_text()
    # all cached: no key needed (a proxy's GROQ_API_BASE is no part of the key)
    again = evalcheck(root, {}, "--judge-cache", "cache")
    assert again.returncode == 1, again.stderr
    assert len(fake.requests) == 12 and "judge: 0 calls, 12 cache hits" in again.stdout


def test_a_model_without_a_price_is_said_once(tmp_path, fake):
    root = write_repo(tmp_path)
    script(fake)
    done = evalcheck(root, groq_env(fake), "--markdown", "r.md")
    assert done.returncode == 1, done.stderr
    report = (root / "r.md").read_text().replace("\\_", "_")
    assert report.count(f"no price for {GROQ}") == 1, report
    assert json.loads((root / "r.json").read_text())["summary"]["usage"]["cost"]["unpriced"] == [GROQ]


def test_a_missing_key_is_said_once_and_exits_2(tmp_path, fake):
    root = write_repo(tmp_path)
    done = evalcheck(root, {"GROQ_API_BASE": fake.url + "/openai/v1"})
    assert done.returncode == 2, done.stdout + done.stderr
    out = done.stdout + done.stderr
    assert out.count("GROQ_API_KEY is not set") == 1, out
    assert "evalcheck: error: the judge cannot be used: no judge credentials: GROQ_API_KEY is not set" in done.stderr
    assert "6 judge metrics on 3 cases could not be scored" in done.stderr
    assert "Traceback" not in out and fake.requests == []
    # the results file still says it, metric by metric
    assert all("GROQ_API_KEY is not set" in m["error"] for c in cases(root).values() for m in c.values())


def test_a_refused_key_is_said_once_exits_2_and_is_never_printed(tmp_path, fake):
    root = write_repo(tmp_path)
    wrong = "gsk-wrong-9876543210fedcba"
    done = evalcheck(root, groq_env(fake, GROQ_API_KEY=wrong))
    assert done.returncode == 2, done.stdout + done.stderr
    out = done.stdout + done.stderr
    assert out.count("groq refused the judge's credentials; check GROQ_API_KEY") == 1, out
    assert "HTTP 401" in done.stderr and wrong not in out + (root / "r.json").read_text()


def test_a_judge_refusing_past_its_retries_is_exit_2_naming_the_refusals_not_a_low_score(tmp_path, fake):
    root = write_repo(tmp_path)
    fake.on(lambda r: True, error(429, "Rate limit reached for model", retry_after="0"))
    done = evalcheck(root, groq_env(fake))
    assert done.returncode == 2, done.stdout + done.stderr
    assert ("the judge service refused 12 judge calls until the retries were spent "
            "(429 Too Many Requests x12)") in done.stderr
    assert "6 judge metrics on 3 cases could not be scored: no verdict on them" in done.stderr
    statuses = {m["status"] for c in cases(root).values() for m in c.values()}
    assert statuses == {"error"}  # never failed, never a score of 0
    meta = json.loads((root / "r.json").read_text())["metadata"]["judge"]
    assert meta["refusals"] == {"calls": 12, "codes": {"429 Too Many Requests": 12}}
    assert len(fake.requests) == 24  # 2 attempts each


def test_an_unknown_provider_is_bad_input_before_anything_runs(tmp_path, fake):
    root = write_repo(tmp_path, judge="acme/judge-1")
    done = evalcheck(root, groq_env(fake))
    assert done.returncode == 2
    assert "unknown provider 'acme'; the providers known are: anthropic, azure" in done.stderr
    assert "test_config.json" in done.stderr and fake.requests == []
