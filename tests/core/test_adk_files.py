"""Eval files shaped like the ones Google ships with ADK (written for these tests, not copied):
what ADK accepts runs here too, and real mistakes are still refused with a clear message.

- a legacy ``.test.json`` with a full session dump beside it as ``initial.session.json``
  (id, app_name, user_id, state, events, last_update_time), or passed with --initial-session;
- an eval set with ``"eval_cases": []`` beside a real one;
- thresholds written as strings ("1.0"), as ADK's pydantic models read them;
- a JSON file named ``*.evalset.json`` that is something else entirely.
"""

from __future__ import annotations

import json

import pytest

from checker.inputs.discover import discover
from corehelpers import call, case, evalset, invocation, replay, run_cli, write_json
from test_input_errors import assert_input_error

QUERY_LIST = [
    {"query": "Plan a trip to Rome", "expected_tool_use": [
        {"tool_name": "find_flights", "tool_input": {"to": "Rome"}}],
     "reference": "Here are flights to Rome."},
]

SESSION_DUMP = {
    "id": "a1b2c3d4-session",
    "app_name": "trip_planner_agent",
    "user_id": "test_user",
    "state": {"origin": "San Francisco", "budget": "4000"},
    "events": [{"invocation_id": "e-1", "author": "user", "actions": {"state_delta": {}},
                "content": {"role": "user", "parts": [{"text": "hello"}]}, "timestamp": 1.0}],
    "last_update_time": 1732000000.123,
}


def trip_planner(repo, session_name="initial.session.json", session=SESSION_DUMP):
    folder = repo / "trip_planner_agent"
    write_json(folder / "trip_inquiry.test.json", QUERY_LIST)
    if session is not None:
        write_json(folder / session_name, session)
    actual = invocation("Plan a trip to Rome", "Here are flights to Rome.",
                        tools=[call("find_flights", to="Rome")], invocation_id="turn-1")
    write_json(repo / "runs.json", replay(("trip_inquiry", "trip_inquiry", 1, [actual])))
    return folder


def test_a_session_dump_beside_a_legacy_file_is_read_like_adk(repo):
    trip_planner(repo)
    discovery = discover([str(repo / "trip_planner_agent")], root=repo)
    (target,), notes = discovery.targets, discovery.notes
    session = target.loaded.eval_set.eval_cases[0].session_input
    assert (session.app_name, session.user_id) == ("trip_planner_agent", "test_user")
    assert session.state == {"origin": "San Francisco", "budget": "4000"}
    assert notes[:1] == ["trip_planner_agent/initial.session.json: a session dump: read state, "
                     "app_name and user_id, as ADK does; ignored id, events (1), last_update_time"]
    out = run_cli(["run", "trip_planner_agent", "--replay", "runs.json", "--results", "r.json"], repo)
    assert out.code == 0, out.output
    assert "evalcheck: warning: trip_planner_agent/initial.session.json: a session dump" in out.stderr
    assert "a session dump" in json.loads((repo / "r.json").read_text())["metadata"]["warnings"][0]


def test_the_hyphenated_name_still_works_and_two_files_are_a_mistake(repo):
    folder = trip_planner(repo, session_name="initial-session.json",
                          session={"state": {"k": 1}, "app_name": "a", "user_id": "u"})
    (target,) = discover([str(repo / "trip_planner_agent")], root=repo).targets
    assert target.loaded.eval_set.eval_cases[0].session_input.state == {"k": 1}
    write_json(folder / "initial.session.json", SESSION_DUMP)
    out = run_cli(["run", "trip_planner_agent", "--replay", "runs.json"], repo)
    assert_input_error(out, "trip_planner_agent/trip_inquiry.test.json", "two initial session files",
                       "initial-session.json", "initial.session.json")


def test_run_takes_an_initial_session_file(repo):
    trip_planner(repo, session=None)
    write_json(repo / "sessions/start.json", SESSION_DUMP)
    out = run_cli(["run", "trip_planner_agent", "--replay", "runs.json",
                   "--initial-session", "sessions/start.json"], repo)
    assert out.code == 0, out.output
    assert "sessions/start.json: a session dump" in out.stderr
    (target,) = discover([str(repo / "trip_planner_agent")], root=repo,
                         initial_session=repo / "sessions/start.json").targets
    assert target.loaded.eval_set.eval_cases[0].session_input.user_id == "test_user"


def test_a_mistake_in_a_given_session_file_names_that_file(repo):
    trip_planner(repo, session=None)
    write_json(repo / "my-session.json", {"stat": {"k": 1}, "app_name": "a", "user_id": "u"})
    out = run_cli(["run", "trip_planner_agent", "--replay", "runs.json",
                   "--initial-session", "my-session.json"], repo)
    line = assert_input_error(out, "my-session.json at $", "unknown key 'stat'", "state")
    assert "initial-session.json" not in line
    # A dump is recognised by its own keys; a typo inside one is still a mistake.
    write_json(repo / "my-session.json", {**SESSION_DUMP, "evnets": []})
    out = run_cli(["run", "trip_planner_agent", "--replay", "runs.json",
                   "--initial-session", "my-session.json"], repo)
    assert_input_error(out, "my-session.json at $", "unknown key 'evnets'")


def test_migrate_reads_a_session_dump_and_says_what_it_ignored(repo):
    trip_planner(repo, session=None)
    write_json(repo / "trip_planner_agent/initial.session.json", SESSION_DUMP)
    out = run_cli(["migrate", "trip_planner_agent/trip_inquiry.test.json", "new.evalset.json"], repo)
    assert out.code == 0, out.output
    assert "ignored id, events (1), last_update_time" in out.stderr
    written = json.loads((repo / "new.evalset.json").read_text())
    assert written["eval_cases"][0]["session_input"] == {
        "app_name": "trip_planner_agent", "user_id": "test_user",
        "state": {"origin": "San Francisco", "budget": "4000"}}


def test_initial_session_for_eval_set_files_only_is_refused(repo):
    write_json(repo / "evals/s.evalset.json", evalset("s", case("c1")))
    write_json(repo / "s.json", SESSION_DUMP)
    write_json(repo / "runs.json", replay(("s", "c1", 1, [invocation()])))
    out = run_cli(["run", "evals", "--replay", "runs.json", "--initial-session", "s.json"], repo)
    assert_input_error(out, "s.json", "--initial-session is for legacy eval files", "session_input")


def test_an_empty_eval_set_is_skipped_with_a_warning(repo):
    write_json(repo / "evals/s.evalset.json", evalset("s", case("c1")))
    write_json(repo / "evals/empty.evalset.json",
               {"eval_set_id": "empty", "name": "empty", "eval_cases": [], "creation_timestamp": 0.0})
    write_json(repo / "runs.json", replay(("s", "c1", 1, [invocation()])))
    out = run_cli(["run", "evals", "--replay", "runs.json", "--results", "r.json"], repo)
    assert out.code == 0, out.output
    assert ("evalcheck: warning: evals/empty.evalset.json: $.eval_cases: the eval set has no "
            "eval cases; skipped") in out.stderr
    results = json.loads((repo / "r.json").read_text())
    assert [s["evalSetId"] for s in results["evalSets"]] == ["s"]


def test_only_empty_eval_sets_is_nothing_to_run(repo):
    for name in ("a", "b"):
        write_json(repo / f"evals/{name}.evalset.json", {"eval_set_id": name, "eval_cases": []})
    write_json(repo / "runs.json", replay())
    assert_input_error(run_cli(["run", "evals", "--replay", "runs.json"], repo),
                       "no eval cases to run: all 2 eval sets found are empty")


@pytest.mark.parametrize("criteria", [
    {"tool_trajectory_avg_score": "1.0", "response_match_score": "0.8"},
    {"tool_trajectory_avg_score": {"threshold": "1", "match_type": "IN_ORDER", "ignore_args": "false"},
     "response_match_score": {"threshold": "8e-1"}},
])
def test_string_thresholds_read_as_adk_reads_them(repo, criteria):
    write_json(repo / "evals/s.evalset.json", evalset("s", case("c1")))
    write_json(repo / "evals/test_config.json", {"criteria": criteria})
    write_json(repo / "runs.json", replay(("s", "c1", 1, [invocation()])))
    out = run_cli(["run", "evals", "--replay", "runs.json", "--results", "r.json"], repo)
    assert out.code == 0, out.output
    metrics = json.loads((repo / "r.json").read_text())["evalSets"][0]["cases"][0]["metrics"]
    assert [(m["name"], m["threshold"]) for m in metrics[:2]] == [
        ("tool_trajectory_avg_score", 1.0), ("response_match_score", 0.8)]


@pytest.mark.parametrize(("value", "fragment"), [
    ("high", 'a threshold must be a number, got "high"'),
    (True, "a criterion is a number (the threshold) or an object, got bool"),
    ("nan", "threshold nan is out of range"),
    ("1.5", "threshold 1.5 is out of range"),
])
def test_real_threshold_mistakes_are_still_refused(repo, value, fragment):
    write_json(repo / "evals/s.evalset.json", evalset("s", case("c1")))
    write_json(repo / "evals/test_config.json", {"criteria": {"response_match_score": value}})
    write_json(repo / "runs.json", replay(("s", "c1", 1, [invocation()])))
    assert_input_error(run_cli(["run", "evals", "--replay", "runs.json"], repo),
                       "evals/test_config.json at $.criteria.response_match_score", fragment)


@pytest.mark.parametrize(("name", "data"), [
    ("evals/pipeline.evalset.json", {"version": 2, "name": "nightly", "steps": [{"run": "x"}],
                                     "metadata": {}}),
    ("evals/fixtures.test.json", [1, 2, 3]),
    ("evals/users.test.json", [{"id": 1, "email": "a@example.com"}]),
])
def test_a_foreign_file_named_like_an_eval_file_says_so(repo, name, data):
    write_json(repo / name, data)
    write_json(repo / "runs.json", replay())
    line = assert_input_error(run_cli(["run", "evals", "--replay", "runs.json"], repo),
                              f"{name} at $: not an ADK eval")
    assert "unknown key" not in line and "did you mean" not in line


def test_a_broken_eval_set_still_gets_the_key_by_key_message(repo):
    broken = {"eval_id": "c", "conversation": [{"user_content": {"parts": []}, "final_respnse": {}}]}
    write_json(repo / "evals/s.evalset.json", {"eval_set_id": "s", "eval_cases": [broken], "versoin": 1})
    write_json(repo / "runs.json", replay())
    line = assert_input_error(run_cli(["run", "evals", "--replay", "runs.json"], repo),
                              "unknown key 'final_respnse'", "did you mean 'final_response'?")
    assert "not an ADK eval set" not in line


def test_token_counts_written_as_numeric_strings_are_counted(repo):
    write_json(repo / "evals/s.evalset.json", evalset("s", case("c1")))
    write_json(repo / "evals/test_config.json", {"criteria": {"response_match_score": 0.5}})
    turn = invocation()
    turn["intermediate_data"] = {"invocation_events": [
        {"author": "agent", "usage_metadata": {"prompt_token_count": "12", "candidates_token_count": 3}}]}
    write_json(repo / "runs.json", replay(("s", "c1", 1, [turn])))
    out = run_cli(["run", "evals", "--replay", "runs.json", "--results", "r.json"], repo)
    assert out.code == 0, out.output
    metrics = json.loads((repo / "r.json").read_text())["evalSets"][0]["cases"][0]["metrics"]
    tokens = next(m for m in metrics if m["name"] == "token_usage_v1")
    assert tokens["score"] == 15 and tokens["details"]["prompt_tokens"] == 12


def test_a_case_filter_on_an_empty_eval_set_says_it_is_empty(repo):
    write_json(repo / "evals/empty.evalset.json", {"eval_set_id": "empty", "eval_cases": []})
    write_json(repo / "runs.json", replay())
    assert_input_error(run_cli(["run", "evals/empty.evalset.json:c1", "--replay", "runs.json"], repo),
                       "no eval case 'c1' in this file", "the eval set has no eval cases")


def test_initial_session_with_mixed_files_says_which_it_does_not_apply_to(repo):
    trip_planner(repo, session=None)
    write_json(repo / "trip_planner_agent/other.evalset.json", evalset("other", case("c1")))
    notes = discover([str(repo / "trip_planner_agent")], root=repo,
                     initial_session=write_json(repo / "s.json", {"state": {}, "app_name": "a", "user_id": "u"})).notes
    assert notes[:1] == ["trip_planner_agent/other.evalset.json: --initial-session not used: an EvalSet "
                     "file gives each case its initial session in session_input"]


# ------------------------------------------------------------------ against ADK's own models

EVAL_SET = {"eval_set_id": "s", "eval_cases": [{"eval_id": "c", "conversation": [
    {"invocation_id": "i", "user_content": {"parts": [{"text": "hi"}]}}]}]}


def _with(path: tuple, value) -> dict:
    data = json.loads(json.dumps(EVAL_SET))
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


EVAL_SET_FIELDS = [
    (("creation_timestamp",), "12.5"), (("eval_cases", 0, "creation_timestamp"), "12"),
    (("eval_cases", 0, "conversation", 0, "duration"), "1.5"),
    (("eval_cases", 0, "conversation", 0, "creation_timestamp"), "7"),
    (("eval_cases", 0, "conversation", 0, "user_content", "parts", 0, "thought"), "true"),
    (("eval_cases", 0, "eval_id"), 5), (("eval_set_id",), 5),
    (("eval_cases", 0, "conversation", 0, "invocation_id"), 5),
    (("eval_cases", 0, "conversation", 0, "user_content", "parts", 0, "text"), 5),
    (("eval_cases", 0, "conversation", 0, "duration"), "soon"),
]


@pytest.mark.parametrize(("path", "value"), EVAL_SET_FIELDS)
def test_eval_set_fields_coerce_exactly_where_adk_coerces(path, value):
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
    from pydantic import ValidationError

    from checker.models.evalset import EvalSet

    data = _with(path, value)

    def accepts(model) -> bool:
        try:
            model.model_validate(data)
            return True
        except ValidationError:
            return False

    assert accepts(EvalSet) == accepts(AdkEvalSet)


@pytest.mark.parametrize("criterion", [
    "1.0", "0.5", "8e-1", "abc",
    {"threshold": "0.5"},
    {"threshold": "1", "match_type": "IN_ORDER", "ignore_args": "true"},
    {"threshold": "1", "match_type": "1"},
    {"threshold": 1, "include_intermediate_responses_in_final": "yes"},
])
def test_criteria_coerce_exactly_where_adk_coerces(criterion):
    from google.adk.evaluation.eval_config import EvalConfig as AdkEvalConfig
    from google.adk.evaluation.eval_config import get_eval_metrics_from_config

    from checker.inputs.criteria import build_config
    from checker.errors import InputError

    try:
        metrics = get_eval_metrics_from_config(
            AdkEvalConfig.model_validate({"criteria": {"tool_trajectory_avg_score": criterion}}))
        from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator

        TrajectoryEvaluator(eval_metric=metrics[0])  # ADK re-validates the criterion here
        adk = metrics[0].threshold
    except Exception:
        adk = None
    try:
        ours = build_config({"criteria": {"tool_trajectory_avg_score": criterion}}, None, "t").metrics[0].threshold
    except InputError:
        ours = None
    assert ours == adk


def test_migrate_refuses_a_legacy_file_with_a_duplicated_name(repo):
    turn = [{"query": "hi", "reference": "hello"}]
    write_json(repo / "old.test.json", [{"name": "paris", "data": turn}, {"name": "paris", "data": turn}])
    out = run_cli(["migrate", "old.test.json", "new.evalset.json"], repo)
    assert_input_error(out, "old.test.json at $[1].name", "duplicate name 'paris'")
    assert not (repo / "new.evalset.json").exists()
