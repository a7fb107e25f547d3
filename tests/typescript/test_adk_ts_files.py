"""ADK-TS's eval files as they are: every ``*.test.json`` shape @iqai/adk's AgentEvaluator
accepts (its camelCase EvalSet with ``sessionInput``, its old ``query / expected_tool_use /
reference`` list, a single query object, tool uses written as FunctionCalls) is discovered
and run; where ADK-TS and google-adk read one file differently, evalcheck reads it as
google-adk does and says so once per file. Each reading is set beside the real packages':
@iqai/adk's AgentEvaluator (through node) and google-adk's."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from checker.inputs.discover import discover
from checker.inputs.evalfile import load_eval_file
from tshelpers import ADAPTER, HERE, examples_copy, metric_runs, require_packages, run_evalcheck

# The example dataset of ADK-TS's evaluation page, as printed there.
DOCS_EXAMPLE = {
    "evalSetId": "search-agent-v1",
    "name": "Search Agent Tests",
    "evalCases": [{
        "evalId": "test-1",
        "conversation": [{
            "invocationId": "inv-1",
            "userContent": {"role": "user", "parts": [{"text": "Search for the latest AI news"}]},
            "finalResponse": {"role": "model", "parts": [{"text": "Here are the latest AI developments..."}]},
            "intermediateData": {"toolUses": [{"name": "search", "args": {"query": "latest AI news"}}],
                                 "intermediateResponses": []},
            "creationTimestamp": 1234567890}]}],
    "creationTimestamp": 1234567890,
}
SESSION = {"state": {"user_name": "Ada", "units": "celsius"}}
# A query list of two turns: the first tool use as google-adk writes it, the second as ADK-TS
# compares it (a FunctionCall).
QUERIES = [
    {"query": "What is the weather in Paris?",
     "reference": "Ada, it is sunny in Paris, 21 degrees celsius.",
     "expected_tool_use": [{"tool_name": "get_weather", "tool_input": {"city": "Paris"}}]},
    {"query": "What about Oslo?", "reference": "Ada, it is rainy in Oslo, 9 degrees celsius.",
     "expected_tool_use": [{"name": "get_weather", "args": {"city": "Oslo"}}]},
]
# One query object, not in a list.
SINGLE = {"query": "Is it warmer in Rome or in Oslo?",
          "reference": "Ada, it is clear in Rome, 24 degrees celsius and it is rainy in Oslo, 9 "
                       "degrees celsius. Rome is warmer.",
          "expected_tool_use": [{"name": "get_weather", "args": {"city": "Rome"}},
                                {"name": "get_weather", "args": {"city": "Oslo"}}]}
NOTE = ("a list of 2 query turns: read as google-adk reads it, one eval case 'queries' of 2 "
        "turns in one session; ADK-TS's AgentEvaluator (@iqai/adk) reads each item as a case of "
        "its own (to evaluate them apart, write an eval set with a case each)")


def write(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1))
    return path


def adk_ts_reads(*files: Path) -> dict[str, dict]:
    """What @iqai/adk's AgentEvaluator makes of each file: {criteria, evalSet} or {error}."""
    require_packages()
    done = subprocess.run(["node", str(HERE / "tools" / "adk_ts_reads.mjs"), *map(str, files)],
                          cwd=HERE, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def google_adk_reads(path: Path):
    """google-adk 2.13's AgentEvaluator reading of a .test.json file (its initial session
    file beside it, as evalcheck picks it up)."""
    from google.adk.evaluation.agent_evaluator import AgentEvaluator

    session = path.parent / "initial.session.json"
    initial = json.loads(session.read_text()) if session.exists() else {}
    return AgentEvaluator._load_eval_set_from_file(
        str(path), AgentEvaluator.find_config_for_test_file(str(path)), initial)


def turns(eval_set) -> list[list[tuple[str, str, list]]]:
    """Per case, per turn: (user text, reference, [(tool, args)]), of a google-adk or an
    evalcheck EvalSet (the same field names)."""
    return [[(inv.user_content.parts[0].text, inv.final_response.parts[0].text,
              [(t.name, t.args) for t in inv.intermediate_data.tool_uses])
             for inv in case.conversation] for case in eval_set.eval_cases]


def ts_turns(read: dict) -> list[list[tuple[str, str, list]]]:
    return [[(inv["userContent"]["parts"][0]["text"], inv["finalResponse"]["parts"][0]["text"],
              [(t.get("name"), t.get("args")) for t in inv["intermediateData"]["toolUses"]])
             for inv in case["conversation"]] for case in read["evalSet"]["evalCases"]]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("files")
    write(tmp / "legacy" / "initial.session.json", SESSION)
    write(tmp / "single" / "initial.session.json", SESSION)
    return {"docs": write(tmp / "docs" / "search.test.json", DOCS_EXAMPLE),
            "queries": write(tmp / "legacy" / "queries.test.json", QUERIES),
            "queries_adk": write(tmp / "adk" / "queries.test.json",
                                 [QUERIES[0], {**QUERIES[1], "expected_tool_use": [
                                     {"tool_name": "get_weather", "tool_input": {"city": "Oslo"}}]}]),
            "single": write(tmp / "single" / "one.test.json", SINGLE),
            "snake": HERE.parents[0] / "adk_agent" / "evals" / "weather_app.evalset.json"}


@pytest.fixture(scope="module")
def adk_ts(files) -> dict[str, dict]:
    reads = adk_ts_reads(*files.values())
    return {name: reads[str(path)] for name, path in files.items()}


def test_the_documented_eval_set_reads_as_adk_ts_reads_it(files, adk_ts):
    """ADK-TS takes it as it is. google-adk 2.13 refuses it (its EvalSet's own keys are
    snake_case only, though every key below them may be camelCase) and reads it, field for
    field, as evalcheck does once those three keys are snake_case."""
    from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
    from google.adk.evaluation.local_eval_sets_manager import load_eval_set_from_file

    ours = load_eval_file(files["docs"]).eval_set
    assert adk_ts["docs"]["evalSet"] == DOCS_EXAMPLE
    with pytest.raises(Exception):
        load_eval_set_from_file(str(files["docs"]), "x")
    top = {"evalSetId": "eval_set_id", "evalCases": "eval_cases", "creationTimestamp": "creation_timestamp"}
    adk = AdkEvalSet.model_validate({top.get(k, k): v for k, v in DOCS_EXAMPLE.items()})
    assert turns(ours) == turns(adk) == [[("Search for the latest AI news",
                                           "Here are the latest AI developments...",
                                           [("search", {"query": "latest AI news"})])]]
    assert (ours.eval_set_id, ours.name, ours.eval_cases[0].eval_id, ours.creation_timestamp,
            ours.eval_cases[0].conversation[0].invocation_id) == (
        adk.eval_set_id, adk.name, adk.eval_cases[0].eval_id, adk.creation_timestamp,
        adk.eval_cases[0].conversation[0].invocation_id) == (
        "search-agent-v1", "Search Agent Tests", "test-1", 1234567890, "inv-1")


def test_a_query_list_is_one_case_of_many_turns_as_in_google_adk(files, adk_ts):
    discovery = discover([str(files["queries"])], root=files["queries"].parent)
    (target,), notes = discovery.targets, discovery.notes
    ours = target.loaded.eval_set
    expected = [[("What is the weather in Paris?", QUERIES[0]["reference"], [("get_weather", {"city": "Paris"})]),
                 ("What about Oslo?", QUERIES[1]["reference"], [("get_weather", {"city": "Oslo"})])]]
    assert turns(ours) == expected
    assert ours.eval_cases[0].session_input.state == SESSION["state"]
    # google-adk: the same one case of two turns (it reads only tool_name / tool_input).
    assert turns(google_adk_reads(files["queries_adk"])) == expected
    # ADK-TS: a case per item, the first tool use without a name (it never matches a call).
    assert ts_turns(adk_ts["queries"]) == [
        [("What is the weather in Paris?", QUERIES[0]["reference"], [(None, None)])],
        [("What about Oslo?", QUERIES[1]["reference"], [("get_weather", {"city": "Oslo"})])]]
    assert f"queries.test.json: {NOTE}" in notes


def test_a_single_query_object_is_a_one_turn_case_as_in_adk_ts(files, adk_ts):
    ours = load_eval_file(files["single"]).eval_set
    expected = [[(SINGLE["query"], SINGLE["reference"],
                  [("get_weather", {"city": "Rome"}), ("get_weather", {"city": "Oslo"})])]]
    assert turns(ours) == expected == ts_turns(adk_ts["single"])
    assert load_eval_file(files["single"]).notes == []  # one turn: nothing read otherwise
    with pytest.raises(ValueError, match="must contain a list of dictionaries"):
        google_adk_reads(files["single"])  # google-adk has no reading of it


def test_a_snake_case_eval_set_adk_ts_refuses_is_read(files, adk_ts):
    assert "must include 'query' and 'expected_tool_use' keys" in adk_ts["snake"]["error"]
    assert [c.eval_id for c in load_eval_file(files["snake"]).eval_set.eval_cases] == [
        "paris_celsius", "compare_fahrenheit", "weather_then_forecast", "wrong_expectation"]


def test_criteria_spelled_as_adk_ts_docs_spell_them(tmp_path):
    """test_config.json with the keys of @iqai/adk's PrebuiltMetrics, thresholds as its docs
    give them: every one is a metric evalcheck scores, with that threshold."""
    criteria = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8,
                "response_evaluation_score": 3.5, "safety_v1": 1.0, "final_response_match_v2": 0.8}
    write(tmp_path / "test_config.json", {"criteria": criteria})
    eval_file = write(tmp_path / "search.test.json", DOCS_EXAMPLE)
    (target,) = discover([str(tmp_path)], root=tmp_path).targets
    assert {m.name: m.threshold for m in target.config.metrics if not m.informational} == criteria
    assert adk_ts_reads(eval_file)[str(eval_file)]["criteria"] == criteria


def test_every_shape_runs_through_the_adapter(tmp_path):
    """The example's camelCase eval set, a query list and a single query object, each with
    its criteria and initial session as ADK-TS's users write them, discovered in one folder
    and run on the @iqai/adk example agent: scored, and the query list's note said once."""
    project = examples_copy(tmp_path) / "iqai-adk"
    evals = project / "evals"
    write(evals / "legacy" / "queries.test.json", QUERIES)
    write(evals / "legacy" / "initial.session.json", SESSION)
    write(evals / "single" / "one.test.json", SINGLE)
    write(evals / "single" / "initial.session.json", SESSION)
    command = f"{shlex.quote(str(ADAPTER))} agent.ts"
    results, inference, done = run_evalcheck(tmp_path, evals, "--agent-command", command,
                                              runs=1, cwd=project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert {s["evalSetId"]: [c["evalId"] for c in s["cases"]] for s in results["evalSets"]} == {
        "weather_app": ["paris_celsius", "compare_fahrenheit", "weather_then_forecast"],
        "queries": ["queries"], "one": ["one"]}
    scores = metric_runs(results)
    assert scores[("queries", "tool_trajectory_avg_score")] == [1.0]
    assert scores[("queries", "response_match_score")] == [1.0]
    assert scores[("one", "tool_trajectory_avg_score")] == [1.0]
    assert scores[("one", "response_match_score")] == [1.0]
    said = [line for line in done.stderr.splitlines() if "query turns" in line]
    assert said == [f"evalcheck: warning: evals/legacy/queries.test.json: {NOTE}"], said
    assert [len(r["invocations"]) for r in inference["runs"] if r["evalId"] == "queries"] == [2]
