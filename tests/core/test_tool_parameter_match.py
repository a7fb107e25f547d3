"""tool_parameter_match: hand-worked cases, and equality with a reference implementation
written here from the metric's description on hundreds of generated cases."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from checker.metrics.base import Criterion, RunInput, ScoringContext
from checker.metrics.tool_parameter_match import ToolParameterMatch
from checker.models.evalset import Content, EvalCase, FunctionCall, IntermediateData, Invocation, Part
from corehelpers import call, case, evalset, invocation, replay, run_cli, write_json


def turn(*calls: FunctionCall) -> Invocation:
    return Invocation(user_content=Content(role="user", parts=[Part(text="q")]),
                      intermediate_data=IntermediateData(tool_uses=list(calls)))


def fc(name: str, **args) -> FunctionCall:
    return FunctionCall(name=name, args=args)


def score(actual: list[Invocation], expected: list[Invocation] | None, threshold: float = 0.5):
    run = RunInput(case=EvalCase(eval_id="c", conversation=expected or []), actual=actual,
                   expected=expected, scenario=None)
    return ToolParameterMatch().score(Criterion(threshold=threshold), run, ScoringContext())


# ------------------------------------------------------------------ hand-worked cases


def test_one_of_two_arguments_right_scores_half():
    result = score([turn(fc("search", city="Rome", rooms=2))],
                   [turn(fc("search", city="Rome", rooms=1))])
    assert result.score == 0.5
    mismatch = result.invocations[0].details["parameterMismatches"][0]
    assert mismatch["unmatchedArgs"] == ["rooms"] and mismatch["actualIndex"] == 1


def test_expected_call_without_arguments_is_full_credit_whatever_the_actual_args():
    assert score([turn(fc("search", city="Rome"))], [turn(fc("search"))]).score == 1.0


def test_extra_calls_do_not_displace_later_expected_calls():
    actual = turn(fc("log"), fc("search", city="Rome"), fc("search", city="Paris"))
    expected = turn(fc("search", city="Rome"), fc("search", city="Paris"))
    assert score([actual], [expected]).score == 1.0


def test_alignment_is_in_order_not_best_match():
    # The first expected search aligns with the first actual search (Paris): 0 of 1 argument;
    # the second expected search takes the next one (Rome): 0 of 1. Order, not content, aligns.
    actual = turn(fc("search", city="Paris"), fc("search", city="Rome"))
    expected = turn(fc("search", city="Rome"), fc("search", city="Paris"))
    assert score([actual], [expected]).score == 0.0


def test_missing_call_scores_zero_and_does_not_consume_a_later_match():
    # "log" is never called: 0 for it; "search" still aligns with the only actual call: 1.
    result = score([turn(fc("search", city="Rome"))],
                   [turn(fc("log"), fc("search", city="Rome"))])
    assert result.score == 0.5
    [missing] = result.invocations[0].details["parameterMismatches"]
    assert missing["actual"] is None and missing["call"] == 1


def test_no_actual_call_scores_zero():
    assert score([turn()], [turn(fc("search", city="Rome"))]).score == 0.0


def test_argument_values_compare_with_python_equality():
    # 1 == 1.0 == True in Python (and in ADK); "1" is not 1; None is not a missing key.
    assert score([turn(fc("f", a=1.0, b=True))], [turn(fc("f", a=1, b=1))]).score == 1.0
    assert score([turn(fc("f", a="1"))], [turn(fc("f", a=1))]).score == 0.0
    assert score([turn(fc("f"))], [turn(fc("f", a=None))]).score == 0.0
    assert score([turn(fc("f", x={"k": [1, 2]}))], [turn(fc("f", x={"k": [2, 1]}))]).score == 0.0


def test_turns_without_expected_calls_are_not_scored():
    # Turn 1 expects nothing (not scored, even if the agent called tools); turn 2 scores 1/3.
    actual = [turn(fc("noise")), turn(fc("f", a=1, b=0, c=0))]
    expected = [turn(), turn(fc("f", a=1, b=2, c=3))]
    result = score(actual, expected)
    assert result.invocations[0].score is None
    assert result.score == 1 / 3


def test_no_expected_call_in_any_turn_is_not_evaluated():
    result = score([turn(fc("f"))], [turn()])
    assert result.score is None and result.error is None
    assert "no turn" in result.not_evaluated_reason


def test_without_a_reference_conversation_it_is_not_evaluated():
    result = score([turn()], None)
    assert result.score is None and result.not_evaluated_reason


def test_turn_count_mismatch_is_a_metric_error():
    assert score([turn(), turn()], [turn(fc("f"))]).error


def test_case_score_is_mean_over_scored_turns():
    actual = [turn(fc("f", a=1)), turn(), turn(fc("g", a=1, b=2))]
    expected = [turn(fc("f", a=1)), turn(fc("g", a=1)), turn(fc("g", a=1, b=3))]
    assert score(actual, expected).score == (1.0 + 0.0 + 0.5) / 3


# ------------------------------------------------------------------ reference implementation


def reference_turn(actual: list[tuple[str, dict]], expected: list[tuple[str, dict]]) -> float | None:
    """Written from the description: each expected call takes the next actual call with its
    name (after the previous taken one); it scores the share of its arguments present with
    equal values (1 without arguments), 0 if unaligned; the turn is their mean."""
    if not expected:
        return None
    position, total = 0, 0.0
    for name, args in expected:
        taken = None
        for i in range(position, len(actual)):
            if actual[i][0] == name:
                taken = i
                break
        if taken is None:
            continue
        position = taken + 1
        got = actual[taken][1]
        total += 1.0 if not args else sum(
            1 for key in args if key in got and got[key] == args[key]) / len(args)
    return total / len(expected)


def reference_case(turns: list[tuple[list, list]]) -> float | None:
    scores = [s for s in (reference_turn(a, e) for a, e in turns) if s is not None]
    return sum(scores) / len(scores) if scores else None


names = st.sampled_from(["search", "book", "log"])
values = st.one_of(st.integers(0, 2), st.sampled_from([1.0, "1", "a", None, True, [1], {"k": 1}]))
arg_dicts = st.dictionaries(st.sampled_from(["a", "b", "c"]), values, max_size=3)
calls = st.lists(st.tuples(names, arg_dicts), max_size=5)
turns = st.lists(st.tuples(calls, calls), min_size=1, max_size=4)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(turns)
def test_equals_the_reference_on_generated_cases(generated):
    actual = [turn(*(FunctionCall(name=n, args=a) for n, a in a_calls)) for a_calls, _ in generated]
    expected = [turn(*(FunctionCall(name=n, args=a) for n, a in e_calls)) for _, e_calls in generated]
    result = score(actual, expected)
    want = reference_case(generated)
    if want is None:
        assert result.score is None and result.not_evaluated_reason
    else:
        assert result.score == want
        for got, (a_calls, e_calls) in zip(result.invocations, generated):
            assert got.score == reference_turn(a_calls, e_calls)


# ------------------------------------------------------------------ through the command line


def run_hotel_search(repo, threshold: float):
    """Expected search(city="Rome", rooms=1); the agent asked for 2 rooms: scores 0.5."""
    expected = invocation("hotel?", "ok", tools=[call("search", city="Rome", rooms=1)])
    write_json(repo / "evals/s.evalset.json", evalset("s", case("c1", expected)))
    write_json(repo / "evals/test_config.json", {"criteria": {"tool_parameter_match": threshold}})
    actual = invocation("hotel?", "ok", tools=[call("search", city="Rome", rooms=2)])
    write_json(repo / "runs.json", replay(("s", "c1", 1, [actual])))
    return run_cli(["run", "evals", "--replay", "runs.json", "--results", "r.json",
                    "--markdown", "r.md"], repo)


def test_cli_gates_on_the_threshold_and_explains_the_argument(repo):
    assert run_hotel_search(repo, 0.5).code == 0
    out = run_hotel_search(repo, 0.75)
    assert out.code == 1, out.output
    assert "tool_parameter_match 0.50 < 0.75" in out.stdout
    metric = json.loads((repo / "r.json").read_text())["evalSets"][0]["cases"][0]["metrics"][0]
    assert metric["name"] == "tool_parameter_match" and metric["score"] == 0.5
    report = (repo / "r.md").read_text()
    assert "rooms" in report and 'search(city="Rome", rooms=2)' in report


def test_check_run_annotation_names_the_argument(repo):
    from checker.action.github.publish import annotation_message
    from checker.models.results import Results

    assert run_hotel_search(repo, 1.0).code == 1
    results = Results.model_validate_json((repo / "r.json").read_text())
    message = annotation_message(results.eval_sets[0].cases[0])
    assert message == ('tool_parameter_match 0.50 < 1.00 (run 1, turn 1): expected call 1 '
                       'search(city="Rome", rooms=1): got search(city="Rome", rooms=2) (call 1); '
                       'rooms differs')
