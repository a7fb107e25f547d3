"""hallucinations_v1: sentence segmentation, then labels voted per sentence."""

from __future__ import annotations

import json

from .conftest import invocation, run_input, score, service_for
from .fake_gemini import error_reply, json_reply, labels, sentences

METRIC = "hallucinations_v1"
SEGMENT = "Split the text of an AI agent's response into sentences"
LABEL = "You check whether each sentence"


def crit(samples: int = 1, **extra) -> dict:
    return {"threshold": 0.8, "judge_model_options": {"num_samples": samples}, **extra}


def both(*needles: str):
    return lambda prompt: all(n in prompt for n in needles)


def data_of(prompt: str) -> dict:
    start = prompt.index("<<<INPUT_JSON\n") + len("<<<INPUT_JSON\n")
    return json.loads(prompt[start:prompt.index("\nINPUT_JSON>>>")])


WEATHER_TOOLS = {"tool_uses": [{"name": "get_weather", "args": {"city": "Paris"}}],
                 "tool_responses": [{"name": "get_weather", "response": {"temp_c": 21}}],
                 "intermediate_responses": [["root", [{"text": "Let me check. It is 30 C."}]]]}


def weather_run():
    return run_input([invocation("Weather in Paris?", "It is 21 C in Paris. It will snow tomorrow. Enjoy!",
                                 intermediate_data=WEATHER_TOOLS)])


def script_final(fake, *label_replies):
    fake.on(both(SEGMENT, "It will snow"), sentences(
        ["It is 21 C in Paris.", "It will snow tomorrow.", "Enjoy!"]))
    fake.on(both(LABEL, "It will snow"), *label_replies)


def test_sentences_are_labelled_and_the_unsupported_ones_shown(fake, env):
    script_final(fake, labels(["supported", "unsupported", "not_applicable"]))
    result = score(METRIC, crit(), weather_run(), service_for(env))
    assert result.error is None
    assert result.score == 2 / 3
    details = result.invocations[0].details
    assert (details["supported"], details["sentences"]) == (2, 3)
    assert details["unsupported"] == [{"sentence": "It will snow tomorrow.", "label": "unsupported"}]
    assert [s["label"] for s in details["steps"][0]["sentences"]] == [
        "supported", "unsupported", "not_applicable"]
    assert len(fake.requests) == 2  # one segmentation, one labelling sample
    label_data = data_of([r for r in fake.requests if LABEL in r.prompt][0].prompt)
    assert label_data["tool_calls_and_outputs"] == [
        {"step": 1, "tool_call": {"name": "get_weather", "args": {"city": "Paris"}},
         "tool_response": {"name": "get_weather", "response": {"temp_c": 21}}}]
    assert [s["sentence"] for s in label_data["sentences"]] == [
        "It is 21 C in Paris.", "It will snow tomorrow.", "Enjoy!"]
    # The agent's own intermediate statement is not evidence.
    assert "It is 30 C" not in json.dumps(label_data)


def test_labels_are_voted_per_sentence(fake, env):
    script_final(fake, labels(["supported", "unsupported", "not_applicable"]),
                 labels(["contradictory", "supported", "not_applicable"]),
                 labels(["supported", "disputed", "opinion"]))  # 'opinion' is no label: failed
    result = score(METRIC, crit(samples=3), weather_run(), service_for(env))
    # sentence 1: 2 good / 1 bad -> good; 2: 1 good / 2 bad -> bad; 3: sample 3 unreadable,
    # so 2 good, 0 bad, 1 failed -> good. The label shown is the commonest on the winning side,
    # a tie going to the more severe label (disputed before unsupported).
    assert result.score == 2 / 3
    sentences_shown = result.invocations[0].details["steps"][0]["sentences"]
    assert [(s["label"], s["agreement"]) for s in sentences_shown] == [
        ("supported", "2/3"), ("disputed", "2/3"), ("not_applicable", "2/3")]
    assert len(fake.requests) == 4


def test_evaluate_intermediate_nl_responses(fake, env):
    script_final(fake, labels(["supported", "supported", "not_applicable"]))
    fake.on(both(SEGMENT, "Let me check"), sentences(["Let me check.", "It is 30 C."]))
    fake.on(both(LABEL, "Let me check"), labels(["not_applicable", "contradictory"]))
    off = score(METRIC, crit(), weather_run(), service_for(env))
    assert off.score == 1.0 and len(fake.requests) == 2
    on = score(METRIC, crit(evaluate_intermediate_nl_responses=True), weather_run(), service_for(env))
    assert on.score == 4 / 5  # sentences weigh equally across the two texts
    assert [s["kind"] for s in on.invocations[0].details["steps"]] == ["intermediate", "final"]
    assert on.invocations[0].details["unsupported"] == [{"sentence": "It is 30 C.", "label": "contradictory"}]


def test_events_give_each_intermediate_text_only_the_tool_calls_before_it(fake, env):
    events = {"invocation_events": [
        {"author": "root", "content": {"parts": [{"text": "Checking the weather."}]}},
        {"author": "root", "content": {"parts": [{"function_call": {"name": "get_weather", "args": {}}}]}},
        {"author": "root", "content": {"parts": [{"function_response": {"name": "get_weather",
                                                                        "response": {"temp_c": 21}}}]}},
    ]}
    run = run_input([invocation("Weather?", "It is 21 C.", intermediate_data=events)])
    fake.on(both(SEGMENT, "Checking the weather"), sentences(["Checking the weather."]))
    fake.on(both(LABEL, "Checking the weather"), labels(["not_applicable"]))
    fake.on(both(SEGMENT, "It is 21 C."), sentences(["It is 21 C."]))
    fake.on(both(LABEL, "It is 21 C."), labels(["supported"]))
    result = score(METRIC, crit(evaluate_intermediate_nl_responses=True), run, service_for(env))
    assert result.score == 1.0
    contexts = {data_of(r.prompt)["response"]: data_of(r.prompt)["tool_calls_and_outputs"]
                for r in fake.requests if LABEL in r.prompt}
    assert contexts["Checking the weather."] == "No tool was called."
    assert contexts["It is 21 C."][0]["tool_response"]["response"] == {"temp_c": 21}


def test_segmentation_failure_is_an_error(fake, env):
    fake.on(SEGMENT, error_reply(500, "down"))
    result = score(METRIC, crit(), weather_run(), service_for(env))
    assert result.score is None
    assert result.error == ("judge failed: invocation 1: splitting the final response failed "
                            "(judge call failed after 3 attempt(s): HTTP 500 INTERNAL: down)")


def test_no_text_is_not_evaluated(fake, env):
    result = score(METRIC, crit(), run_input([invocation("hi")]), service_for(env))
    assert result.score is None and result.not_evaluated_reason
    assert fake.requests == []


def test_run_score_is_the_mean_over_invocations(fake, env):
    run = run_input([invocation("a", "First answer."), invocation("b", "Second answer. More.")])
    fake.on(both(SEGMENT, "First answer"), sentences(["First answer."]))
    fake.on(both(LABEL, "First answer"), labels(["unsupported"]))
    fake.on(both(SEGMENT, "Second answer"), sentences(["Second answer.", "More."]))
    fake.on(both(LABEL, "Second answer"), labels(["supported", "supported"]))
    result = score(METRIC, crit(), run, service_for(env))
    assert [i.score for i in result.invocations] == [0.0, 1.0]
    assert result.score == 0.5
    assert result.details["unsupportedSentences"] == 1


def test_missing_sentence_labels_count_as_failed_samples(fake, env):
    script_final(fake, json_reply({"labels": [{"index": 1, "label": "supported", "rationale": ""}]}))
    result = score(METRIC, crit(), weather_run(), service_for(env))
    assert result.score is None
    assert result.error.startswith("judge failed: invocation 1, sentence 2: undecided")
