"""per_turn_user_simulator_quality_v1 against the fake Gemini server: the first-turn check,
judged turns, personas, the stop-signal check, votes, judge failures, the shared stop signal."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from checker.inputs.criteria import build_config
from checker.judges.client import RetryPolicy
from checker.metrics.base import RunInput, ScoringServices
from checker.metrics.per_turn_user_simulator_quality_v1 import (DEFAULT_CRITERIA, adk_is_valid,
                                                                parse)
from checker.models.evalset import EvalCase, Invocation
from checker.scoring.case import score_run
from checker.models.evalset import BUILT_IN_PERSONA_IDS
from checker.simulation.personas import BUILT_IN

from .conftest import invocation, score, service_for
from .fake_gemini import error_reply, json_reply

METRIC = "per_turn_user_simulator_quality_v1"
JUDGE = "You evaluate a User Simulator"
PLAN = "Ask for the weather in Paris, then ask for Rome. Then end the conversation."
START = "What's the weather in Paris?"


def criterion(samples: int = 1, stop: str | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"threshold": 0.5, "judge_model_options": {"num_samples": samples}, **extra}
    if stop is not None:
        out["stop_signal"] = stop
    return out


def scenario_run(actual: list[Invocation], persona: Any = None, start: str = START) -> RunInput:
    scenario: dict[str, Any] = {"starting_prompt": start, "conversation_plan": PLAN}
    if persona is not None:
        scenario["user_persona"] = persona
    case = EvalCase.model_validate({"eval_id": "sim", "conversation_scenario": scenario})
    return RunInput(case=case, actual=actual, expected=None, scenario=case.conversation_scenario)


def conversation(*users: str) -> list[Invocation]:
    return [invocation(u, f"agent answer {n}") for n, u in enumerate(users, 1)]


def turn_verdict(valid: bool | str, failing: tuple[str, ...] = (), reasoning: str = "looked") -> Any:
    names = [c["name"] for c in DEFAULT_CRITERIA]
    return json_reply({"criteria": [{"name": n, "reasoning": f"{n}: {reasoning}",
                                     "passes": n not in failing} for n in names],
                       "is_valid": valid})


def generated(text: str) -> str:
    """How a user message appears in the judge prompt's data block."""
    return f'"generated_user_response": {json.dumps(text)}'


def data_of(prompt: str) -> dict[str, Any]:
    start = prompt.index("<<<INPUT_JSON\n") + len("<<<INPUT_JSON\n")
    return json.loads(prompt[start:prompt.index("\nINPUT_JSON>>>")])


def prompt_for(fake, text: str) -> str:
    [found] = [r.prompt for r in fake.requests if generated(text) in r.prompt]
    return found


# ---------------------------------------------------------------- turn 1


def test_first_turn_is_the_starting_prompt_without_a_judge_call(fake, env):
    fake.on(generated("</finished>"), turn_verdict(True))
    result = score(METRIC, criterion(), scenario_run(conversation("  What's the weather in Paris?\n")),
                   service_for(env))
    assert result.error is None and result.score == 1.0
    [first] = result.invocations
    assert first.details["check"] == "starting_prompt"
    assert (first.score, first.details["verdict"]) == (1.0, "valid")
    assert len(fake.requests) == 1  # the stop-signal check only


def test_first_turn_that_is_not_the_starting_prompt_fails(fake, env):
    fake.on(generated("</finished>"), turn_verdict(True))
    result = score(METRIC, criterion(), scenario_run(conversation("Weather in Rome?")),
                   service_for(env))
    assert result.score == 0.0
    details = result.invocations[0].details
    assert details["verdict"] == "invalid"
    assert details["reason"] == "turn 1 is not the scenario's starting_prompt"
    assert (details["user"], details["expected"]) == ("Weather in Rome?", START)


# ---------------------------------------------------------------- judged turns


def test_later_turns_are_judged_pass_and_fail_with_reasons(fake, env):
    fake.on(generated("And Rome?"), turn_verdict(True))
    fake.on(generated("Also book me a flight"), turn_verdict(False, ("CONVERSATION_PLAN_FOLLOWED",),
                                                             "a goal not in the plan"))
    fake.on(generated("</finished>"), turn_verdict(True))
    run = scenario_run(conversation(START, "And Rome?", "Also book me a flight"))
    result = score(METRIC, criterion(), run, service_for(env))
    assert result.error is None
    assert [i.score for i in result.invocations] == [1.0, 1.0, 0.0]
    assert result.score == pytest.approx(2 / 3)
    third = result.invocations[2].details
    assert (third["turn"], third["verdict"], third["status"]) == (3, "invalid", "failed")
    assert third["failedCriteria"] == ["CONVERSATION_PLAN_FOLLOWED"]
    assert {c["name"]: c["reasoning"] for c in third["criteria"]}["CONVERSATION_PLAN_FOLLOWED"] == (
        "CONVERSATION_PLAN_FOLLOWED: a goal not in the plan")
    assert result.details["passedTurns"] == 2 and result.details["evaluatedTurns"] == 3
    assert result.details["stopSignalCheck"]["verdict"] == "valid"
    assert len(fake.requests) == 3  # turns 2 and 3, and the stop-signal check


def test_default_prompt_has_adk_criteria_plan_and_history(fake, env):
    fake.on(lambda p: JUDGE in p, turn_verdict(True))
    score(METRIC, criterion(), scenario_run(conversation(START, "And Rome?")), service_for(env))
    prompt = prompt_for(fake, "And Rome?")
    data = data_of(prompt)
    assert [c["name"] for c in data["criteria"]] == [
        "CONVERSATION_PLAN_FOLLOWED", "STOP_CONDITION_FOLLOWED", "USER_GOAL_ORIENTED",
        "LIMITED_TROUBLESHOOTING", "RESPONSIVENESS", "CORRECTS_AGENT", "CONVERSATIONAL_TONE"]
    assert data["conversation_plan"] == PLAN and data["stop_signal"] == "</finished>"
    # the history is what came before this turn: user texts and final responses only
    assert data["conversation_history"] == [{"role": "user", "text": START},
                                            {"role": "agent", "text": "agent answer 1"}]
    assert "persona" not in data and "The persona describes" not in prompt
    assert "{{" not in prompt and "`</finished>`" in json.dumps(data["criteria"])
    stop = data_of(prompt_for(fake, "</finished>"))
    assert len(stop["conversation_history"]) == 4  # the stop check sees the whole conversation


def test_built_in_persona_criteria_are_its_behaviours(fake, env):
    fake.on(lambda p: JUDGE in p, turn_verdict(True))
    score(METRIC, criterion(stop="<bye>"), scenario_run(conversation(START, "And Rome?"),
                                                        persona="EXPERT"), service_for(env))
    prompt = prompt_for(fake, "And Rome?")
    data = data_of(prompt)
    expert = BUILT_IN["EXPERT"]
    assert data["persona"] == {"id": "EXPERT", "description": expert.description}
    assert [c["name"] for c in data["criteria"]] == [b.name for b in expert.behaviors]
    assert [len(c["violations"]) for c in data["criteria"]] == [
        len(b.violation_rubrics) for b in expert.behaviors]
    assert "The persona describes how the simulated user behaves" in prompt
    assert "{{" not in prompt and "`<bye>`" in prompt and "</finished>" not in prompt


def test_custom_persona_rubrics_get_the_stop_signal(fake, env):
    fake.on(lambda p: JUDGE in p, turn_verdict(True))
    persona = {"id": "terse", "description": "Says as little as possible.", "behaviors": [
        {"name": "Terse", "description": "Short messages.",
         "behavior_instructions": ["Use five words at most."],
         "violation_rubrics": ["The message has more than five words.",
                               "The user ends without {{stop_signal}} when done; {{ other }} stays."]}]}
    result = score(METRIC, criterion(), scenario_run(conversation(START, "Rome?"), persona=persona),
                   service_for(env))
    assert result.details["persona"] == "terse"
    [entry] = data_of(prompt_for(fake, "Rome?"))["criteria"]
    assert entry == {"name": "Terse", "description": "Short messages.", "violations": [
        "The message has more than five words.",
        "The user ends without </finished> when done; {{ other }} stays."]}


def test_built_in_personas_mirror_adks():
    pytest.importorskip("google.adk")
    from google.adk.evaluation.simulation.pre_built_personas import get_default_persona_registry

    adk = {p.id: p for p in get_default_persona_registry().get_registered_personas()}
    assert list(adk) == list(BUILT_IN) == list(BUILT_IN_PERSONA_IDS)  # the models' check too
    for pid, theirs in adk.items():
        ours = BUILT_IN[pid]
        assert [(len(b.behavior_instructions), len(b.violation_rubrics)) for b in ours.behaviors] == [
            (len(b.behavior_instructions), len(b.violation_rubrics)) for b in theirs.behaviors]
        # where ADK's text mentions the stop signal, ours does too
        assert [["{{ stop_signal }}" in r for r in b.violation_rubrics] for b in ours.behaviors] == [
            ["{{ stop_signal }}" in r for r in b.violation_rubrics] for b in theirs.behaviors]


# ---------------------------------------------------------------- stop-signal check


def test_failed_stop_signal_check_replaces_the_last_turn(fake, env):
    fake.on(generated("And Rome?"), turn_verdict(True, reasoning="fine"))
    fake.on(generated("</finished>"), turn_verdict(False, ("STOP_CONDITION_FOLLOWED",)))
    result = score(METRIC, criterion(), scenario_run(conversation(START, "And Rome?")),
                   service_for(env))
    assert [i.score for i in result.invocations] == [1.0, 0.0]
    assert result.score == 0.5
    last = result.invocations[1].details
    assert last["replacedByStopSignalCheck"] is True
    assert last["ownVerdict"]["verdict"] == "valid"
    check = result.details["stopSignalCheck"]
    assert (check["verdict"], check["check"], check["user"]) == ("invalid", "stop_signal", "</finished>")
    assert check["failedCriteria"] == ["STOP_CONDITION_FOLLOWED"]


def test_stop_signal_check_of_a_single_turn_replaces_turn_one(fake, env):
    fake.on(generated("</finished>"), turn_verdict(False))
    result = score(METRIC, criterion(), scenario_run(conversation(START)), service_for(env))
    assert result.score == 0.0
    assert result.invocations[0].details["ownVerdict"]["verdict"] == "valid"


# ---------------------------------------------------------------- votes


def test_num_samples_majority_vote(fake, env):
    fake.on(generated("And Rome?"), turn_verdict(True), turn_verdict(False), turn_verdict(True))
    fake.on(generated("</finished>"), turn_verdict(True))
    result = score(METRIC, criterion(samples=3), scenario_run(conversation(START, "And Rome?")),
                   service_for(env))
    second = result.invocations[1].details
    assert (second["verdict"], second["agreement"]) == ("valid", "2/3")
    assert second["votes"] == {"for": 2, "against": 1, "failed": 0}
    assert result.score == 1.0
    assert len(fake.requests) == 6


def test_a_tie_is_invalid(fake, env):
    fake.on(generated("And Rome?"), turn_verdict(True), turn_verdict(False))
    fake.on(generated("</finished>"), turn_verdict(True))
    result = score(METRIC, criterion(samples=2), scenario_run(conversation(START, "And Rome?")),
                   service_for(env))
    assert result.invocations[1].details["verdict"] == "invalid"
    assert result.score == 0.5


# ---------------------------------------------------------------- failures


def test_a_turn_without_user_content_is_not_counted_as_a_failure(fake, env):
    fake.on(generated("And Rome?"), turn_verdict(True))
    fake.on(generated("</finished>"), turn_verdict(True))
    actual = [Invocation.model_validate({"user_content": {"role": "user", "parts": []},
                                         "final_response": {"parts": [{"text": "hi"}]}}),
              invocation("And Rome?", "Sunny")]
    result = score(METRIC, criterion(), scenario_run(actual), service_for(env))
    assert result.error is None
    assert result.score == 1.0  # ADK: 1 / 2, the not-evaluated turn counted as failed
    assert result.invocations[0].score is None
    assert result.invocations[0].details["status"] == "not_evaluated"
    assert result.details["notEvaluatedTurns"] == [1]
    assert (result.details["passedTurns"], result.details["evaluatedTurns"]) == (1, 1)


def test_judge_outage_is_an_error_naming_the_turn_not_a_failed_turn(fake, env):
    fake.on(generated("And Rome?"), error_reply(500, "boom"))
    fake.on(generated("</finished>"), turn_verdict(True))
    service = service_for(env, retry=RetryPolicy(attempts=2, initial_delay=0.01, jitter=0.0))
    result = score(METRIC, criterion(samples=1), scenario_run(conversation(START, "And Rome?")),
                   service)
    assert result.score is None
    assert result.error == ("judge failed: turn 2: undecided: 0 for, 0 against, 1 failed "
                            "(judge call failed after 2 attempt(s): HTTP 500 INTERNAL: boom)")
    assert result.invocations[1].score is None
    assert result.invocations[0].score == 1.0  # what could be judged is kept
    assert result.details["notEvaluatedTurns"] == [2]


def test_an_unreadable_answer_is_a_failed_sample_with_the_judge_text(fake, env):
    fake.on(generated("And Rome?"), json_reply({"criteria": []}), turn_verdict(True),
            turn_verdict(True))
    fake.on(generated("</finished>"), json_reply("I cannot decide."))
    result = score(METRIC, criterion(samples=3), scenario_run(conversation(START, "And Rome?")),
                   service_for(env))
    second = result.invocations[1].details
    assert (second["verdict"], second["agreement"]) == ("valid", "2/3")
    assert second["failedSamples"][0]["error"] == "the judge's answer has no readable is_valid verdict"
    assert result.error.startswith("judge failed: the stop-signal check: undecided: 0 for, 0 "
                                   "against, 3 failed (the judge's answer has no readable "
                                   'is_valid verdict; the judge said: "I cannot decide.")')


def test_refused_judge_request_is_not_retried(fake, env):
    from checker.judges.client import JudgeConfigError

    fake.on(lambda p: JUDGE in p, error_reply(403, "no access"))
    with pytest.raises(JudgeConfigError, match=r"judge request rejected \(HTTP 403 "
                                               r"PERMISSION_DENIED: no access\)"):
        score(METRIC, criterion(), scenario_run(conversation(START, "And Rome?")),
              service_for(env))
    assert len(fake.requests) == 2  # turn 2 and the stop check, once each


def test_missing_credentials_error_the_metric_with_what_to_set():
    config = build_config({"criteria": {METRIC: criterion()}}, None, "test_config.json")
    configured = config.metrics[0]
    result = asyncio.run(score_run(configured, scenario_run(conversation(START, "And Rome?")),
                                   _context({})))
    assert "no judge credentials" in result.error and "GOOGLE_API_KEY" in result.error


def _context(env: dict[str, str]):
    from checker.metrics.base import ScoringContext

    return ScoringContext(services=ScoringServices(judge=service_for(env)))


def test_a_case_without_a_scenario_is_not_evaluated(fake, env):
    case = EvalCase.model_validate({"eval_id": "static", "conversation": [
        invocation(START, "Sunny").model_dump(exclude_none=True)]})
    run = RunInput(case=case, actual=case.conversation, expected=case.conversation, scenario=None)
    result = score(METRIC, criterion(), run, service_for(env))
    assert result.score is None and result.error is None
    assert result.not_evaluated_reason.startswith("the case has no conversation_scenario")
    assert fake.requests == []


# ---------------------------------------------------------------- is_valid parsing

ADK_CASES = [
    '{"criteria": [], "is_valid": True,\n}', '{"is_valid": False}', '{"is_valid": "valid"}',
    '{"is_valid": "Valid"}', '{"is_valid": "invalid", "x": 1}', '"is_valid": [ "true" ],',
    '"is_valid": almost\n', '"is_valid": "partially valid"}', '"is_valid": partially_valid,',
    '"is_valid": "maybe"}', '"is_valid": TRUE}', 'no verdict at all', '"is_valid": }',
    '{\n  "is_valid": false\n}', '"is_valid":"partially"\n', '"is_valid": "FALSE",',
]


@pytest.mark.parametrize("text", ADK_CASES)
def test_is_valid_is_read_as_adk_reads_it(text):
    pytest.importorskip("google.adk")
    from google.adk.evaluation.llm_as_judge_utils import Label
    from google.adk.evaluation.simulation.per_turn_user_simulator_quality_v1 import (
        _parse_llm_response)

    theirs = {Label.VALID: True, Label.INVALID: False, Label.NOT_FOUND: None}[_parse_llm_response(text)]
    assert adk_is_valid(text) == theirs


def test_parse_reads_schema_json_then_adks_text_form():
    assert parse('{"criteria": [{"name": "A", "reasoning": "r", "passes": false}], '
                 '"is_valid": false}').criteria[0].name == "A"
    assert parse('```json\n{"is_valid": true}\n```').is_valid is True
    assert parse('{"is_valid": "Partially"}').is_valid is False  # a label string, as ADK maps it
    # Python-style booleans are not JSON: ADK's regex still finds the verdict
    assert parse('{"criteria": [], "is_valid": True,\n}').is_valid is True
    from checker.judges.service import UnreadableReply

    with pytest.raises(UnreadableReply):
        parse('{"is_valid": "perhaps"}')


# ---------------------------------------------------------------- the shared stop signal


def test_the_metric_uses_the_simulators_stop_signal():
    config = build_config({"criteria": {METRIC: 0.5},
                           "user_simulator_config": {"stop_signal": "<bye>"}}, None, "c.json")
    assert config.metrics[0].criterion.stop_signal == "<bye>"
    assert config.user_simulator.stop_signal == "<bye>"


def test_the_simulator_uses_the_metrics_stop_signal():
    config = build_config({"criteria": {METRIC: {"threshold": 0.5, "stopSignal": "<bye>"}}},
                          None, "c.json")
    assert config.metrics[0].criterion.stop_signal == "<bye>"
    assert config.user_simulator.stop_signal == "<bye>"
    default = build_config({"criteria": {METRIC: 0.5}}, None, "c.json")
    assert default.metrics[0].criterion.stop_signal == "</finished>"
    assert default.user_simulator is None


def test_an_empty_stop_signal_is_bad_input():
    from checker.errors import InputError

    with pytest.raises(InputError) as caught:
        build_config({"criteria": {METRIC: {"threshold": 0.5, "stop_signal": " "}}}, None, "c.json")
    assert "stop_signal" in str(caught.value)


# ---------------------------------------------------------------- end to end (--replay)


def _turn(user: str, answer: str) -> dict[str, Any]:
    return {"user_content": {"role": "user", "parts": [{"text": user}]},
            "final_response": {"role": "model", "parts": [{"text": answer}]}}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    evals = tmp_path / "evals"
    evals.mkdir()
    (evals / "sim.evalset.json").write_text(json.dumps({"eval_set_id": "sim", "eval_cases": [
        {"eval_id": "weather", "conversation_scenario": {
            "starting_prompt": START, "conversation_plan": PLAN, "user_persona": "NOVICE"}},
        {"eval_id": "static", "conversation": [_turn(START, "Sunny.")]}]}))
    (evals / "test_config.json").write_text(json.dumps({
        "criteria": {METRIC: {"threshold": 0.6, "judge_model_options": {"num_samples": 1}}},
        "user_simulator_config": {"stop_signal": "<bye>"}}))
    runs = [{"evalSetId": "sim", "evalId": "weather", "run": 1, "invocations": [
                _turn(START, "Sunny, 21 C."), _turn("And in Rome?", "Cloudy, 18 C.")]},
            {"evalSetId": "sim", "evalId": "weather", "run": 2, "invocations": [
                _turn(START, "Sunny, 21 C."), _turn("Book me a flight to Rome", "Done.")]},
            {"evalSetId": "sim", "evalId": "static", "run": 1, "invocations": [_turn(START, "Sunny.")]}]
    (tmp_path / "runs.json").write_text(json.dumps({"version": 1, "runs": runs}))
    return tmp_path


def evalcheck(repo: Path, fake, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GOOGLE_", "GEMINI_", "EVALCHECK_"))}
    env.update({"GOOGLE_API_KEY": "test-key", "EVALCHECK_GEMINI_BASE_URL": fake.url})
    return subprocess.run([sys.executable, "-m", "checker.cli", "run", "evals", "--replay",
                           "runs.json", "--num-runs", "2", *args], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120)


def test_replayed_scenario_runs_are_scored_end_to_end(repo, fake):
    fake.on(generated("And in Rome?"), turn_verdict(True))
    fake.on(generated("Book me a flight to Rome"), turn_verdict(False, ("CONVERSATION_PLAN_FOLLOWED",)))
    fake.on(generated("<bye>"), turn_verdict(True))
    done = evalcheck(repo, fake, "--results", "r.json")
    assert done.returncode == 1, done.stderr
    results = json.loads((repo / "r.json").read_text())
    cases = {c["evalId"]: c for c in results["evalSets"][0]["cases"]}
    [metric] = [m for m in cases["weather"]["metrics"] if m["name"] == METRIC]
    assert (metric["runs"], metric["score"], metric["status"]) == ([1.0, 0.5], 0.75, "passed")
    assert metric["details"]["stopSignal"] == "<bye>" and metric["details"]["persona"] == "NOVICE"
    assert metric["details"]["worstRun"] == 2
    assert metric["details"]["invocations"][1]["failedCriteria"] == ["CONVERSATION_PLAN_FOLLOWED"]
    [static] = [m for m in cases["static"]["metrics"] if m["name"] == METRIC]
    assert static["status"] == "not_evaluated"
    assert "no conversation_scenario" in static["error"]
    # every judge prompt carries the simulator's stop signal and the NOVICE behaviours
    assert all('"stop_signal": "<bye>"' in r.prompt and '"id": "NOVICE"' in r.prompt
               for r in fake.requests)
    assert len(fake.requests) == 4  # 2 runs x (turn 2 + stop check)


def test_two_different_stop_signals_are_bad_input(repo, fake):
    config = json.loads((repo / "evals" / "test_config.json").read_text())
    config["criteria"][METRIC]["stop_signal"] = "</finished>"
    (repo / "evals" / "test_config.json").write_text(json.dumps(config))
    done = evalcheck(repo, fake)
    assert done.returncode == 2
    assert f"test_config.json at $.criteria.{METRIC}.stop_signal" in done.stderr
    assert "user_simulator_config.stop_signal '<bye>'" in done.stderr
    assert "share one stop signal" in done.stderr and "Traceback" not in done.stderr
    assert fake.requests == []


def test_an_unknown_persona_id_in_an_eval_file_is_bad_input(repo, fake):
    eval_set = json.loads((repo / "evals" / "sim.evalset.json").read_text())
    eval_set["eval_cases"][0]["conversation_scenario"]["user_persona"] = "GURU"
    (repo / "evals" / "sim.evalset.json").write_text(json.dumps(eval_set))
    done = evalcheck(repo, fake)
    assert done.returncode == 2
    assert ("sim.evalset.json at $.eval_cases[0].conversation_scenario.user_persona: unknown "
            "persona 'GURU': the built-in personas are EXPERT, NOVICE, EVALUATOR") in done.stderr
