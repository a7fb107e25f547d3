"""Every class of bad input: exit status 2 and one line naming the file and the JSON path.

Each test runs the real command line (click's runner, in-process, exceptions not caught, so
an unexpected exception fails the test with its traceback) and checks the exit status, that
stderr is exactly one line, the file named in it, the JSON path (or the line, for text that
is not JSON) and that no traceback was printed. test_console_script_* run the installed
console script in a subprocess for a few of the classes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from corehelpers import call, case, evalset, invocation, replay, run_cli, write_json

EVAL = "evals/s.evalset.json"
CONFIG = "evals/test_config.json"


def assert_input_error(outcome, *fragments: str) -> str:
    assert outcome.code == 2, outcome.output
    assert "Traceback" not in outcome.output
    # warnings (e.g. "no test_config.json ...: ADK's default criteria") may come first
    lines = [ln for ln in outcome.stderr.strip().splitlines() if not ln.startswith("evalcheck: warning: ")]
    assert len(lines) == 1, outcome.stderr
    line = lines[0]
    assert line.startswith("evalcheck: error: "), line
    for fragment in fragments:
        assert fragment in line, f"{fragment!r} not in {line!r}"
    return line


def setup(repo: Path, data: Any = None, *, text: str | None = None, runs: Any = None,
          config: Any = None, name: str = EVAL) -> None:
    """An eval file (data or raw text), a replay file runs.json and optionally a config."""
    path = repo / name
    if text is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    else:
        write_json(path, data if data is not None else evalset("s", case("c1")))
    write_json(repo / "runs.json", runs if runs is not None else replay(("s", "c1", 1, [invocation()])))
    if config is not None:
        write_json(repo / CONFIG, config)


# Every eval file check runs twice: as a whole run, and as a shard, whose first look at
# the suite reads the eval files case by case (checker/inputs/evalfile.py, outline_only) and
# must give the same one line.
SHARD_ARGS: list[str] = []


@pytest.fixture(autouse=True, params=["whole", "shard"])
def as_shard(request, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "SHARD_ARGS",
                        ["--shard", "1/1"] if request.param == "shard" else [])


def run(repo: Path, *args: str):
    return run_cli(["run", *(args or ("evals",)), "--replay", "runs.json", *SHARD_ARGS], repo)


def with_case(**fields: Any) -> dict[str, Any]:
    return evalset("s", {**case("c1"), **fields})


def sanity_check_setup_is_valid(repo: Path) -> None:
    setup(repo)
    assert run(repo).code == 0


def test_valid_setup_passes(repo):
    sanity_check_setup_is_valid(repo)


# ------------------------------------------------------------------ the eval file


def test_bad_json_names_the_line(repo):
    setup(repo, text='{\n  "eval_set_id": "s",\n  "eval_cases": [,]\n}\n')
    assert_input_error(run(repo), f"{EVAL}:3", "invalid JSON")


def test_empty_file(repo):
    setup(repo, text="  \n")
    assert_input_error(run(repo), EVAL, "empty")


def test_json_that_is_not_an_object_or_list(repo):
    setup(repo, text='"just a string"')
    assert_input_error(run(repo), EVAL, "at $:")


@pytest.mark.parametrize("data,path", [
    ({"eval_set_id": "s", "eval_cases": {}}, "$.eval_cases"),
    ({"eval_set_id": 7, "eval_cases": [case("c1")]}, "$.eval_set_id"),
    (evalset("s", {"eval_id": 5, "conversation": [invocation()]}), "$.eval_cases[0].eval_id"),
    (evalset("s", case("c1", {"user_content": {"parts": {"text": "hi"}}})),
     "$.eval_cases[0].conversation[0].user_content.parts"),
    (evalset("s", case("c1", invocation(tools=[{"name": "f", "args": "city=Paris"}]))),
     "$.eval_cases[0].conversation[0].intermediate_data.tool_uses[0].args"),
    (evalset("s", case("c1", {**invocation(), "duration": "fast"})),
     "$.eval_cases[0].conversation[0].duration"),
    (evalset("s", {**case("c1"), "session_input": {"app_name": "a", "user_id": "u", "state": []}}),
     "$.eval_cases[0].session_input.state"),
], ids=["eval_cases", "eval_set_id", "eval_id", "parts", "args", "duration", "state"])
def test_wrong_types(repo, data, path):
    setup(repo, data)
    assert_input_error(run(repo), f"{EVAL} at {path}:")


@pytest.mark.parametrize("data,path,key", [
    ({"eval_cases": [case("c1")]}, "$", "eval_set_id"),
    (evalset("s", {"conversation": [invocation()]}), "$.eval_cases[0]", "eval_id"),
    (evalset("s", case("c1", {"final_response": {"parts": [{"text": "x"}]}})),
     "$.eval_cases[0].conversation[0]", "user_content"),
    (evalset("s", case("c1", invocation(tools=[{"args": {}}]))),
     "$.eval_cases[0].conversation[0].intermediate_data.tool_uses[0]", "name"),
], ids=["eval_set_id", "eval_id", "user_content", "tool_name"])
def test_missing_ids_and_required_keys(repo, data, path, key):
    setup(repo, data)
    assert_input_error(run(repo), f"{EVAL} at {path}:", f"missing required key '{key}'")


@pytest.mark.parametrize("blank", ["", "   "])
def test_empty_eval_id(repo, blank):
    setup(repo, evalset("s", case(blank)))
    assert_input_error(run(repo), f"{EVAL} at $.eval_cases[0].eval_id:", "must not be empty")


def test_empty_eval_set_id(repo):
    setup(repo, evalset(""))
    assert_input_error(run(repo), f"{EVAL} at $.eval_set_id:", "must not be empty")


def test_duplicate_eval_ids(repo):
    setup(repo, evalset("s", case("c1"), case("c2"), case("c1")))
    assert_input_error(run(repo), f"{EVAL} at $.eval_cases[2].eval_id:", "duplicate eval_id 'c1'",
                       "$.eval_cases[0]")


def test_duplicate_json_key_at_top_level(repo):
    setup(repo, text='{"eval_set_id": "s", "eval_set_id": "t", "eval_cases": []}')
    assert_input_error(run(repo), f"{EVAL} at $:", "duplicate key 'eval_set_id'")


def test_duplicate_json_key_nested(repo):
    inv = ('{"user_content": {"parts": [{"text": "a"}]}, '
           '"final_response": {"parts": [{"text": "x", "text": "y"}]}}')
    text = ('{"eval_set_id": "s", "eval_cases": [\n {"eval_id": "c0", "conversation": []},\n'
            ' {"eval_id": "c1", "conversation": [' + inv + ']}]}')
    setup(repo, text=text)
    assert_input_error(run(repo), f"{EVAL}",
                       "at $.eval_cases[1].conversation[0].final_response.parts[0]:",
                       "duplicate key 'text'")



def test_duplicate_json_key_with_space_before_the_colon(repo):
    """The duplicate check runs only when the text has more key ends (quote, colon) than
    the value has keys: a key end with whitespace before its colon counts too."""
    setup(repo, text='{"eval_set_id"\n : "s", "eval_set_id": "t", "eval_cases": []}')
    assert_input_error(run(repo), f"{EVAL} at $:", "duplicate key 'eval_set_id'")


def test_duplicate_json_key_in_a_file_whose_strings_look_like_keys(repo):
    """Text that looks like a key end inside a string (embedded JSON) sends the file to the
    full check: a duplicate is found there, and a file without one reads as before."""
    said = '{\\"city\\": \\"Paris\\"}'  # the agent's answer: JSON, as a string
    inv = ('{"user_content": {"parts": [{"text": "' + said + '"}]}, '
           '"final_response": {"parts": [{"text": "' + said + '"}]}}')
    text = '{"eval_set_id": "s", "eval_cases": [{"eval_id": "c1", "conversation": [' + inv + ']}]}'
    setup(repo, text=text.replace('"eval_id": "c1"', '"eval_id": "c1", "eval_id": "c2"'))
    assert_input_error(run(repo), f"{EVAL} at $.eval_cases[0]:", "duplicate key 'eval_id'")
    (repo / EVAL).write_text(text)
    outcome = run(repo)
    assert outcome.code in (0, 1) and "error" not in outcome.stderr, outcome.output


# (where, the misspelt key, JSON path of the object holding it, the key it meant): where ADK
# refuses the key too (Invocation, Part, IntermediateData forbid unknown keys).
MISSPELT = [
    ("invocation", "final_respons", "$.eval_cases[0].conversation[0]", "final_response"),
    ("invocation", "finalRespons", "$.eval_cases[0].conversation[0]", "finalResponse"),
    ("part", "txt", "$.eval_cases[0].conversation[0].user_content.parts[0]", "text"),
    ("part", "functionCal", "$.eval_cases[0].conversation[0].user_content.parts[0]", "functionCall"),
    ("intermediate_data", "tool_use", "$.eval_cases[0].conversation[0].intermediate_data", "tool_uses"),
    ("intermediate_data", "toolUse", "$.eval_cases[0].conversation[0].intermediate_data", "toolUses"),
]

# Where ADK ignores an unknown key (EvalSet, EvalCase, SessionInput, InvocationEvent), a
# misspelt key that takes a required key's place is the missing key's error, and the hint
# names the misspelling (path, message, hint).
MISSPELT_REQUIRED = [
    ("top", "eval_casess", "$", "missing required key 'eval_cases'", "'eval_casess' is not a field here"),
    ("top", "evalCasess", "$", "missing required key 'eval_cases'", "'evalCasess' is not a field here"),
    ("case", "conversaton", "$.eval_cases[0]", "exactly one of 'conversation'",
     "did you mean 'conversation'?"),
    ("session_input", "app_nam", "$.eval_cases[0].session_input", "missing required key 'app_name'",
     "did you mean 'app_name'?"),
    ("session_input", "userID", "$.eval_cases[0].session_input", "missing required key 'user_id'",
     "'userID' is not a field here"),
]

# ... and one that takes an optional key's place is a warning naming key and file: ADK runs
# the file, the key having no effect, and so does evalcheck.
MISSPELT_IGNORED = [
    ("top", "descripton", "$", "description"),
    ("case", "sessionInputs", "$.eval_cases[0]", "sessionInput"),
    ("case", "session_inputs", "$.eval_cases[0]", "session_input"),
    ("events", "usage_metdata",
     "$.eval_cases[0].conversation[0].intermediate_data.invocation_events[0]", "usage_metadata"),
]


def _with_misspelt_key(where: str, key: str) -> dict[str, Any]:
    inv = invocation(tools=[call("f")])
    session = {"app_name": "a", "user_id": "u"}
    data = evalset("s", {**case("c1", inv), "session_input": session})
    c = data["eval_cases"][0]
    if where == "top":
        if key in ("eval_casess", "evalCasess"):
            data[key] = data.pop("eval_cases")
        else:
            data[key] = "x"
    elif where == "case":
        if key == "conversaton":
            c[key] = c.pop("conversation")
        elif key in ("sessionInputs", "session_inputs"):
            c[key] = c.pop("session_input")
    elif where == "invocation":
        inv[key] = inv.pop("final_response")
    elif where == "part":
        part = inv["user_content"]["parts"][0]
        if key == "txt":
            part[key] = part.pop("text")
        else:
            part[key] = {"name": "f"}
    elif where == "intermediate_data":
        inv["intermediate_data"] = {key: [call("f")]}
    elif where == "events":
        inv["intermediate_data"] = {"invocation_events": [{"author": "a", key: {}}]}
    elif where == "session_input":
        real = "app_name" if key == "app_nam" else "user_id"
        session[key] = session.pop(real)
    return data


@pytest.mark.parametrize("where,key,path,meant", MISSPELT, ids=[m[1] for m in MISSPELT])
def test_unknown_or_misspelt_key(repo, where, key, path, meant):
    setup(repo, _with_misspelt_key(where, key))
    assert_input_error(run(repo), f"{EVAL} at {path}:", f"unknown key '{key}'",
                       f"did you mean '{meant}'?")


@pytest.mark.parametrize("where,key,path,message,hint", MISSPELT_REQUIRED,
                         ids=[m[1] for m in MISSPELT_REQUIRED])
def test_misspelt_required_key_names_the_misspelling(repo, where, key, path, message, hint):
    setup(repo, _with_misspelt_key(where, key))
    assert_input_error(run(repo), f"{EVAL} at {path}:", message, hint)


def assert_ignored(outcome, file: str, path: str, key: str, hint: str | None = None) -> str:
    """Not bad input: the run went on (exit 0 or 1) and stderr warns of the key."""
    assert outcome.code in (0, 1), outcome.output
    line = next((ln for ln in outcome.stderr.splitlines() if f"unknown key '{key}' ignored" in ln), "")
    assert line.startswith(f"evalcheck: warning: {file}: {path}"), outcome.stderr
    if hint:
        assert f"did you mean '{hint}'?" in line, line
    return line


@pytest.mark.parametrize("where,key,path,meant", MISSPELT_IGNORED, ids=[m[1] for m in MISSPELT_IGNORED])
def test_key_adk_ignores_is_a_warning(repo, where, key, path, meant):
    setup(repo, _with_misspelt_key(where, key), runs=replay(("s", "c1", 1, [invocation(tools=[call("f")])])))
    assert_ignored(run(repo), EVAL, path, key, meant)


def test_unknown_key_without_a_near_miss(repo):
    setup(repo, with_case(owner="me"))
    line = assert_ignored(run(repo), EVAL, "$.eval_cases[0]", "owner")
    assert "did you mean" not in line


def test_ignored_keys_do_not_change_results_or_fingerprints(repo):
    """An ignored key is dropped: the results file is the one without it."""
    setup(repo)
    assert run(repo, "evals", "--results", "plain.json").code == 0
    data = with_case(owner="me")
    data["metadata"] = {"team": "x"}
    setup(repo, data)
    assert run(repo, "evals", "--results", "extra.json").code == 0
    cases = [json.loads((repo / f).read_text())["evalSets"][0]["cases"] for f in ("plain.json", "extra.json")]
    assert cases[0][0]["fingerprint"] == cases[1][0]["fingerprint"]


def test_hint_is_never_the_refused_key(repo):
    """A hint comes from the keys valid at that path (was: any field name in the model, so
    'data' in a Part suggested 'data' - a Blob's field)."""
    data = with_case()
    data["eval_cases"][0]["conversation"][0]["user_content"]["parts"][0]["data"] = "x"
    setup(repo, data)
    line = assert_input_error(run(repo), f"{EVAL} at $.eval_cases[0].conversation[0].user_content.parts[0]:",
                              "unknown key 'data'")
    assert "did you mean 'data'" not in line


def _with_invocation_keys(*extra: dict[str, Any]):
    """One case per dict, its invocation with those keys added (ADK refuses unknown keys there)."""
    cases = []
    for i, keys in enumerate(extra):
        c = case(f"c{i + 1}")
        c["conversation"][0].update(keys)
        cases.append(c)
    return evalset("s", *cases)


def test_the_other_problems_are_named_up_to_ten(repo):
    """Not "(and 1 more problem)" without saying which: each one, its JSON path and what."""
    setup(repo, _with_invocation_keys({"owner": "me"}, {"final_respons": {}}))
    line = assert_input_error(run(repo), f"{EVAL} at $.eval_cases[0].conversation[0]: unknown key 'owner' "
                              "(and 1 more problem: $.eval_cases[1].conversation[0]: unknown key 'final_respons')")
    setup(repo, _with_invocation_keys(*({"owner": "me"} for _ in range(13))))
    line = assert_input_error(run(repo), "(and 12 more problems: $.eval_cases[1].conversation[0]: unknown key "
                              "'owner'; $.eval_cases[2].conversation[0]: unknown key 'owner';",
                              "$.eval_cases[10].conversation[0]: unknown key 'owner'; and 2 more)")
    assert "$.eval_cases[11]" not in line


def test_a_misspelt_key_is_one_problem_not_two(repo):
    """Pydantic also reports the key it meant as missing: the same problem, not another."""
    data = evalset("s", case("c1"))
    inv = data["eval_cases"][0]["conversation"][0]
    inv["user_contnt"] = inv.pop("user_content")
    setup(repo, data)
    line = assert_input_error(run(repo), f"{EVAL} at $.eval_cases[0].conversation[0]: unknown key "
                              "'user_contnt' (did you mean 'user_content'?)")
    assert "more problem" not in line


def test_both_conversation_and_scenario(repo):
    scenario = {"starting_prompt": "hi", "conversation_plan": "ask"}
    setup(repo, with_case(conversation_scenario=scenario))
    assert_input_error(run(repo), f"{EVAL} at $.eval_cases[0]:",
                       "exactly one of 'conversation' and 'conversation_scenario'")


def test_neither_conversation_nor_scenario(repo):
    setup(repo, evalset("s", {"eval_id": "c1"}))
    assert_input_error(run(repo), f"{EVAL} at $.eval_cases[0]:",
                       "exactly one of 'conversation' and 'conversation_scenario'")


def test_empty_eval_set(repo):
    setup(repo, {"eval_set_id": "s", "eval_cases": []})
    assert_input_error(run(repo), f"{EVAL} at $.eval_cases:", "no eval cases")


# ------------------------------------------------------------------ legacy files


def test_legacy_query_list_with_unknown_key(repo):
    setup(repo, [{"query": "hi", "refrence": "hello"}], name="evals/old.test.json",
          runs=replay(("old", "old", 1, [invocation()])))
    assert_ignored(run(repo), "evals/old.test.json", "$[0]", "refrence", "reference")


def test_legacy_case_list_with_unknown_key(repo):
    data = [{"name": "c1", "data": [{"query": "hi", "expected_tool_uses": []}]}]
    setup(repo, data, name="evals/old.test.json", runs=replay(("old", "c1", 1, [invocation()])))
    assert_ignored(run(repo), "evals/old.test.json", "$[0].data[0]", "expected_tool_uses",
                   "expected_tool_use")


def test_legacy_tool_use_with_wrong_type(repo):
    data = [{"query": "hi", "expected_tool_use": [{"tool_name": "f", "tool_input": [1]}]}]
    setup(repo, data, name="evals/old.test.json", runs=replay(("old", "old", 1, [invocation()])))
    assert_input_error(run(repo), "evals/old.test.json at $[0].expected_tool_use[0].tool_input:")


def test_legacy_case_list_with_a_duplicated_or_empty_name(repo):
    """The name becomes the eval id (user audit: a KeyError traceback, and a pydantic one)."""
    turn = [{"query": "hi", "reference": "hello"}]
    setup(repo, [{"name": "c1", "data": turn}, {"name": "c1", "data": turn}], name="evals/old.test.json",
          runs=replay(("old", "c1", 1, [invocation()])))
    assert_input_error(run(repo), "evals/old.test.json at $[1].name:", "duplicate name 'c1' (also at $[0].name)")
    setup(repo, [{"name": "", "data": turn}], name="evals/old.test.json")
    assert_input_error(run(repo), "evals/old.test.json at $[0].name:", "must not be empty")


def test_legacy_empty_list(repo):
    setup(repo, [], name="evals/old.test.json")
    assert_input_error(run(repo), "evals/old.test.json at $:", "empty")


def test_legacy_bad_initial_session(repo):
    setup(repo, [{"query": "hi"}], name="evals/old.test.json")
    write_json(repo / "evals/initial-session.json", {"state": {}, "app_nme": "x"})
    assert_input_error(run(repo), "initial-session.json at $:", "unknown key 'app_nme'")


# ------------------------------------------------------------------ criteria (test_config.json)


def test_unknown_metric_lists_the_known_ones(repo):
    setup(repo, config={"criteria": {"tool_trajectory_avg": 1.0}})
    line = assert_input_error(run(repo), f"{CONFIG} at $.criteria.tool_trajectory_avg:",
                              "unknown metric 'tool_trajectory_avg'",
                              "did you mean 'tool_trajectory_avg_score'?", "known metrics: ")
    for known in ("response_match_score", "tool_trajectory_avg_score", "tool_call_count_v1"):
        assert known in line


@pytest.mark.parametrize("value,path", [
    (1.5, "$.criteria.response_match_score"),
    (-0.1, "$.criteria.response_match_score"),
    ({"threshold": 2}, "$.criteria.response_match_score.threshold"),
])
def test_threshold_out_of_range(repo, value, path):
    setup(repo, config={"criteria": {"response_match_score": value}})
    assert_input_error(run(repo), f"{CONFIG} at {path}:", "out of range")


@pytest.mark.parametrize("value", [3, {"threshold": 3}, 0])
def test_threshold_on_informational_metric(repo, value):
    setup(repo, config={"criteria": {"response_match_score": 0.5, "tool_call_count_v1": value}})
    assert_input_error(run(repo), f"{CONFIG} at $.criteria.tool_call_count_v1:",
                       "informational", "no threshold")


@pytest.mark.parametrize("match_type", ["SOMETIMES", "in order please", 7])
def test_bad_match_type(repo, match_type):
    setup(repo, config={"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": match_type}}})
    assert_input_error(run(repo), f"{CONFIG} at $.criteria.tool_trajectory_avg_score.match_type:")


def test_misspelt_criterion_setting(repo):
    setup(repo, config={"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "matchTyp": "EXACT"}}})
    assert_ignored(run(repo), CONFIG, "$.criteria.tool_trajectory_avg_score", "matchTyp", "matchType")


def test_threshold_of_wrong_type(repo):
    setup(repo, config={"criteria": {"response_match_score": "high"}})
    assert_input_error(run(repo), f"{CONFIG} at $.criteria.response_match_score:")


def test_misspelt_config_key(repo):
    setup(repo, config={"criterias": {"response_match_score": 0.5}})
    assert_input_error(run(repo), f"{CONFIG} at $.criteria:", "no criteria configured",
                       "'criterias' is not a key of a criteria file: did you mean 'criteria'?")


def test_a_manifest_named_eval_config_json_is_said_not_to_be_a_criteria_file(repo):
    """A shape of a public repository (an eval_config.json beside the eval sets that lists
    per-flow criteria files, each passed to `adk eval --config_file_path`): not read as
    criteria it lacks, and --config naming the flow's file runs."""
    setup(repo)
    write_json(repo / "evals/eval_config.json", {
        "description": "criteria of each flow", "shared_response_criterion": {"response_match_score": 0.5},
        "skill_configs": {"s": {"criteria": {"response_match_score": 0.5}}}})
    assert_input_error(run(repo), "evals/eval_config.json at $.criteria:", "no criteria configured",
                       "it has no 'criteria' key (its keys: description, shared_response_criterion, "
                       "skill_configs); if it is not a criteria file, name the criteria file to apply "
                       "with --config")
    write_json(repo / "evals/configs/s.json", {"criteria": {"response_match_score": 0.5}})
    assert run(repo, "evals", "--config", "evals/configs/s.json").code == 0


def test_config_bad_json(repo):
    setup(repo)
    (repo / CONFIG).write_text('{"criteria": {\n"response_match_score": 0.5,\n}}', encoding="utf-8")
    assert_input_error(run(repo), f"{CONFIG}:3", "invalid JSON")


def test_config_file_not_found(repo):
    setup(repo)
    out = run_cli(["run", "evals", "--replay", "runs.json", "--config", "missing/test_config.json"], repo)
    assert_input_error(out, "missing/test_config.json", "config file not found")


def test_config_given_with_a_problem(repo):
    setup(repo)
    write_json(repo / "ci.json", {"criteria": {"response_match": 0.5}})
    out = run_cli(["run", "evals", "--replay", "runs.json", "--config", "ci.json"], repo)
    assert_input_error(out, "ci.json at $.criteria.response_match:", "unknown metric")


# ------------------------------------------------------------------ discovery and selection


def test_no_eval_files_found(repo):
    setup(repo)
    (repo / "empty" / "sub").mkdir(parents=True)
    write_json(repo / "empty" / "sub" / "notes.json", {})
    assert_input_error(run(repo, "empty"), "empty", "no eval files found")


def test_eval_file_not_found(repo):
    setup(repo)
    assert_input_error(run(repo, "evals/missing.evalset.json"), "evals/missing.evalset.json", "not found")


def test_unknown_case_in_filter(repo):
    setup(repo, evalset("s", case("c1"), case("c2")))
    line = assert_input_error(run(repo, f"{EVAL}:c2,nope"), f"{EVAL} at $.eval_cases:",
                              "no eval case 'nope'")
    assert "c1, c2" in line  # lists the cases that exist


def test_an_eval_set_id_shared_across_files_is_no_error(repo):
    """Two files with one id (a monorepo): told apart by path (tests/core/test_monorepo.py);
    their recorded runs must then say which file they belong to."""
    setup(repo)
    write_json(repo / "evals/t.evalset.json", evalset("s", case("c9")))
    assert_input_error(run(repo), "runs.json at $.runs[0]:", "an id used by evals/s.evalset.json and "
                       "evals/t.evalset.json", 'add "evalSetPath"')


def test_legacy_and_new_file_with_the_same_id(repo):
    setup(repo)
    write_json(repo / "evals/s.test.json", [{"query": "hi"}])
    assert_input_error(run(repo), "runs.json at $.runs[0]:", "an id used by evals/s.evalset.json and "
                       "evals/s.test.json")


# ------------------------------------------------------------------ the replay file


def test_replay_lacking_a_case(repo):
    setup(repo, evalset("s", case("c1"), case("c2")))
    assert_input_error(run(repo), "runs.json at $.runs:", "no recorded run for eval case 'c2'", EVAL)


def test_replay_naming_an_unknown_case(repo):
    setup(repo, runs=replay(("s", "c1", 1, [invocation()]), ("s", "ghost", 1, [invocation()])))
    assert_input_error(run(repo), "runs.json at $.runs[1]:", "'ghost'")


def test_replay_naming_an_unknown_eval_set(repo):
    setup(repo, runs=replay(("s", "c1", 1, [invocation()]), ("other", "c1", 1, [invocation()])))
    assert_input_error(run(repo), "runs.json at $.runs[1]:", "'other'")


def test_replay_duplicate_run(repo):
    setup(repo, runs=replay(("s", "c1", 1, [invocation()]), ("s", "c1", 1, [invocation()])))
    assert_input_error(run(repo), "runs.json at $.runs[1].run:", "recorded twice")


@pytest.mark.parametrize("version", [2, "1", 0])
def test_replay_bad_version(repo, version):
    setup(repo, runs={**replay(("s", "c1", 1, [invocation()])), "version": version})
    assert_input_error(run(repo), "runs.json at $.version:")


def test_replay_run_number_below_one(repo):
    setup(repo, runs=replay(("s", "c1", 0, [invocation()])))
    assert_input_error(run(repo), "runs.json at $.runs[0].run:")


def test_replay_unknown_key_in_invocation(repo):
    inv = {**invocation(), "finalRespnse": {"parts": []}}
    setup(repo, runs=replay(("s", "c1", 1, [inv])))
    assert_input_error(run(repo), "runs.json at $.runs[0].invocations[0]:", "unknown key 'finalRespnse'")


def test_replay_missing_eval_id(repo):
    setup(repo, runs={"version": 1, "runs": [{"evalSetId": "s", "run": 1, "invocations": []}]})
    assert_input_error(run(repo), "runs.json at $.runs[0]:", "missing required key 'evalId'")


def test_replay_bad_json(repo):
    setup(repo)
    (repo / "runs.json").write_text('{"version": 1,\n "runs": [}\n', encoding="utf-8")
    assert_input_error(run(repo), "runs.json:2", "invalid JSON")


def test_replay_file_not_found(repo):
    setup(repo)
    out = run_cli(["run", "evals", "--replay", "nothing.json"], repo)
    assert_input_error(out, "nothing.json", "not found")


# ------------------------------------------------------------------ migrate


@pytest.mark.parametrize(("args", "named", "says"), [
    (["--results", "runs.json"], "runs.json", "--results would overwrite the replay file (--replay)"),
    (["--inference-out", "evals/../runs.json"], "evals/../runs.json", "--inference-out would overwrite the replay file"),
    (["--markdown", EVAL], EVAL, f"--markdown would overwrite the eval file {EVAL}"),
    (["--junit", CONFIG], CONFIG, f"--junit would overwrite the criteria file {CONFIG}"),
    (["--results", "r.json", "--markdown", "r.json"], "r.json", "--markdown and --results name the same file"),
])
def test_an_output_that_is_an_input_is_refused_before_anything_is_written(repo, args, named, says):
    setup(repo, config={"criteria": {"response_match_score": 0.5}})
    before = {p: p.read_bytes() for p in repo.rglob("*.json")}
    line = assert_input_error(run(repo, "evals", *args), f"{named}: {says}")
    assert "another file" in line or "its own file" in line
    assert {p: p.read_bytes() for p in repo.rglob("*.json")} == before and not (repo / "r.json").exists()


def test_compare_refuses_to_overwrite_its_inputs(repo):
    setup(repo)
    assert run(repo, "evals", "--results", "head.json").code == 0
    before = (repo / "head.json").read_bytes()
    assert_input_error(run_cli(["compare", "head.json", "head.json", "--results", "head.json"], repo),
                       "head.json: --results would overwrite the baseline (BASELINE)")
    assert (repo / "head.json").read_bytes() == before


def test_migrate_of_a_file_in_the_new_format(repo):
    setup(repo)
    out = run_cli(["migrate", EVAL, "new.evalset.json"], repo)
    assert_input_error(out, f"{EVAL} at $:", "not a legacy eval file")


def test_migrate_of_a_missing_file(repo):
    out = run_cli(["migrate", "old.test.json", "new.evalset.json"], repo)
    assert_input_error(out, "old.test.json", "not found")


# ------------------------------------------------------------------ the installed console script


def _console_script() -> list[str]:
    script = Path(sys.executable).parent / "evalcheck"
    if script.exists():
        return [str(script)]
    found = shutil.which("evalcheck")
    return [found] if found else [sys.executable, "-m", "checker.cli"]


@pytest.mark.parametrize("problem", ["misspelt_key", "unknown_metric", "bad_json"])
def test_console_script_exit_status_and_one_line(repo, problem):
    if problem == "misspelt_key":
        setup(repo, _with_misspelt_key("invocation", "final_respons"))
        want = [f"{EVAL} at $.eval_cases[0].conversation[0]:", "unknown key 'final_respons'"]
    elif problem == "unknown_metric":
        setup(repo, config={"criteria": {"rouge": 0.5}})
        want = [f"{CONFIG} at $.criteria.rouge:", "unknown metric"]
    else:
        setup(repo, text="{\n\n oops")
        want = [f"{EVAL}:3", "invalid JSON"]
    proc = subprocess.run([*_console_script(), "run", "evals", "--replay", "runs.json"], cwd=repo,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and proc.stdout == "", proc.stderr
    for fragment in want:
        assert fragment in lines[0]


def test_usage_error_is_status_2(repo):
    setup(repo)
    out = run_cli(["run", "evals"], repo)  # no --replay / --agent-command / --agent-url
    assert out.code == 2 and "exactly one of" in out.output



def test_migrate_to_an_unwritable_path(repo):
    write_json(repo / "old.test.json", [{"query": "hi"}])
    (repo / "blocker").write_text("a file, not a folder")
    out = run_cli(["migrate", "old.test.json", "blocker/new.evalset.json"], repo)
    assert_input_error(out, "blocker/new.evalset.json", "cannot write")
