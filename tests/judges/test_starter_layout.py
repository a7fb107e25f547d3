"""Google's starter layout with no flags: a real agent-starter-pack-shaped project (copied
from google/adk-samples, tests/data/real/) keeps its criteria in ``tests/eval/eval_config.json``
and its eval sets in ``tests/eval/evalsets/``; evalcheck applies that file, says so, and
judges the rubrics through the fake Gemini server."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .fake_gemini import rubric_verdicts
from .test_end_to_end import RUBRIC

DATA = Path(__file__).parent.parent / "data" / "real" / "adk-samples" / "long-horizon-harness"


def answer(user: str, text: str) -> dict:
    return {"user_content": {"role": "user", "parts": [{"text": user}]},
            "final_response": {"role": "model", "parts": [{"text": text}]}}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    shutil.copytree(DATA / "tests", tmp_path / "tests")
    runs = [{"evalSetId": "basic_eval", "evalId": "greeting", "run": 1, "invocations": [
                answer("Hello, what can you help me with?", "I can plan trips and check the weather.")]},
            {"evalSetId": "basic_eval", "evalId": "weather_query", "run": 1, "invocations": [
                answer("What's the weather like in San Francisco?", "Sunny, 18 C.")]}]
    (tmp_path / "runs.json").write_text(json.dumps({"version": 1, "runs": runs}))
    return tmp_path



def test_eval_config_json_of_the_starter_layout_applies_with_no_flag(project, fake):
    fake.on(lambda p: RUBRIC in p and "plan trips" in p, rubric_verdicts(
        {"relevance": True, "helpfulness": True, "greeting_conversational_reply": True,
         "greeting_no_tool_calls": True}))
    fake.on(lambda p: RUBRIC in p and "Sunny" in p, rubric_verdicts({"relevance": True, "helpfulness": False}))
    out = evalcheck_at(project, fake)
    assert out.returncode == 1, out.stdout + out.stderr
    results = json.loads((project / "r.json").read_text())
    [eval_set] = results["evalSets"]
    assert eval_set["configPath"] == "tests/eval/eval_config.json"
    assert eval_set["path"] == "tests/eval/evalsets/basic.evalset.json"
    by_case = {c["evalId"]: c for c in eval_set["cases"]}
    metric = "rubric_based_final_response_quality_v1"
    assert [m["name"] for m in by_case["greeting"]["metrics"] if m["status"] != "informational"] == [metric]
    assert by_case["greeting"]["status"] == "passed"
    assert (by_case["weather_query"]["status"], by_case["weather_query"]["metrics"][0]["score"]) == ("failed", 0.5)
    assert "ADK's default criteria" not in out.stderr
    assert "criteria: tests/eval/eval_config.json" in (project / "r.md").read_text().replace("\\_", "_")


def evalcheck_at(project: Path, fake):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "GEMINI_", "EVALCHECK_"))}
    env.update({"GOOGLE_API_KEY": "test-key", "EVALCHECK_GEMINI_BASE_URL": fake.url})
    return subprocess.run([sys.executable, "-m", "checker.cli", "run", ".", "--replay", "runs.json",
                           "--results", "r.json", "--markdown", "r.md"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=120)


def test_without_the_criteria_file_the_default_is_said(project, fake):
    (project / "tests/eval/eval_config.json").rename(project / "tests/eval/eval-config.json")
    out = evalcheck_at(project, fake)
    assert out.returncode == 1  # the cases have no expected response: response_match_score fails
    assert ("evalcheck: warning: no test_config.json beside tests/eval/evalsets/basic.evalset.json: "
            "ADK's default criteria (tool_trajectory_avg_score 1.0, response_match_score 0.8); "
            "tests/eval/eval-config.json is not read: did you mean eval_config.json?") in out.stderr
    report = (project / "r.md").read_text().replace("\\_", "_")
    assert "no test_config.json beside tests/eval/evalsets/basic.evalset.json" in report
    assert "criteria: ADK's default criteria" in report
    assert fake.requests == []
