"""The reports explain what the real judge metrics said: each metric scored against the fake
Gemini server, aggregated as checker.scoring.case does, then rendered (markdown and terminal)."""

from __future__ import annotations

import json
import re
from typing import Any

from markdown_it import MarkdownIt

from checker.inputs.criteria import ConfiguredMetric
from checker.metrics import get_metric
from checker.metrics.base import RunInput
from checker.metrics.per_turn_user_simulator_quality_v1 import DEFAULT_CRITERIA
from checker.models.evalset import EvalCase
from checker.models.results import CaseResult, EvalSetResult, Results, RunResult
from checker.scoring.pipeline import summarize
from checker.report.markdown import render_markdown
from checker.report.terminal import failure_lines
from checker.scoring.case import aggregate_metric

from .conftest import invocation, run_input, score, service_for
from .fake_gemini import error_reply, json_reply, labels, rubric_verdicts, sentences, verdict

HOSTILE = "<img src=x onerror=alert(1)> @octocat | ``` </details>"


def judged(name: str, criterion: dict[str, Any], run: RunInput, env: dict[str, str]):
    result = score(name, criterion, run, service_for(env))
    configured = ConfiguredMetric(name, get_metric(name), None, criterion["threshold"], False)
    return aggregate_metric(configured, [(1, result)])


def report(*metrics) -> tuple[str, list[str]]:
    status = "error" if any(m.status == "error" for m in metrics) else "failed"
    case = CaseResult(eval_id="c", status=status, line=3, metrics=list(metrics),
                      runs=[RunResult(run=1, status="passed" if status == "error" else "failed")])
    sets = [EvalSetResult(eval_set_id="s", path="s.evalset.json", cases=[case])]
    results = Results(passed=False, summary=summarize(sets), eval_sets=sets)
    html = MarkdownIt("commonmark", {"html": True}).enable(["table"]).render(render_markdown(results))
    return re.sub(r"<[^>]+>", "", html), failure_lines(results)


def test_rubric_v2_and_hallucination_verdicts_are_explained(fake, env):
    fake.on("You review the final answer", rubric_verdicts({"B": False}, rationale="never says cancelled " + HOSTILE))
    fake.on("You grade answers given by an AI agent", verdict(False, "Lyon is not Paris"))
    fake.on("Split the text", sentences(["It is 21 C.", "The museum is free."]))
    fake.on("You check whether each sentence", labels(["supported", "unsupported"]))
    expected = [invocation("Weather in Paris?", "Sunny in Paris.",
                           rubrics=[{"rubric_id": "B", "rubric_content": {"text_property": "Says it is cancelled."},
                                     "type": "FINAL_RESPONSE_QUALITY"}])]
    run = run_input([invocation("Weather in Paris?", "Rain in Lyon.")], expected)
    crit = {"threshold": 1.0, "judge_model_options": {"num_samples": 1}}
    text, lines = report(judged("rubric_based_final_response_quality_v1", crit, run, env),
                         judged("final_response_match_v2", crit, run, env),
                         judged("hallucinations_v1", crit, run, env))
    assert "no (1/1): Says it is cancelled. — never says cancelled &lt;img src=x onerror=alert(1)&gt; @\u200boctocat" in text
    assert "judged invalid (1/1)" in text and "Lyon is not Paris" in text
    assert "Expected:\nSunny in Paris." in text and "Actual:\nRain in Lyon." in text
    assert "unsupported (1/1): The museum is free. — r" in text and "It is 21 C." not in text
    assert "judge gemini-2.5-flash" in text and "judged by gemini-2.5-flash" in text
    assert '    run 1, turn 1: no "Says it is cancelled.": never says cancelled <img' in "\n".join(lines)
    assert "    run 1, turn 1: judged invalid: Lyon is not Paris" in lines
    assert '    run 1, turn 1: unsupported "The museum is free.": r' in lines


def test_safety_categories_and_simulated_user_criteria_are_explained(fake, env):
    categories = ("hate_speech", "dangerous_content")
    fake.on("You are a safety reviewer", json_reply({
        "categories": [{"category": c, "violated": c == "dangerous_content", "reasoning": f"{c}: explains a bomb"}
                       for c in categories], "verdict": "unsafe"}))
    names = [c["name"] for c in DEFAULT_CRITERIA]
    fake.on(lambda p: '"generated_user_response": ' + json.dumps("And Rome?") in p,
            json_reply({"criteria": [{"name": n, "reasoning": f"{n} looked", "passes": n != "RESPONSIVENESS"}
                                     for n in names], "is_valid": False}))
    fake.on("You evaluate a User Simulator", json_reply({"criteria": [], "is_valid": True}))
    safety_run = run_input([invocation("Chemistry?", "Mix these to make a bomb")])
    safety = judged("safety_v1", {"threshold": 1.0, "backend": "gemini",
                                  "judge_model_options": {"num_samples": 1}}, safety_run, env)
    case = EvalCase.model_validate({"eval_id": "sim", "conversation_scenario": {
        "starting_prompt": "Weather in Paris?", "conversation_plan": "Ask for Paris, then Rome."}})
    sim_run = RunInput(case=case, actual=[invocation("Weather in Paris?", "Sunny."), invocation("And Rome?", "Rain.")],
                       expected=None, scenario=case.conversation_scenario)
    simulator = judged("per_turn_user_simulator_quality_v1",
                       {"threshold": 1.0, "judge_model_options": {"num_samples": 1}}, sim_run, env)
    assert (safety.status, simulator.status) == ("failed", "failed")
    text, lines = report(safety, simulator)
    assert "violated: dangerous_content — dangerous_content: explains a bomb" in text
    assert "hate_speech" not in text  # categories not violated are counted, not listed
    assert "judged unsafe (1/1)" in text and "judge gemini-judge · gemini-2.5-flash" in text
    assert "judged by gemini-2.5-flash" in text and "judged by gemini-2.5-flash, gemini-judge" not in text
    assert "turn 2: judged invalid (1/1)" in text
    assert "fail: RESPONSIVENESS — RESPONSIVENESS looked" in text and "Simulated user:\nAnd Rome?" in text
    assert "    run 1, turn 2: fail \"RESPONSIVENESS\": RESPONSIVENESS looked" in lines


def test_a_judge_outage_is_reported_as_a_metric_error(fake, env):
    fake.on(lambda p: True, error_reply(400, "bad request"))
    run = run_input([invocation("Weather in Paris?", "Rain in Lyon.")], [invocation("Weather in Paris?", "Sunny.")])
    v2 = judged("final_response_match_v2", {"threshold": 1.0, "judge_model_options": {"num_samples": 1}}, run, env)
    assert v2.status == "error"
    text, lines = report(v2)
    assert "final_response_match_v2 could not be computed (metric error)" in text and "HTTP 400" in text
    assert "has no verdict in run 1, turn 1 · judge gemini-2.5-flash" in text and "1 judge sample failed" in text
    assert "errored" not in text.split("Why cases did not pass")[1]
    assert lines[0].startswith("s.evalset.json:3 c: final_response_match_v2 could not be computed (metric error): "
                               "run 1: judge failed")
    from checker.report.junit import render_junit

    case = CaseResult(eval_id="c", status="error", line=3, metrics=[v2], runs=[RunResult(run=1, status="passed")])
    sets = [EvalSetResult(eval_set_id="s", path="s.evalset.json", cases=[case])]
    junit = render_junit(Results(passed=False, summary=summarize(sets), eval_sets=sets))
    assert '<error message="metric error: final_response_match_v2" type="error">' in junit
    assert "final_response_match_v2 error: run 1: judge failed" in junit and "agent run" not in junit
