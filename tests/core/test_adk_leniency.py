"""Accept what ADK runs (issue 23): each file here is one google-adk 2.13 loads and runs - checked
with ADK's own models and readers, not assumed - with a key ADK ignores. evalcheck runs it too,
warning once about the key (naming key and file), and the key changes nothing. Plus Google's
starter layout discovery (``eval_config.json``, ``*_evalset.json``) and the default-criteria note.
"""

from __future__ import annotations

import json

import pytest
from google.adk.evaluation.eval_config import EvalConfig as AdkEvalConfig
from google.adk.evaluation.local_eval_sets_manager import load_eval_set_from_file

from checker.inputs.discover import discover
from corehelpers import case, evalset, invocation, replay, run_cli, write_json

CRITERIA = {"criteria": {"response_match_score": 0.5}}


def adk_loads(path) -> object:
    """What ``adk eval`` does with an eval file (EvalSet, else the legacy {name, data} list)."""
    return load_eval_set_from_file(str(path), "x")


# (file name, content, the warning's JSON path, the key) - each shaped like a file found in a
# public repository (issue 23's corpus).
IGNORED_IN_EVAL_FILES = [
    ("top_metadata.evalset.json", {**evalset("s", case("c1")), "metadata": {"owner": "team"}}, "$", "metadata"),
    ("case_extra.evalset.json", evalset("s", {**case("c1"), "tags": ["smoke"]}), "$.eval_cases[0]", "tags"),
    ("session_extra.evalset.json",
     evalset("s", {**case("c1"), "session_input": {"app_name": "a", "user_id": "u", "locale": "en"}}),
     "$.eval_cases[0].session_input", "locale"),
    ("legacy_case.evalset.json",
     [{"name": "c1", "data": [{"query": "Weather in Paris?", "reference": "Sunny.", "test_case_id": "t1"}]}],
     "$[0].data[0]", "test_case_id"),
]


@pytest.mark.parametrize("name,data,path,key", IGNORED_IN_EVAL_FILES, ids=[i[0] for i in IGNORED_IN_EVAL_FILES])
def test_eval_file_adk_runs_is_run_with_a_warning(repo, name, data, path, key):
    write_json(repo / "evals" / name, data)
    write_json(repo / "evals/test_config.json", CRITERIA)
    adk_loads(repo / "evals" / name)  # ADK loads it: no exception
    set_id = "c1" if isinstance(data, list) else "s"
    set_id = name.removesuffix(".evalset.json") if isinstance(data, list) else set_id
    response = "Sunny." if isinstance(data, list) else "ok"
    write_json(repo / "runs.json", replay((set_id, "c1", 1, [invocation(response=response)])))
    out = run_cli(["run", "evals", "--replay", "runs.json", "--results", "r.json"], repo)
    assert out.code == 0, out.output
    warning = f"evalcheck: warning: evals/{name}: {path}: unknown key '{key}' ignored, as ADK ignores it"
    assert warning in out.stderr.splitlines()
    assert warning.removeprefix("evalcheck: warning: ") in json.loads((repo / "r.json").read_text())["metadata"]["warnings"]


def test_criteria_file_keys_adk_ignores(repo):
    config = {"description": "Criteria for the weather agent",
              "criteria": {"response_match_score": {"threshold": 0.5, "criteria": "ROUGE-1"}}}
    AdkEvalConfig.model_validate(config)  # ADK reads it
    write_json(repo / "evals/test_config.json", config)
    write_json(repo / "evals/s.evalset.json", evalset("s", case("c1")))
    write_json(repo / "runs.json", replay(("s", "c1", 1, [invocation(response="ok")])))
    out = run_cli(["run", "evals", "--replay", "runs.json"], repo)
    assert out.code == 0, out.output
    assert ("evalcheck: warning: evals/test_config.json: $: unknown key 'description' ignored, "
            "as ADK ignores it") in out.stderr
    assert ("evalcheck: warning: evals/test_config.json: $.criteria.response_match_score: unknown key "
            "'criteria' ignored, as ADK ignores it (response_match_score does not read it)") in out.stderr


def test_a_key_in_many_cases_is_one_warning(repo):
    write_json(repo / "evals/s.evalset.json", evalset("s", *({**case(f"c{i}"), "tags": []} for i in range(5))))
    write_json(repo / "evals/test_config.json", CRITERIA)
    write_json(repo / "runs.json", replay(*((("s", f"c{i}", 1, [invocation(response="ok")])) for i in range(5))))
    for shard in ([], ["--shard", "1/1"]):  # read whole, and case by case
        out = run_cli(["run", "evals", "--replay", "runs.json", *shard], repo)
        lines = [ln for ln in out.stderr.splitlines() if "unknown key 'tags'" in ln]
        assert lines == ["evalcheck: warning: evals/s.evalset.json: $.eval_cases[0] (and 4 more like it): "
                         "unknown key 'tags' ignored, as ADK ignores it"], out.stderr


def test_final_session_state_is_warned_as_not_compared(repo):
    """ADK reads ``final_session_state`` into its EvalCase and no metric of it checks it: a
    case that gives one runs, with one warning per file saying it is not compared (read
    whole and case by case), and the result is the same with or without it."""
    state = {"booking": "confirmed"}
    cases = [{**case(f"c{i}"), **({"final_session_state": state} if i else {})} for i in range(4)]
    write_json(repo / "evals/s.evalset.json", evalset("s", *cases))
    assert adk_loads(repo / "evals/s.evalset.json").eval_cases[1].final_session_state == state
    write_json(repo / "evals/test_config.json", CRITERIA)
    write_json(repo / "runs.json", replay(*((("s", f"c{i}", 1, [invocation(response="ok")])) for i in range(4))))
    for shard in ([], ["--shard", "1/1"]):  # read whole, and case by case
        out = run_cli(["run", "evals", "--replay", "runs.json", *shard], repo)
        assert out.code == 0, out.output
        lines = [ln for ln in out.stderr.splitlines() if "final_session_state" in ln]
        assert lines == ["evalcheck: warning: evals/s.evalset.json: $.eval_cases[1].final_session_state "
                         "(and 2 more like it): not compared: like adk eval, evalcheck does not check "
                         "the session state a run ends with; a metric on the conversation (e.g. "
                         "tool_trajectory_avg_score, rubrics) can"], out.stderr


def test_legacy_initial_state_becomes_the_initial_session_state(repo):
    """adk eval drops ``initial_state`` (the agent starts with an empty state); evalcheck reads it."""
    data = [{"name": "shopping", "initial_state": {"brand": "BSOAgentTestBrand"},
             "data": [{"query": "hello", "reference": "Hi! Which brand?"}]}]
    write_json(repo / "evals/eval_data1.evalset.json", data)
    assert adk_loads(repo / "evals/eval_data1.evalset.json").eval_cases[0].session_input is None
    discovery = discover([str(repo / "evals")], root=repo)
    (target,), notes = discovery.targets, discovery.notes
    assert target.loaded.eval_set.eval_cases[0].session_input.state == {"brand": "BSOAgentTestBrand"}
    assert ("evals/eval_data1.evalset.json: $[0].initial_state: read as the case's initial session state "
            "(adk eval drops this key and starts with an empty state)") in notes


# ------------------------------------------------------------------ criteria discovery


def _targets(repo, *paths):
    discovery = discover([str(repo / p) for p in paths] or [str(repo)], root=repo)
    targets, notes = discovery.targets, discovery.notes
    return {t.loaded.display_path: t.config.display_path for t in targets}, notes


def test_starter_layout_eval_config_json_in_a_parent(repo):
    write_json(repo / "tests/eval/evalsets/basic.evalset.json", evalset("basic_eval", case("c1")))
    write_json(repo / "tests/eval/evalsets/more_evalset.json", evalset("more", case("c1")))
    write_json(repo / "tests/eval/eval_config.json", CRITERIA)
    found, notes = _targets(repo)
    assert found == {"tests/eval/evalsets/basic.evalset.json": "tests/eval/eval_config.json",
                     "tests/eval/evalsets/more_evalset.json": "tests/eval/eval_config.json"}
    assert not [n for n in notes if "default criteria" in n]


def test_nearest_criteria_file_wins_and_test_config_first_in_one_folder(repo):
    write_json(repo / "a/x.evalset.json", evalset("x", case("c1")))
    write_json(repo / "a/b/y.evalset.json", evalset("y", case("c1")))
    write_json(repo / "a/test_config.json", CRITERIA)
    write_json(repo / "a/eval_config.json", {"criteria": {"response_match_score": 0.1}})
    write_json(repo / "a/b/eval_config.json", {"criteria": {"response_match_score": 0.2}})
    found, _ = _targets(repo)
    assert found == {"a/x.evalset.json": "a/test_config.json", "a/b/y.evalset.json": "a/b/eval_config.json"}


def test_no_criteria_file_says_what_was_assumed_and_spots_a_lookalike(repo):
    write_json(repo / "agents/a/x.evalset.json", evalset("x", case("c1")))
    write_json(repo / "agents/a/y.evalset.json", evalset("y", case("c1")))
    write_json(repo / "agents/a/test-config.json", CRITERIA)
    found, notes = _targets(repo)
    assert set(found.values()) == {None}
    assert notes == ["no test_config.json beside agents/a/x.evalset.json, agents/a/y.evalset.json: ADK's "
                     "default criteria (tool_trajectory_avg_score 1.0, response_match_score 0.8); "
                     "agents/a/test-config.json is not read: did you mean test_config.json?"]
    (repo / "agents/a/test-config.json").rename(repo / "agents/a/testconfig.json")
    assert "agents/a/testconfig.json is not read: did you mean test_config.json?" in _targets(repo)[1][0]
