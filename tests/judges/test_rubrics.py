"""Rubric-based metrics: each invocation judged against its own rubrics, voted per rubric."""

from __future__ import annotations

import json

from .conftest import invocation, run_input, score, service_for
from .fake_gemini import json_reply, rubric_verdicts

FINAL = "rubric_based_final_response_quality_v1"
TOOLS = "rubric_based_tool_use_quality_v1"


def rubric(rid: str, text: str, rtype: str | None = None) -> dict:
    out = {"rubric_id": rid, "rubric_content": {"text_property": text}}
    if rtype:
        out["type"] = rtype
    return out


def crit(samples: int = 1, rubrics: list | None = None, **extra) -> dict:
    return {"threshold": 0.5, "judge_model_options": {"num_samples": samples},
            "rubrics": rubrics or [], **extra}


def properties(prompt: str) -> list[str]:
    start = prompt.index("<<<INPUT_JSON\n") + len("<<<INPUT_JSON\n")
    data = json.loads(prompt[start:prompt.index("\nINPUT_JSON>>>")])
    return [p["rubric_id"] for p in data["properties"]]


def test_each_invocation_is_judged_against_its_own_rubrics(fake, env):
    """ADK maps every answer against the last invocation's rubrics, so invocation 1's rubric A
    comes out 'not found'. Here turn 1 is judged on A only and turn 2 on B only."""
    expected = [invocation("Book a table", "Booked.",
                           rubrics=[rubric("A", "Confirms the booking time.", "FINAL_RESPONSE_QUALITY")]),
                invocation("Cancel it", "Cancelled.",
                           rubrics=[rubric("B", "Says the booking is cancelled.", "FINAL_RESPONSE_QUALITY")])]
    actual = [invocation("Book a table", "Booked for 8pm."), invocation("Cancel it", "Done.")]
    fake.on("Booked for 8pm", rubric_verdicts({"A": True}))
    fake.on("Done.", rubric_verdicts({"B": False}, rationale="does not say cancelled"))
    result = score(FINAL, crit(), run_input(actual, expected), service_for(env))
    assert result.error is None
    assert [i.score for i in result.invocations] == [1.0, 0.0]
    assert result.score == 0.5
    assert sorted(properties(r.prompt) for r in fake.requests) == [["A"], ["B"]]
    first, second = (i.details["rubrics"] for i in result.invocations)
    assert [(r["rubricId"], r["verdict"], r["agreement"]) for r in first] == [("A", "yes", "1/1")]
    assert second[0]["rationale"] == "does not say cancelled"
    assert result.details["rubricScores"] == {"A": 1.0, "B": 0.0}


def test_untyped_case_rubric_applies_to_every_invocation_and_other_types_do_not(fake, env):
    case_rubrics = [rubric("polite", "The response is polite."),
                    rubric("tools", "Calls the search tool.", "TOOL_USE_QUALITY"),
                    rubric("short", "At most two sentences.", "final_response_quality")]
    actual = [invocation("hi", "Hello there!"), invocation("bye", "Goodbye, friend.")]
    fake.on("Hello there", rubric_verdicts({"polite": True, "short": True}))
    fake.on("Goodbye", rubric_verdicts({"polite": True, "short": False}))
    result = score(FINAL, crit(), run_input(actual, rubrics=case_rubrics), service_for(env))
    assert sorted(properties(r.prompt) for r in fake.requests) == [["polite", "short"]] * 2
    assert [i.score for i in result.invocations] == [1.0, 0.5]
    assert result.score == 0.75  # 3 yes out of 4 (invocation, rubric) verdicts
    assert result.details["rubricScores"] == {"polite": 1.0, "short": 0.5}


def test_score_pools_rubric_verdicts_across_invocations(fake, env):
    actual = [invocation("q1", "answer one"), invocation("q2", "answer two")]
    expected = [invocation("q1", "x", rubrics=[rubric("a", "A", "FINAL_RESPONSE_QUALITY"),
                                              rubric("b", "B", "FINAL_RESPONSE_QUALITY"),
                                              rubric("c", "C", "FINAL_RESPONSE_QUALITY")]),
                invocation("q2", "y", rubrics=[rubric("d", "D", "FINAL_RESPONSE_QUALITY")])]
    fake.on("answer one", rubric_verdicts({"a": True, "b": True, "c": True}))
    fake.on("answer two", rubric_verdicts({"d": False}))
    result = score(FINAL, crit(), run_input(actual, expected), service_for(env))
    assert [i.score for i in result.invocations] == [1.0, 0.0]
    assert result.score == 0.75


def test_votes_per_rubric_with_split_samples(fake, env):
    rubrics = [rubric("r1", "Mentions the price."), rubric("r2", "Mentions the date.")]
    fake.on("The ticket", rubric_verdicts({"r1": True, "r2": True}),
            rubric_verdicts({"r1": True, "r2": False}), rubric_verdicts({"r1": False, "r2": False}))
    result = score(FINAL, crit(samples=3, rubrics=rubrics),
                   run_input([invocation("q", "The ticket costs 5 EUR.")]), service_for(env))
    verdicts = {r["rubricId"]: (r["verdict"], r["agreement"]) for r in result.invocations[0].details["rubrics"]}
    assert verdicts == {"r1": ("yes", "2/3"), "r2": ("no", "2/3")}
    assert result.score == 0.5


def test_answer_matched_by_property_text_and_missing_verdicts_count_as_failed(fake, env):
    rubrics = [rubric("r1", "Mentions the price."), rubric("r2", "Mentions the date.")]
    by_text = json_reply({"verdicts": [{"rubric_id": "**Mentions the price.**", "rationale": "x",
                                        "evidence": "", "verdict": "YES"}]})
    fake.on("The ticket", by_text, rubric_verdicts({"r1": True, "r2": True}),
            rubric_verdicts({"r1": True, "r2": True}))
    result = score(FINAL, crit(samples=3, rubrics=rubrics),
                   run_input([invocation("q", "The ticket costs 5 EUR.")]), service_for(env))
    by_id = {r["rubricId"]: r for r in result.invocations[0].details["rubrics"]}
    assert by_id["r1"]["votes"] == {"for": 3, "against": 0, "failed": 0}
    assert by_id["r2"]["votes"] == {"for": 2, "against": 0, "failed": 1}
    assert by_id["r2"]["missingInSamples"] == 1
    assert result.score == 1.0  # 2 of 3 agree and the missing one could not flip it


def test_conflicting_rubric_ids_are_an_error(fake, env):
    actual = [invocation("q", "a")]
    expected = [invocation("q", "a", rubrics=[rubric("x", "Other text", "FINAL_RESPONSE_QUALITY")])]
    result = score(FINAL, crit(rubrics=[rubric("x", "Some text")]), run_input(actual, expected),
                   service_for(env))
    assert result.error == ("rubric id 'x' is used in the criterion and in expected invocation 1 "
                            "with different text; give them different ids")
    assert fake.requests == []


def test_identical_duplicates_are_merged(fake, env):
    same = rubric("x", "Is polite.")
    fake.on("hello", rubric_verdicts({"x": True}))
    result = score(FINAL, crit(rubrics=[same]), run_input([invocation("q", "hello", rubrics=[same])],
                                                          rubrics=[same]), service_for(env))
    assert properties(fake.requests[0].prompt) == ["x"]
    assert result.score == 1.0


def test_no_rubrics_is_not_evaluated(fake, env):
    result = score(FINAL, crit(), run_input([invocation("q", "a")]), service_for(env))
    assert result.score is None and "no rubrics apply" in result.not_evaluated_reason
    assert fake.requests == []


def test_unreadable_answers_from_every_sample_make_an_error(fake, env):
    fake.on("The ticket", json_reply("Verdict: yes"))
    result = score(FINAL, crit(samples=2, rubrics=[rubric("r1", "Mentions the price.")]),
                   run_input([invocation("q", "The ticket costs 5 EUR.")]), service_for(env))
    assert result.score is None
    assert result.error.startswith("judge failed: invocation 1, rubric 'r1': undecided: 0 for, "
                                   "0 against, 2 failed (unreadable judge answer")
    assert result.error.endswith('the judge said: "Verdict: yes")')
    assert result.invocations[0].details["failedSamples"][0]["reply"] == "Verdict: yes"


def test_tool_use_quality_sees_the_tool_calls_and_its_own_rubric_type(fake, env):
    calls = {"tool_uses": [{"id": "1", "name": "search", "args": {"q": "paris"}},
                           {"id": "2", "name": "weather", "args": {"city": "Paris"}}],
             "tool_responses": [{"id": "2", "name": "weather", "response": {"temp": 21}},
                                {"id": "1", "name": "search", "response": {"hits": 3}}],
             "intermediate_responses": []}
    actual = [invocation("Weather in Paris?", "21 C", intermediate_data=calls)]
    case_rubrics = [rubric("t1", "Calls weather with the city.", "TOOL_USE_QUALITY"),
                    rubric("f1", "Final answer is friendly.", "FINAL_RESPONSE_QUALITY")]
    fake.on("Calls weather", rubric_verdicts({"t1": True}))
    result = score(TOOLS, crit(), run_input(actual, rubrics=case_rubrics), service_for(env))
    assert result.score == 1.0
    prompt = fake.requests[0].prompt
    start = prompt.index("<<<INPUT_JSON\n") + len("<<<INPUT_JSON\n")
    data = json.loads(prompt[start:prompt.index("\nINPUT_JSON>>>")])
    assert [p["rubric_id"] for p in data["properties"]] == ["t1"]
    assert "final_answer" not in data
    steps = data["tool_calls_and_responses"]
    assert [(s["tool_call"]["name"], s["tool_response"]["response"]) for s in steps] == [
        ("search", {"hits": 3}), ("weather", {"temp": 21})]  # paired by id, not position


def test_final_response_prompt_has_instructions_tools_and_answer(fake, env):
    details = {"agent_details": {"root": {"name": "root", "instructions": "Be brief.",
                                          "tool_declarations": [{"name": "weather"}]}}}
    actual = [invocation("Weather?", "Sunny.", app_details=details)]
    fake.on("Sunny.", rubric_verdicts({"r": True}))
    score(FINAL, crit(rubrics=[rubric("r", "Is brief.")]), run_input(actual), service_for(env))
    prompt = fake.requests[0].prompt
    start = prompt.index("<<<INPUT_JSON\n") + len("<<<INPUT_JSON\n")
    data = json.loads(prompt[start:prompt.index("\nINPUT_JSON>>>")])
    assert data["developer_instructions"] == {"root": "Be brief."}
    assert data["available_tools"] == {"root": [{"name": "weather"}]}
    assert data["final_answer"] == "Sunny."
    assert data["tool_calls_and_responses"] == "No tool was called."


TRAJECTORY = "rubric_based_multi_turn_trajectory_quality_v1"


def test_multi_turn_trajectory_judges_the_whole_conversation_once(fake, env):
    events = {"invocation_events": [
        {"author": "planner", "content": {"parts": [{"text": "Handing over to the booker."}]}},
        {"author": "booker", "content": {"parts": [{"function_call": {"name": "book", "args": {"n": 2}}}]}},
        {"author": "booker", "content": {"parts": [{"function_response": {"name": "book",
                                                                          "response": {"ok": True}}}]}}]}
    details = {"agent_details": {"booker": {"name": "booker", "instructions": "Book tables.",
                                            "tool_declarations": [{"function_declarations": [
                                                {"name": "book", "description": "Books"}]}]}}}
    actual = [invocation("Book for two", "Booked.", intermediate_data=events, app_details=details),
              invocation("Thanks", "You're welcome.",
                         rubrics=[rubric("t2", "Closes politely.", "TRAJECTORY_QUALITY"),
                                  rubric("f", "Final answer is short.", "FINAL_RESPONSE_QUALITY")])]
    case_rubrics = [rubric("deleg", "Delegates booking to the booker."),
                    rubric("other", "Uses the right tool.", "TOOL_USE_QUALITY")]
    fake.on("Handing over", rubric_verdicts({"deleg": True, "t2": False}),
            rubric_verdicts({"deleg": True, "t2": True}), rubric_verdicts({"deleg": False, "t2": False}))
    result = score(TRAJECTORY, crit(samples=3), run_input(actual, rubrics=case_rubrics),
                   service_for(env))
    assert len(fake.requests) == 3  # one request per sample for the whole conversation
    assert result.score == 0.5
    assert result.details["rubricScores"] == {"deleg": 1.0, "t2": 0.0}
    assert [i.score for i in result.invocations] == [None, 0.5]
    prompt = fake.requests[0].prompt
    start = prompt.index("<<<INPUT_JSON\n") + len("<<<INPUT_JSON\n")
    data = json.loads(prompt[start:prompt.index("\nINPUT_JSON>>>")])
    assert [p["rubric_id"] for p in data["properties"]] == ["deleg", "t2"]
    assert data["agent_tools"] == {"booker": [{"function_declarations": [
        {"name": "book", "description": "Books"}]}]}
    assert [t["user"] for t in data["conversation"]] == ["Book for two", "Thanks"]
    assert data["conversation"][0]["steps"] == [
        {"author": "planner", "text": "Handing over to the booker."},
        {"author": "booker", "tool_call": {"name": "book", "args": {"n": 2}}},
        {"author": "booker", "tool_output": {"name": "book", "response": {"ok": True}}}]


def test_final_response_quality_honours_include_intermediate_responses_in_final(fake, env):
    data = {"tool_uses": [], "tool_responses": [],
            "intermediate_responses": [["helper", [{"text": "The price is 5 EUR."}]]]}
    run = run_input([invocation("Price?", "Anything else?", intermediate_data=data)])
    fake.on(lambda p: "The price is 5 EUR" in p, rubric_verdicts({"price": True}))
    fake.on("Anything else?", rubric_verdicts({"price": False}))
    rubrics = [rubric("price", "States the price.")]
    assert score(FINAL, crit(rubrics=rubrics), run, service_for(env)).score == 0.0
    on = crit(rubrics=rubrics, include_intermediate_responses_in_final=True)
    assert score(FINAL, on, run, service_for(env)).score == 1.0
    prompt = fake.requests[-1].prompt
    start = prompt.index("<<<INPUT_JSON\n") + len("<<<INPUT_JSON\n")
    final = json.loads(prompt[start:prompt.index("\nINPUT_JSON>>>")])["final_answer"]
    assert final == "The price is 5 EUR.\nAnything else?"
