"""A real repository whose eval files name a Groq judge (issue 41): vksundararajan/cross-check's
eval files, unchanged (tests/data/real/cross-check/SOURCE.md), run whole with ``evalcheck run .``
as tests/judges/test_real_checkouts.py runs the other real checkouts. A scripted stdio agent
stands in for its phishing classifier (its own Groq models are not what is under test); the
judge ``groq/llama-3.3-70b-versatile`` is answered by the fake OpenAI-compatible server on
127.0.0.1 through ``GROQ_API_BASE``, as LiteLLM reads it. The agent misses the phishing page
and skips set_model_response there, so the judge's scripted verdicts give one case of each
metric passing, one failing and one at the threshold."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from .fake_openai import FakeOpenAI, json_answer
from .test_real_checkouts import adk_loads

DATA = Path(__file__).parent.parent / "data" / "real" / "cross-check"
CONFIG = "eval/data/test_config.json"
LEGIT, PHISH = "eval/data/legitimate.evalset.json", "eval/data/phishing.evalset.json"
JUDGE = "groq/llama-3.3-70b-versatile"
KEY = "gsk-fake-cross-check-0123456789"
MATCH = "You grade answers given by an AI agent"
TOOL_USE = "You review how an AI agent used its tools"
JUDGED = ("final_response_match_v2", "rubric_based_tool_use_quality_v1")
GITHUB, MCAFEE = "vksundararajan.github.io", "testingmcafeesites.com"  # each case's user message
# A classifier that calls every page LEGITIMATE; on the phishing page it ends the debate
# (exit_loop) but never gives its structured verdict (set_model_response).
AGENT = f"""import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "user":
        url = m["content"]["parts"][0]["text"]
        tools = [{{"name": "exit_loop", "args": {{}}}}]
        if {GITHUB!r} in url:
            tools.append({{"name": "set_model_response",
                          "args": {{"final_verdict": "LEGITIMATE", "reasoning": "a personal site"}}}})
        print(json.dumps({{"type": "response", "invocationId": m["invocationId"],
                          "finalResponse": "LEGITIMATE", "toolUses": tools}}), flush=True)
"""


def script(fake: FakeOpenAI) -> None:
    """The judge's answers, by case: only the phishing page's answer is wrong, and only its
    structured_output rubric unmet. A prompt of neither case is answered with HTTP 400."""
    def verdict(valid: bool):
        return json_answer({"reasoning": "compared", "verdict": "valid" if valid else "invalid"})

    def rubrics(structured: bool):
        return json_answer({"verdicts": [
            {"rubric_id": "consensus_mechanics", "evidence": "exit_loop", "rationale": "called",
             "verdict": "yes"},
            {"rubric_id": "structured_output", "evidence": "", "rationale": "checked",
             "verdict": "yes" if structured else "no"}]})

    for url, right in ((GITHUB, True), (MCAFEE, False)):
        fake.on(lambda r, u=url: MATCH in r.prompt and u in r.prompt, verdict(right))
        fake.on(lambda r, u=url: TOOL_USE in r.prompt and u in r.prompt, rubrics(right))


def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "cross-check"
    shutil.copytree(DATA, root, ignore=shutil.ignore_patterns("SOURCE.md", "LICENSE"))
    (root / ".git").mkdir()
    (tmp_path / "agent.py").write_text(AGENT)
    return root


def run(root: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("GOOGLE_", "GEMINI_", "EVALCHECK_", "GROQ_", "OPENAI_"))}
    agent = f"{sys.executable} {root.parent / 'agent.py'}"
    return subprocess.run([sys.executable, "-m", "checker.cli", "run", ".", "--agent-command", agent,
                           "--num-runs", "1", "--results", "r.json"],
                          cwd=root, env={**base, **env}, capture_output=True, text=True, timeout=300)


def expected_calls() -> int:
    """ADK's judge calls for these files: a separate call per sample, per invocation, per
    judge metric (one prompt holds all of a turn's rubrics), read from the files themselves."""
    criteria = json.loads((DATA / CONFIG).read_text())["criteria"]
    samples = sum(criteria[name]["judge_model_options"]["num_samples"] for name in JUDGED)
    turns = sum(len(case["conversation"]) for path in (LEGIT, PHISH)
                for case in json.loads((DATA / path).read_text())["eval_cases"])
    return turns * samples


@pytest.fixture
def fake():
    with FakeOpenAI(KEY) as server:
        yield server


def test_the_groq_judged_eval_files_are_evaluated_whole_with_the_fake_provider(tmp_path, fake):
    root = checkout(tmp_path)
    script(fake)
    out = run(root, {"GROQ_API_KEY": KEY, "GROQ_API_BASE": fake.url + "/openai/v1"})
    assert out.returncode == 1, out.stdout + out.stderr  # the phishing page missed: a verdict
    results = json.loads((root / "r.json").read_text())
    assert results.get("fileErrors", []) == [] and "evalcheck: error" not in out.stderr
    found = {s["path"]: s for s in results["evalSets"]}
    assert sorted(found) == [LEGIT, PHISH]
    scores = {}
    for path, eval_set in found.items():
        assert eval_set["configPath"] == CONFIG
        (case,) = eval_set["cases"]
        metrics = {m["name"]: m for m in case["metrics"] if m["status"] != "informational"}
        assert sorted(metrics) == sorted(JUDGED), path
        assert all(metrics[n]["details"]["judgeModel"] == JUDGE for n in JUDGED)
        scores[path] = {n: (metrics[n]["status"], metrics[n]["score"]) for n in JUDGED}
    assert scores == {
        LEGIT: {"final_response_match_v2": ("passed", 1.0), "rubric_based_tool_use_quality_v1": ("passed", 1.0)},
        # one of two rubrics met: 0.5, at the file's threshold of 0.5, passes (as in ADK)
        PHISH: {"final_response_match_v2": ("failed", 0.0), "rubric_based_tool_use_quality_v1": ("passed", 0.5)}}
    # what Groq would have been sent: its path, the model without LiteLLM's prefix, the key
    assert len(fake.requests) == expected_calls() == 4
    assert {r.path for r in fake.requests} == {"/openai/v1/chat/completions"}
    assert {r.model for r in fake.requests} == {"llama-3.3-70b-versatile"}
    assert {r.headers.get("Authorization") for r in fake.requests} == {f"Bearer {KEY}"}
    assert Counter((MATCH in r.prompt, GITHUB in r.prompt) for r in fake.requests) == \
        Counter({(True, True): 1, (True, False): 1, (False, True): 1, (False, False): 1})
    assert KEY not in out.stdout + out.stderr + (root / "r.json").read_text()


def test_without_groq_api_key_they_are_exit_2_said_once_with_no_call(tmp_path, fake):
    """The message itself, and the results file, on a hand-written repository:
    test_provider_end_to_end.py::test_a_missing_key_is_said_once_and_exits_2."""
    root = checkout(tmp_path)
    out = run(root, {"GROQ_API_BASE": fake.url + "/openai/v1"})
    assert out.returncode == 2, out.stdout + out.stderr
    assert (out.stdout + out.stderr).count("GROQ_API_KEY is not set") == 1, out.stdout + out.stderr
    assert "4 judge metrics on 2 cases could not be scored" in out.stderr
    assert fake.requests == [] and "Traceback" not in out.stderr


def test_adk_loads_both_eval_files_and_reads_the_groq_judge_from_their_criteria():
    from google.adk.evaluation.eval_config import get_evaluation_criteria_or_default

    assert adk_loads(DATA / LEGIT) and adk_loads(DATA / PHISH)
    criteria = get_evaluation_criteria_or_default(str(DATA / CONFIG)).criteria
    assert {name: criteria[name].model_dump()["judge_model_options"]["judge_model"] for name in JUDGED} == \
        dict.fromkeys(JUDGED, JUDGE)
    if importlib.util.find_spec("litellm"):  # ADK's registry hands the name to LiteLLM
        from google.adk.models.lite_llm import LiteLlm
        from google.adk.models.registry import LLMRegistry

        assert LLMRegistry.resolve(JUDGE) is LiteLlm
