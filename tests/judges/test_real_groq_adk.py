"""cross-check's Groq-judged eval files (tests/data/real/cross-check) through google-adk's own
AgentEvaluator, as the repository's eval/test_eval.py runs them (``AgentEvaluator.evaluate``
on each file, its test_config.json found beside it), with LiteLLM (a test dependency) calling
``groq/llama-3.3-70b-versatile`` at the fake OpenAI-compatible server; then evalcheck on the
invocations ADK recorded, against the same server. Every score and verdict, the model sent and
the number of requests are the same (issue 41). ADK runs a stand-in for the repository's
``engine`` package: an ADK agent whose model is scripted and offline, and which, like the
scripted agent of test_real_groq_checkout.py, calls every page LEGITIMATE and gives no
set_model_response on the phishing page."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .fake_openai import FakeOpenAI, chat_reply
from .test_real_groq_checkout import DATA, GITHUB, JUDGE, JUDGED, KEY, LEGIT, MCAFEE, PHISH, script

# Not imported here: LiteLLM reads LITELLM_LOCAL_MODEL_COST_MAP (set by the test) on import.
if importlib.util.find_spec("litellm") is None or importlib.util.find_spec("pandas") is None:
    pytest.skip("litellm and pandas (AgentEvaluator's) are test dependencies", allow_module_level=True)

RUBRICS = {r["rubric_id"]: r["rubric_content"]["text_property"] for r in json.loads(
    (DATA / "eval/data/test_config.json").read_text())["criteria"]["rubric_based_tool_use_quality_v1"]["rubrics"]}
STATUS = {1: "passed", 2: "failed", 3: "not_evaluated", 4: "informational"}
ENGINE = f'''"""A stand-in for cross-check's engine package (TEST ONLY: a scripted, offline model)."""
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.genai import types


def exit_loop() -> dict:
    """Ends the debate."""
    return {{}}


def set_model_response(final_verdict: str, reasoning: str) -> dict:
    """Gives the structured verdict."""
    return {{"final_verdict": final_verdict, "reasoning": reasoning}}


class Classifier(BaseLlm):
    model: str = "scripted-classifier"

    @classmethod
    def supported_models(cls):
        return [r"scripted-classifier"]

    async def generate_content_async(self, llm_request, stream=False):
        parts = [p for c in llm_request.contents for p in c.parts or []]
        url = next(p.text for p in parts if p.text)
        called = [p.function_response.name for p in parts if p.function_response]
        if "exit_loop" not in called:
            part = types.Part(function_call=types.FunctionCall(name="exit_loop", args={{}}))
        elif {GITHUB!r} in url and "set_model_response" not in called:
            part = types.Part(function_call=types.FunctionCall(name="set_model_response", args={{
                "final_verdict": "LEGITIMATE", "reasoning": "a personal site"}}))
        else:
            part = types.Part(text="LEGITIMATE")
        yield LlmResponse(content=types.Content(role="model", parts=[part]))


root_agent = LlmAgent(name="moderator_agent", model=Classifier(), instruction="Classify the page.",
                      tools=[exit_loop, set_model_response])
'''


def script_adk(fake: FakeOpenAI) -> None:
    """The verdicts of script() in the formats ADK's prompts ask for."""
    for url, right in ((GITHUB, True), (MCAFEE, False)):
        valid = json.dumps({"reasoning": "compared", "is_the_agent_response_valid": "valid" if right else "invalid"})
        fake.on(lambda r, u=url: "is_the_agent_response_valid" in r.prompt and u in r.prompt, chat_reply(valid))
        blocks = "\n\n".join(
            f"ID: {rid}\nProperty: {text}\nEvidence: e\nRationale: checked\n"
            f"Verdict: {'yes' if right or rid == 'consensus_mechanics' else 'no'}" for rid, text in RUBRICS.items())
        fake.on(lambda r, u=url: "Verdict:" in r.prompt and u in r.prompt, chat_reply(blocks))


def run_adk(root: Path) -> dict[str, object]:
    """Each eval file through AgentEvaluator.evaluate, its results kept by ADK's own results
    manager: {eval set id: (the case's metric (status, score)s, its recorded invocations)}."""
    from google.adk.evaluation.agent_evaluator import AgentEvaluator
    from google.adk.evaluation.local_eval_set_results_manager import LocalEvalSetResultsManager

    (root / "engine").mkdir()
    (root / "engine" / "__init__.py").write_text("from . import agent\n")
    (root / "engine" / "agent.py").write_text(ENGINE)
    manager = LocalEvalSetResultsManager(agents_dir=str(root / "history"))
    sys.path.insert(0, str(root))
    try:
        for path in (LEGIT, PHISH):
            with contextlib.suppress(AssertionError):  # a failed threshold: recorded all the same
                asyncio.run(AgentEvaluator.evaluate(
                    agent_module="engine", eval_dataset_file_path_or_dir=str(root / path), num_runs=1,
                    app_name="engine", eval_set_results_manager=manager, print_detailed_results=False))
    finally:
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m == "engine" or m.startswith("engine.")]:
            del sys.modules[name]
    found: dict[str, object] = {}
    for result_id in manager.list_eval_set_results("engine"):
        (case,) = manager.get_eval_set_result("engine", result_id).eval_case_results
        found[case.eval_set_id] = (
            {m.metric_name: (STATUS[m.eval_status.value], m.score) for m in case.overall_eval_metric_results},
            [r.actual_invocation.model_dump(mode="json", exclude_none=True)
             for r in case.eval_metric_result_per_invocation])
    return found


def test_agent_evaluator_and_evalcheck_score_cross_check_alike_through_the_same_fake_groq(
        tmp_path, monkeypatch):
    root = tmp_path / "cross-check"
    shutil.copytree(DATA, root, ignore=shutil.ignore_patterns("SOURCE.md", "LICENSE"))
    (root / ".git").mkdir()
    with FakeOpenAI(KEY) as fake:
        env = {"GROQ_API_KEY": KEY, "GROQ_API_BASE": fake.url + "/openai/v1"}
        monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of LiteLLM's price list
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        script_adk(fake)
        adk = run_adk(root)
        adk_requests = list(fake.requests)
        fake.reset()
        ids = {json.loads((root / p).read_text())["eval_set_id"]: p for p in (LEGIT, PHISH)}
        assert sorted(adk) == sorted(ids)
        case_of = {s: json.loads((root / p).read_text())["eval_cases"][0]["eval_id"] for s, p in ids.items()}
        runs = [{"evalSetId": set_id, "evalId": case_of[set_id], "run": 1, "invocations": invocations}
                for set_id, (_, invocations) in adk.items()]
        (root / "runs.json").write_text(json.dumps({"version": 1, "runs": runs}))
        script(fake)
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("GOOGLE_", "GEMINI_", "EVALCHECK_", "GROQ_", "OPENAI_"))}
        done = subprocess.run([sys.executable, "-m", "checker.cli", "run", ".", "--replay", "runs.json",
                               "--results", "r.json"], cwd=root, env={**base, **env},
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 1, done.stdout + done.stderr
        our_requests = list(fake.requests)
    results = json.loads((root / "r.json").read_text())
    ours = {s["evalSetId"]: {m["name"]: (m["status"], m["score"]) for m in s["cases"][0]["metrics"]
                             if m["name"] in JUDGED} for s in results["evalSets"]}
    assert ours == {set_id: {n: scores[n] for n in JUDGED} for set_id, (scores, _) in adk.items()}
    assert ours[next(s for s, p in ids.items() if p == PHISH)] == {
        "final_response_match_v2": ("failed", 0.0), "rubric_based_tool_use_quality_v1": ("passed", 0.5)}
    # the same requests: the model without its prefix, one a case, metric and sample
    model = JUDGE.split("/", 1)[1]
    assert {r.model for r in adk_requests} == {r.model for r in our_requests} == {model}
    assert len(adk_requests) == len(our_requests) == 4
    sent = [{k.lower(): v for k, v in r.headers.items()} for r in adk_requests + our_requests]
    assert {h.get("authorization") for h in sent} == {f"Bearer {KEY}"}  # LiteLLM's is lower-case
