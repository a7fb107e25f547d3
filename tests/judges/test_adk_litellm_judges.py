"""google-adk's AgentEvaluator with a provider/model judge (LiteLLM, installed for the tests
only) and evalcheck, against the same fake OpenAI-compatible server on 127.0.0.1, give every
metric the same score and verdict, and send the same model, sampling settings and number of
requests (issue 41).

ADK runs the real weather agent (tests/adk_agent, its model scripted and offline) once per
case with ``final_response_match_v2`` (num_samples 5) and ``rubric_based_final_response_quality_v1``
(num_samples 4, with ties) judged by ``openai/gpt-4o-mini`` or ``groq/llama-3.3-70b-versatile``; evalcheck
replays the invocations ADK recorded. The fake answers each judge request with the next
verdict of that turn's script, in the format each side asks for (ADK: its regex's
``"is_the_agent_response_valid"`` and ID/Property/Verdict blocks; evalcheck: the JSON it
asks for), so both get the same votes: a turn valid 4 to 1, one invalid 2 to 3, a case at
the threshold after voting (one turn valid 3 to 2, the other invalid), rubrics split. The
prompts evalcheck sends are exactly those it sends a Gemini judge for the same runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from .fake_gemini import FakeGemini, json_reply
from .fake_openai import FakeOpenAI, Recorded, chat_reply, json_answer

pytest.importorskip("litellm")
pytest.importorskip("pandas")  # AgentEvaluator's own import

REPO = Path(__file__).resolve().parents[2]
ADK_DIR = REPO / "tests" / "adk_agent"
EVAL_FILE = ADK_DIR / "evals" / "weather_app.evalset.json"
KEY = "sk-fake-judge-0123456789"
MATCH = "You grade answers given by an AI agent"
RUBRIC = "You review the final answer"
CONFIG_SAMPLING = {"temperature": 0.3, "top_p": 0.95, "max_output_tokens": 512, "seed": 11}
RUBRICS = [{"rubric_id": "r_temp", "rubric_content": {"text_property": "The answer gives a temperature."}},
           {"rubric_id": "r_name", "rubric_content": {"text_property": "The answer greets the user by name."}}]

# Each turn's key (a phrase of its user message; turn 2 of Tokyo first: its prompts may hold
# turn 1), its five final_response_match_v2 verdicts and four rubric samples (ties count
# against, as in ADK).
TURNS = [
    ("forecast for Tokyo", "ivivi", {"r_temp": "nnny", "r_name": "nyny"}),  # a tie: no
    ("weather in Tokyo", "vivvi", {"r_temp": "yyny", "r_name": "ynyy"}),
    ("weather in Paris", "vvivv", {"r_temp": "yyyy", "r_name": "nyyy"}),
    ("Rome or in Oslo", "iivii", {"r_temp": "nnyy", "r_name": "nnnn"}),  # a tie: no
    ("weather in Lima", "vvvvv", {"r_temp": "yyyy", "r_name": "yyyy"}),
]
STATUS = {1: "passed", 2: "failed", 3: "not_evaluated", 4: "informational"}
JUDGES = {"openai/gpt-4o-mini": ("OPENAI_API_KEY", "OPENAI_API_BASE", "/v1", "max_completion_tokens"),
          "groq/llama-3.3-70b-versatile": ("GROQ_API_KEY", "GROQ_API_BASE", "/openai/v1", "max_tokens")}


def criteria(judge: str) -> dict[str, Any]:
    options = {"judge_model": judge, "judge_model_config": CONFIG_SAMPLING}
    return {"criteria": {
        "final_response_match_v2": {"threshold": 0.5, "judge_model_options": {**options, "num_samples": 5}},
        "rubric_based_final_response_quality_v1": {
            "threshold": 0.5, "judge_model_options": {**options, "num_samples": 4}, "rubrics": RUBRICS}}}


def _key(prompt: str) -> str:
    for key, _, _ in TURNS:
        if key in prompt:
            return key
    raise AssertionError("no turn of the script in this prompt: " + prompt[-300:])


def _adk_frm(valid: bool) -> str:
    return json.dumps({"reasoning": "compared", "is_the_agent_response_valid": "valid" if valid else "invalid"})


def _adk_rubrics(verdicts: dict[str, bool]) -> str:
    texts = {r["rubric_id"]: r["rubric_content"]["text_property"] for r in RUBRICS}
    return "\n\n".join(f"ID: {rid}\nProperty: {texts[rid]}\nEvidence: e\nRationale: checked\n"
                       f"Verdict: {'yes' if ok else 'no'}" for rid, ok in verdicts.items())


def _ours_rubrics(verdicts: dict[str, bool]) -> dict[str, Any]:
    return {"verdicts": [{"rubric_id": rid, "evidence": "e", "rationale": "checked",
                          "verdict": "yes" if ok else "no"} for rid, ok in verdicts.items()]}


def script_adk(fake: FakeOpenAI) -> None:
    for key, frm, rubric in TURNS:
        fake.on(lambda r, k=key: "is_the_agent_response_valid" in r.prompt and _key(r.prompt) == k,
                *[chat_reply(_adk_frm(v == "v")) for v in frm])
        fake.on(lambda r, k=key: "Verdict:" in r.prompt and _key(r.prompt) == k,
                *[chat_reply(_adk_rubrics({rid: rubric[rid][i] == "y" for rid in rubric}))
                  for i in range(4)])


def script_ours(on: Any, reply: Any, prompt_of: Any) -> None:
    """The same votes in evalcheck's format: ``on``/``reply`` of the fake at hand."""
    for key, frm, rubric in TURNS:
        on(lambda r, k=key: MATCH in prompt_of(r) and _key(prompt_of(r)) == k,
           *[reply({"reasoning": "compared", "verdict": "valid" if v == "v" else "invalid"}) for v in frm])
        on(lambda r, k=key: RUBRIC in prompt_of(r) and _key(prompt_of(r)) == k,
           *[reply(_ours_rubrics({rid: rubric[rid][i] == "y" for rid in rubric})) for i in range(4)])


def run_adk(judge: str) -> tuple[dict[str, dict[str, tuple[str, float | None]]], dict[str, list[Any]]]:
    """AgentEvaluator's (status, score) per case and metric, and the invocations it recorded."""
    from google.adk.evaluation.agent_evaluator import AgentEvaluator
    from google.adk.evaluation.eval_config import EvalConfig
    from google.adk.evaluation.eval_set import EvalSet

    reported: dict[str, dict[str, tuple[str, float | None]]] = {}
    recorded: dict[str, list[Any]] = {}
    current: list[str] = []
    own = {name: getattr(AgentEvaluator, name) for name in (
        "_get_eval_metric_results_with_invocation", "_print_details")}

    def grouped(results):
        current[:] = [results[0].eval_id]
        recorded[results[0].eval_id] = list(results)
        return own["_get_eval_metric_results_with_invocation"](results)

    def details(eval_metric_result_with_invocations, overall_eval_status, overall_score,
                metric_name, threshold):
        reported.setdefault(current[0], {})[metric_name] = (STATUS[overall_eval_status.value],
                                                            overall_score)

    sys.path.insert(0, str(ADK_DIR))
    try:
        AgentEvaluator._get_eval_metric_results_with_invocation = staticmethod(grouped)
        AgentEvaluator._print_details = staticmethod(details)
        with contextlib.suppress(AssertionError):  # failed thresholds: reported all the same
            asyncio.run(AgentEvaluator.evaluate_eval_set(
                agent_module="weather_app", eval_set=EvalSet.model_validate(json.loads(EVAL_FILE.read_text())),
                eval_config=EvalConfig.model_validate(criteria(judge)), num_runs=1))
    finally:
        for name, function in own.items():
            setattr(AgentEvaluator, name, staticmethod(function))
        sys.path.remove(str(ADK_DIR))
    return reported, recorded


def replay(recorded: dict[str, list[Any]]) -> dict[str, Any]:
    runs = [{"evalSetId": "weather_app", "evalId": eval_id, "run": 1, "invocations": [
        r.actual_invocation.model_dump(mode="json", exclude_none=True)
        for r in results[0].eval_metric_result_per_invocation]} for eval_id, results in recorded.items()]
    return {"version": 1, "runs": runs}


def evalcheck(root: Path, env: dict[str, str]) -> dict[str, dict[str, dict[str, Any]]]:
    import os

    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("GOOGLE_", "GEMINI_", "EVALCHECK_", "OPENAI_", "GROQ_"))}
    done = subprocess.run([sys.executable, "-m", "checker.cli", "run", "evals", "--replay", "runs.json",
                           "--results", "results.json"], cwd=root, env={**base, **env},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    results = json.loads((root / "results.json").read_text())
    return {c["evalId"]: {m["name"]: m for m in c["metrics"]} for c in results["evalSets"][0]["cases"]}


@pytest.fixture(scope="module", params=sorted(JUDGES))
def both(request, tmp_path_factory) -> dict[str, Any]:
    judge = request.param
    key_var, base_var, prefix, _ = JUDGES[judge]
    root = tmp_path_factory.mktemp("litellm")
    (root / ".git").mkdir()
    evals = root / "evals"
    evals.mkdir()
    (evals / "weather_app.evalset.json").write_text(EVAL_FILE.read_text())
    with FakeOpenAI(KEY) as fake, pytest.MonkeyPatch.context() as patch:
        patch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of LiteLLM's price list
        patch.setenv(key_var, KEY)
        patch.setenv(base_var, fake.url + prefix)
        script_adk(fake)
        adk, recorded = run_adk(judge)
        adk_requests = list(fake.requests)
        fake.reset()
        (root / "runs.json").write_text(json.dumps(replay(recorded)))
        (evals / "test_config.json").write_text(json.dumps(criteria(judge)))
        script_ours(fake.on, json_answer, lambda r: r.prompt)
        ours = evalcheck(root, {key_var: KEY, base_var: fake.url + prefix})
        our_requests = list(fake.requests)
    # The same runs judged by a Gemini judge: the prompts evalcheck sends it.
    with FakeGemini() as gemini:
        script_ours(gemini.on, json_reply, lambda p: p)
        (evals / "test_config.json").write_text(json.dumps(criteria("gemini-2.5-flash")))
        gemini_scores = evalcheck(root, {"GOOGLE_API_KEY": "k", "EVALCHECK_GEMINI_BASE_URL": gemini.url})
        gemini_prompts = [r.prompt for r in gemini.requests]
    return {"judge": judge, "adk": adk, "ours": ours, "adk_requests": adk_requests,
            "our_requests": our_requests, "gemini_prompts": gemini_prompts, "gemini": gemini_scores}


def test_every_score_and_verdict_is_agent_evaluators(both):
    compared = 0
    for eval_id, metrics in both["adk"].items():
        for name, (status, score) in metrics.items():
            if status == "informational":  # the efficiency metrics, not judged
                continue
            ours = both["ours"][eval_id][name]
            assert (ours["status"], ours["score"]) == (status, pytest.approx(score)), (eval_id, name)
            compared += 1
    assert compared == 4 * 2
    frm = {c: m["final_response_match_v2"] for c, m in both["adk"].items()}
    judged = ("final_response_match_v2", "rubric_based_final_response_quality_v1")
    # valid, invalid, and at the threshold after voting (0.5: one turn valid 3-2, one invalid)
    assert frm == {"paris_celsius": ("passed", 1.0), "compare_fahrenheit": ("failed", 0.0),
                   "weather_then_forecast": ("passed", 0.5), "wrong_expectation": ("passed", 1.0)}
    rubric = {c: m["rubric_based_final_response_quality_v1"] for c, m in both["adk"].items()}
    assert rubric["compare_fahrenheit"] == ("failed", 0.0) and rubric["wrong_expectation"] == ("passed", 1.0)
    assert rubric["weather_then_forecast"] == ("passed", 0.5)  # (1+1)+(0+0) over 4 verdicts
    assert rubric["paris_celsius"] == ("passed", 1.0)
    # and as evalcheck scores the same votes on Gemini
    assert {c: {n: (ms[n]["status"], ms[n]["score"]) for n in judged} for c, ms in both["gemini"].items()} == \
        {c: {n: (ms[n]["status"], ms[n]["score"]) for n in judged} for c, ms in both["ours"].items()}


def test_the_requests_model_sampling_and_count_are_adks(both):
    _, _, _, max_param = JUDGES[both["judge"]]
    model = both["judge"].split("/", 1)[1]
    for requests in (both["adk_requests"], both["our_requests"]):
        assert {r.model for r in requests} == {model}  # the provider prefix stripped
        assert all(r.sampling() == {"temperature": 0.3, "top_p": 0.95, max_param: 512, "seed": 11}
                   for r in requests), {json.dumps(r.sampling()) for r in requests}
    # num_samples separate requests per turn: 5 turns x (5 + 4)
    assert len(both["adk_requests"]) == len(both["our_requests"]) == 5 * (5 + 4)
    assert Counter(_key(r.prompt) for r in both["adk_requests"]) == \
        Counter(_key(r.prompt) for r in both["our_requests"])


def test_the_prompts_are_those_evalcheck_sends_gemini(both):
    ours: list[Recorded] = both["our_requests"]
    assert all(len(r.body["messages"]) == 1 and r.body["messages"][0]["role"] == "user" for r in ours)
    assert sorted(r.prompt for r in ours) == sorted(both["gemini_prompts"])


def test_top_k_which_litellm_passes_on_and_openai_refuses_is_not_sent(monkeypatch):
    """ADK's LiteLLM path sends judge_model_config's top_k to OpenAI, whose API refuses it
    (the fake refuses it as OpenAI does): ADK's judge fails; evalcheck's leaves it out."""
    from google.adk.evaluation.eval_case import Invocation
    from google.adk.evaluation.eval_metrics import EvalMetric, JudgeModelOptions, LlmAsAJudgeCriterion
    from google.adk.evaluation.final_response_match_v2 import FinalResponseMatchV2Evaluator
    from google.genai import types

    from checker.judges.service import JudgeRequest, JudgeService

    def turn(text: str) -> Invocation:
        return Invocation(user_content=types.Content(role="user", parts=[types.Part(text="weather in Lima?")]),
                          final_response=types.Content(role="model", parts=[types.Part(text=text)]))

    with FakeOpenAI(KEY) as fake:
        monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_API_BASE", fake.url + "/v1")
        fake.on(lambda r: True, chat_reply(_adk_frm(True)))
        config = types.GenerateContentConfig(temperature=0.0, top_k=5, http_options=types.HttpOptions(
            retry_options=types.HttpRetryOptions(attempts=1)))
        criterion = LlmAsAJudgeCriterion(threshold=0.5, judge_model_options=JudgeModelOptions(
            judge_model="openai/gpt-4o-mini", num_samples=1, judge_model_config=config))
        evaluator = FinalResponseMatchV2Evaluator(EvalMetric(
            metric_name="final_response_match_v2", threshold=0.5, criterion=criterion))
        result = asyncio.run(evaluator.evaluate_invocations([turn("Foggy.")], [turn("Foggy.")]))
        assert result.overall_score is None  # not evaluated: every request refused
        assert fake.requests == [] and fake.refused  # each refused as OpenAI's API refuses it
        assert all(p == "Unrecognized request argument supplied: top_k" for p in fake.refused)
        service = JudgeService(1, None, env={"OPENAI_API_KEY": KEY, "OPENAI_API_BASE": fake.url + "/v1"})

        async def ours() -> str:
            try:
                return await service.sample(JudgeRequest("openai/gpt-4o-mini", "Grade. JSON.",
                                                         {"temperature": 0.0, "top_k": 5.0}), 0, str)
            finally:
                await service.aclose()

        assert asyncio.run(ours())
        assert fake.requests[0].sampling() == {"temperature": 0.0}
