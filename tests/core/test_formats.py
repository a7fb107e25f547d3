"""File formats, discovery, results and reports through the real command line."""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from google.adk.evaluation.agent_evaluator import AgentEvaluator
from google.adk.evaluation.eval_config import EvalConfig as AdkEvalConfig
from google.adk.evaluation.eval_set import EvalSet as AdkEvalSet
from google.adk.evaluation.local_eval_sets_manager import convert_eval_set_to_pydantic_schema

from checker.inputs.criteria import DEFAULT_CRITERIA
from checker.inputs.discover import discover
from checker.inputs.evalfile import load_eval_file
from checker.models.evalset import content_text, tool_calls
from corehelpers import call, camelize, case, evalset, invocation, replay, run_cli, write_json

EFFICIENCY = ["tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1"]


def results_of(repo: Path, *args: str, replay_file: str = "runs.json") -> tuple[int, dict[str, Any]]:
    out = run_cli(["run", *args, "--replay", replay_file, "--results", "results.json"], repo)
    assert out.code in (0, 1), out.output
    return out.code, json.loads((repo / "results.json").read_text(encoding="utf-8"))


def scores(results: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(eval set, case) -> {metric: (score, status, per-run scores)} plus the case status."""
    out = {}
    for s in results["evalSets"]:
        for c in s["cases"]:
            out[(s["evalSetId"], c["evalId"])] = {
                "status": c["status"],
                **{m["name"]: (m["score"], m["status"], m["runs"]) for m in c["metrics"]}}
    return out


# ------------------------------------------------------------------ a rich eval set

INV_TOOL_USES = {
    "invocation_id": "t1",
    "user_content": {"role": "user", "parts": [{"text": "Weather in Paris and Rome?"}]},
    "final_response": {"role": "model", "parts": [{"text": "Paris: sunny, 21 C. Rome: 24 C."}]},
    "intermediate_data": {
        "tool_uses": [{"id": "a", "name": "get_weather", "args": {"city": "Paris", "unit_system": "metric"}},
                      {"id": "b", "name": "get_weather", "args": {"city": "Rome", "unit_system": "metric"}}],
        "tool_responses": [{"id": "a", "name": "get_weather", "response": {"temp_c": 21}}],
        "intermediate_responses": [["planner", [{"text": "Looking both up."}]]],
    },
    "rubrics": [{"rubric_id": "r_inv", "rubric_content": {"text_property": "Names both cities."}}],
}
INV_EVENTS = {
    "invocation_id": "t2",
    "user_content": {"role": "user", "parts": [{"text": "And tomorrow in Oslo?"}]},
    "final_response": {"role": "model", "parts": [{"text": "Oslo tomorrow: rain, 9 C."}]},
    "intermediate_data": {"invocation_events": [
        {"author": "root", "content": {"role": "model", "parts": [
            {"function_call": {"name": "get_forecast", "args": {"city": "Oslo", "days_ahead": 1}}}]}},
        {"author": "root", "content": {"role": "user", "parts": [
            {"function_response": {"name": "get_forecast", "response": {"rain_mm": 4}}}]}},
        {"author": "root", "content": {"role": "model", "parts": [
            {"inline_data": {"mime_type": "text/plain", "data": "aGk="}}]}},
    ]},
    "app_details": {"agent_details": {"root": {"name": "root", "instructions": "Be brief.",
                                               "tool_declarations": [{"function_declarations": []}]}}},
}
RICH = {
    "eval_set_id": "rich",
    "name": "Rich",
    "description": "Every part of the schema",
    "creation_timestamp": 1700000000.5,
    "eval_cases": [
        {"eval_id": "two_turns", "conversation": [INV_TOOL_USES, INV_EVENTS],
         "session_input": {"app_name": "weather", "user_id": "u1", "session_id": "fixed",
                           "state": {"user_pref": {"unit_system": "metric"}}},
         "rubrics": [{"rubric_id": "r_case", "rubric_content": {"text_property": "Is concise."},
                      "type": "FINAL_RESPONSE_QUALITY"}],
         "final_session_state": {"last_city": "Oslo"},
         "creation_timestamp": 1700000001.0},
        {"eval_id": "no_tools", "conversation": [
            {"user_content": {"role": "user", "parts": [{"text": "Hello"}]},
             "final_response": {"role": "model", "parts": [{"text": "Hi! Ask me about the weather."}]},
             "intermediate_data": {}}]},
    ],
}


def rich_runs(set_id: str = "rich") -> dict[str, Any]:
    actual_1 = copy.deepcopy([INV_TOOL_USES, INV_EVENTS])
    actual_1[0]["final_response"]["parts"][0]["text"] = "Sunny in Paris (21 C), 24 C in Rome."
    actual_1[1]["intermediate_data"]["invocation_events"][0]["usage_metadata"] = {
        "prompt_token_count": 120, "candidates_token_count": 9}
    actual_1[1]["duration"] = 1.5
    actual_2 = copy.deepcopy(actual_1)
    actual_2[0]["intermediate_data"]["tool_uses"].pop()  # forgot Rome
    hello = [{"user_content": {"parts": [{"text": "Hello"}]},
              "final_response": {"parts": [{"text": "Hi, ask me about the weather"}]}}]
    return replay((set_id, "two_turns", 1, actual_1), (set_id, "two_turns", 2, actual_2),
                  (set_id, "no_tools", 1, hello), (set_id, "no_tools", 2, hello))


CONFIG = {"criteria": {"tool_trajectory_avg_score": {"threshold": 0.8, "match_type": "IN_ORDER"},
                       "response_match_score": 0.3}}


def test_camel_case_twin_scores_the_same(repo):
    write_json(repo / "snake/rich.evalset.json", RICH)
    write_json(repo / "snake/test_config.json", CONFIG)
    write_json(repo / "snake/runs.json", rich_runs())
    write_json(repo / "camel/rich.evalset.json", camelize(RICH))
    write_json(repo / "camel/test_config.json", {"criteria": {
        "tool_trajectory_avg_score": {"threshold": 0.8, "matchType": "IN_ORDER"},
        "response_match_score": {"threshold": 0.3}}})
    write_json(repo / "camel/runs.json", camelize(rich_runs()))
    text = (repo / "camel/rich.evalset.json").read_text()
    assert '"evalSetId"' in text and '"toolUses"' in text and '"unit_system"' in text

    snake = load_eval_file(repo / "snake/rich.evalset.json")
    camel = load_eval_file(repo / "camel/rich.evalset.json")
    assert snake.eval_set == camel.eval_set
    assert snake.case_lines == camel.case_lines

    code_s, res_s = results_of(repo, "snake", replay_file="snake/runs.json")
    code_c, res_c = results_of(repo, "camel", replay_file="camel/runs.json")
    assert code_s == code_c == 1
    assert scores(res_s) == scores(res_c)
    got = scores(res_s)[("rich", "two_turns")]
    assert got["tool_trajectory_avg_score"] == (0.75, "failed", [1.0, 0.5])
    assert got["tool_call_count_v1"][0] == 1.25  # (2 + 1)/2 calls per turn in run 1, (1 + 1)/2 in run 2
    # 129 tokens in turn 2, none reported in turn 1: google-adk's AgentEvaluator pools the turns
    # that have a count (ADK's per-run overall, 64.5, divides by both; test_adk_aggregation.py)
    assert got["token_usage_v1"][0] == 129.0


def test_mixed_spelling_in_one_file(repo):
    data = copy.deepcopy(RICH)
    data["eval_cases"][0] = camelize(data["eval_cases"][0])  # one case camel, the rest snake
    write_json(repo / "rich.evalset.json", data)
    assert load_eval_file(repo / "rich.evalset.json").eval_set == load_eval_file(
        write_json(repo / "x/rich.evalset.json", RICH)).eval_set


@pytest.mark.parametrize("dump", ["full", "sparse", "by_alias"])
def test_files_written_by_adk_load_and_score_the_same(repo, dump):
    """ADK writes eval sets with every field (migrate), sparse (eval sets manager) or camel (API)."""
    adk = AdkEvalSet.model_validate(RICH)
    text = {"full": lambda: adk.model_dump_json(indent=2),
            "sparse": lambda: adk.model_dump_json(indent=2, exclude_unset=True,
                                                  exclude_defaults=True, exclude_none=True),
            "by_alias": lambda: adk.model_dump_json(by_alias=True)}[dump]()
    (repo / "adk").mkdir()
    (repo / "adk/rich.evalset.json").write_text(text, encoding="utf-8")
    write_json(repo / "mine/rich.evalset.json", RICH)
    for folder in ("adk", "mine"):
        write_json(repo / folder / "test_config.json", CONFIG)
    write_json(repo / "runs.json", rich_runs())
    ours = load_eval_file(repo / "adk/rich.evalset.json").eval_set
    assert [[tool_calls(i) for i in c.conversation] for c in ours.eval_cases] == [
        [tool_calls(i) for i in c.conversation] for c in load_eval_file(repo / "mine/rich.evalset.json").eval_set.eval_cases]
    assert scores(results_of(repo, "adk")[1]) == scores(results_of(repo, "mine")[1])


# ------------------------------------------------------------------ legacy formats

QUERY_LIST = [
    {"query": "Weather in Paris?", "reference": "Sunny in Paris, 21 C.",
     "expected_tool_use": [{"tool_name": "get_weather", "tool_input": {"city": "Paris"},
                            "mock_tool_output": {"temp_c": 21}}],
     "expected_intermediate_agent_responses": [{"author": "planner", "text": "Checking."}]},
    {"query": "Thanks!", "reference": "", "expected_tool_use": []},
]
CASE_LIST = [
    {"name": "paris", "data": QUERY_LIST,
     "initial_session": {"state": {"unit": "C"}, "app_name": "weather", "user_id": "u1"}},
    {"name": "hello", "data": [{"query": "Hi", "reference": "Hello!", "expected_tool_use": []}]},
]
SESSION = {"state": {"unit": "F"}, "app_name": "weather", "user_id": "u2"}


def adk_normalized(eval_set: Any, keep_eval_ids: bool = False) -> dict[str, Any]:
    """An eval set as ADK's model dumps it, with generated ids and timestamps blanked."""
    if isinstance(eval_set, dict):
        eval_set = AdkEvalSet.model_validate(eval_set)
    data = eval_set.model_dump()
    data.update(eval_set_id="-", name="-", creation_timestamp=0)
    for c in data["eval_cases"]:
        c["creation_timestamp"] = 0
        if not keep_eval_ids:
            c["eval_id"] = "-"
        for inv in c["conversation"]:
            inv.update(invocation_id="-", creation_timestamp=0)
    return data


def ours_as_adk(path: Path) -> AdkEvalSet:
    loaded = load_eval_file(path).eval_set
    return AdkEvalSet.model_validate_json(loaded.model_dump_json(by_alias=False, exclude_none=True))


def test_legacy_query_list_reads_like_adk(repo):
    path = write_json(repo / "evals/weather.test.json", QUERY_LIST)
    loaded = load_eval_file(path)
    assert loaded.legacy and loaded.eval_set.eval_set_id == "weather"
    (only,) = loaded.eval_set.eval_cases
    assert only.eval_id == "weather" and only.session_input is None and loaded.case_lines == {"weather": 1}
    first, second = only.conversation
    assert content_text(first.user_content) == "Weather in Paris?"
    assert content_text(first.final_response) == "Sunny in Paris, 21 C."
    assert [(c.name, c.args) for c in tool_calls(first)] == [("get_weather", {"city": "Paris"})]
    assert first.intermediate_data.intermediate_responses[0][0] == "planner"
    assert tool_calls(second) == [] and content_text(second.final_response) == ""

    adk = AgentEvaluator._get_eval_set_from_old_format(
        str(path), AdkEvalConfig(criteria=dict(DEFAULT_CRITERIA)), {})
    assert adk_normalized(ours_as_adk(path)) == adk_normalized(adk)


def test_legacy_case_list_reads_like_adk(repo):
    path = write_json(repo / "evals/weather.test.json", CASE_LIST)
    loaded = load_eval_file(path)
    assert [c.eval_id for c in loaded.eval_set.eval_cases] == ["paris", "hello"]
    session = loaded.eval_set.eval_cases[0].session_input
    assert (session.app_name, session.user_id, session.state) == ("weather", "u1", {"unit": "C"})
    assert loaded.eval_set.eval_cases[1].session_input is None
    text = path.read_text()
    assert loaded.case_lines == {name: 1 + text[:text.index(f'"name": "{name}"')].count("\n")
                                 for name in ("paris", "hello")}
    adk = convert_eval_set_to_pydantic_schema("weather", CASE_LIST)
    assert adk_normalized(ours_as_adk(path), keep_eval_ids=True) == adk_normalized(adk, keep_eval_ids=True)


def test_initial_session_beside_a_legacy_file(repo):
    path = write_json(repo / "evals/weather.test.json", QUERY_LIST)
    write_json(repo / "evals/initial-session.json", SESSION)
    session = load_eval_file(path).eval_set.eval_cases[0].session_input
    assert (session.app_name, session.user_id, session.state) == ("weather", "u2", {"unit": "F"})
    adk = AgentEvaluator._get_eval_set_from_old_format(
        str(path), AdkEvalConfig(criteria=dict(DEFAULT_CRITERIA)), SESSION)
    assert adk_normalized(ours_as_adk(path)) == adk_normalized(adk)
    # In the case-list format a case's own initial_session wins; the file fills in the others.
    path = write_json(repo / "evals/cases.test.json", CASE_LIST)
    sessions = [c.session_input for c in load_eval_file(path).eval_set.eval_cases]
    assert [s.user_id for s in sessions] == ["u1", "u2"]


def test_initial_session_is_not_applied_to_new_format_files(repo):
    path = write_json(repo / "evals/s.evalset.json", evalset("s", case("c1")))
    write_json(repo / "evals/initial-session.json", SESSION)
    assert load_eval_file(path).eval_set.eval_cases[0].session_input is None


def legacy_replay(set_id: str, eval_id: str, calls_turn_1: list[dict]) -> dict[str, Any]:
    turn_1 = invocation("Weather in Paris?", "It is sunny in Paris, 21 C.", calls_turn_1)
    turn_2 = invocation("Thanks!", "You're welcome.", [])
    return replay((set_id, eval_id, 1, [turn_1, turn_2]),
                  (set_id, eval_id, 2, [turn_1, {**turn_2, "final_response": None}]))


@pytest.mark.parametrize("with_session", [False, True])
def test_migrate_writes_what_adk_writes(repo, with_session):
    old = write_json(repo / "weather.test.json", QUERY_LIST)
    args = ["migrate", "weather.test.json", "ours.evalset.json"]
    session_file = None
    if with_session:
        session_file = str(write_json(repo / "session.json", SESSION))
        args += ["--initial-session", "session.json"]
    out = run_cli(args, repo)
    assert out.code == 0, out.output
    AgentEvaluator.migrate_eval_data_to_new_schema(str(old), str(repo / "adk.evalset.json"), session_file)
    ours = json.loads((repo / "ours.evalset.json").read_text())
    adk = json.loads((repo / "adk.evalset.json").read_text())
    assert ours["eval_set_id"] == "weather" and ours["eval_cases"][0]["eval_id"] == "weather"
    assert "evalSetId" not in json.dumps(ours)  # snake_case, as ADK writes
    assert adk_normalized(ours) == adk_normalized(adk)


def test_migrate_says_the_old_file_must_go_and_run_says_so_too(repo):
    """Left beside the new file, the old one is evaluated a second time by the next `run .`
    (told apart by path, as in a monorepo): both commands say to delete it."""
    write_json(repo / "weather.test.json", QUERY_LIST)
    out = run_cli(["migrate", "weather.test.json", "weather.evalset.json"], repo)
    assert out.code == 0, out.output
    assert out.stderr.splitlines()[-1] == (
        "evalcheck: note: delete weather.test.json now (or move it out of the "
        "folders `evalcheck run` searches): it holds eval set 'weather' too, and "
        "a run that finds both evaluates it twice")
    write_json(repo / "runs.json", legacy_replay("weather", "weather", [call("get_weather", city="Paris")]))
    out = run_cli(["run", ".", "--replay", "runs.json"], repo)
    assert out.code == 2  # its recorded runs do not say which of the two files they are of
    assert ("evalcheck: warning: weather.test.json and weather.evalset.json share the eval set id "
            "'weather': both are evaluated; if weather.evalset.json was migrated from "
            "weather.test.json, delete weather.test.json") in out.stderr
    (repo / "weather.test.json").unlink()
    assert run_cli(["run", ".", "--replay", "runs.json"], repo).code == 1  # runs (turn 2 fails)


def test_migrated_file_scores_like_the_legacy_file(repo):
    write_json(repo / "legacy/weather.test.json", QUERY_LIST)
    assert run_cli(["migrate", "legacy/weather.test.json", "migrated/weather.evalset.json"], repo).code == 0
    write_json(repo / "runs.json", legacy_replay("weather", "weather", [call("get_weather", city="Paris")]))
    code_l, legacy = results_of(repo, "legacy")
    code_m, migrated = results_of(repo, "migrated")
    assert code_l == code_m == 1  # the second turn's empty reference fails response_match_score
    assert scores(legacy) == scores(migrated)
    assert scores(legacy)[("weather", "weather")]["tool_trajectory_avg_score"] == (1.0, "passed", [1.0, 1.0])


def test_adk_migrated_file_scores_like_the_legacy_file(repo):
    """A file written by ADK's own migrate (random ids, every field) reads and scores the same."""
    old = write_json(repo / "legacy/weather.test.json", QUERY_LIST)
    (repo / "adk").mkdir()
    AgentEvaluator.migrate_eval_data_to_new_schema(str(old), str(repo / "adk/weather.evalset.json"))
    adk_set = load_eval_file(repo / "adk/weather.evalset.json").eval_set
    runs = legacy_replay(adk_set.eval_set_id, adk_set.eval_cases[0].eval_id,
                         [call("get_weather", city="Lyon")])
    write_json(repo / "adk_runs.json", runs)
    write_json(repo / "runs.json", legacy_replay("weather", "weather", [call("get_weather", city="Lyon")]))
    adk_scores = list(scores(results_of(repo, "adk", replay_file="adk_runs.json")[1]).values())
    legacy_scores = list(scores(results_of(repo, "legacy")[1]).values())
    assert adk_scores == legacy_scores
    assert legacy_scores[0]["tool_trajectory_avg_score"][0] == 0.5


# ------------------------------------------------------------------ discovery


def make_tree(repo: Path) -> None:
    one = lambda set_id: evalset(set_id, case("c1"))  # noqa: E731
    write_json(repo / "test_config.json", {"criteria": {"response_match_score": 0.1}})
    write_json(repo / "top.evalset.json", one("top"))
    write_json(repo / "agents/x/test_config.json", {"criteria": {"tool_trajectory_avg_score": 0.5}})
    write_json(repo / "agents/x/x.evalset.json", one("x"))
    write_json(repo / "agents/x/deeper/deepest/y.test.json", [{"query": "hi", "reference": "ok"}])
    write_json(repo / "agents/z/z.evalset.json", one("z"))
    write_json(repo / "agents/x/notes.json", {})  # not an eval file
    write_json(repo / "agents/x/test_config.json.bak", {})
    for skipped in (".git", "node_modules/pkg", ".venv", "venv", "env", "build", "dist",
                    "__pycache__", "pkg.egg-info", ".tox", "myenv", "agents/x/build"):
        write_json(repo / skipped / "skip.evalset.json", one("skip-" + skipped))
    (repo / "myenv/pyvenv.cfg").write_text("home = /usr/bin\n")  # a virtualenv by any name


def found(targets) -> list[tuple[str, str | None, list[str]]]:
    return [(t.loaded.display_path, t.config.display_path, t.case_ids) for t in targets]


def test_discovery_recursion_skips_and_nearest_config(repo, monkeypatch):
    make_tree(repo)
    monkeypatch.chdir(repo)
    targets = discover(["."], root=repo).targets
    # Walk order: a folder's files (sorted), then its subfolders (sorted).
    assert found(targets) == [
        ("top.evalset.json", "test_config.json", ["c1"]),
        ("agents/x/x.evalset.json", "agents/x/test_config.json", ["c1"]),
        ("agents/x/deeper/deepest/y.test.json", "agents/x/test_config.json", ["y"]),
        ("agents/z/z.evalset.json", "test_config.json", ["c1"]),
    ]
    assert [m.name for m in targets[1].config.metrics] == ["tool_trajectory_avg_score", *EFFICIENCY]


def test_discovery_from_a_subfolder_uses_repo_relative_paths(repo):
    make_tree(repo)
    code, res = results_of(repo / "agents", ".", replay_file=str(write_json(
        repo / "runs.json", replay(*[(s, c, 1, [invocation()]) for s, c in
                                     (("y", "y"), ("x", "c1"), ("z", "c1"))]))))
    assert [(s["path"], s["configPath"]) for s in res["evalSets"]] == [
        ("agents/x/x.evalset.json", "agents/x/test_config.json"),
        ("agents/x/deeper/deepest/y.test.json", "agents/x/test_config.json"),
        ("agents/z/z.evalset.json", "test_config.json"),
    ]


def test_config_outside_the_repository_is_not_used(tmp_path, monkeypatch):
    write_json(tmp_path / "test_config.json", {"criteria": {"response_match_score": 0.01}})
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    write_json(repo / "agents/a.evalset.json", evalset("a", case("c1")))
    monkeypatch.chdir(repo)
    (target,) = discover(["agents"], root=repo).targets
    assert target.config.path is None and target.config.display_path is None
    assert [(m.name, m.threshold) for m in target.config.metrics] == [
        ("tool_trajectory_avg_score", 1.0), ("response_match_score", 0.8),
        *[(name, None) for name in EFFICIENCY]]


def test_config_option_overrides_discovered_configs(repo, monkeypatch):
    make_tree(repo)
    monkeypatch.chdir(repo)
    ci = write_json(repo / "ci/criteria.json", {"criteria": {"response_match_score": 0.9}})
    targets = discover(["."], root=repo, config_file=ci).targets
    assert {t.config.display_path for t in targets} == {str(ci)}
    assert all([m.name for m in t.config.metrics] == ["response_match_score", *EFFICIENCY] for t in targets)


def test_case_filter(repo, monkeypatch):
    monkeypatch.chdir(repo)
    write_json(repo / "e/s.evalset.json", evalset("s", case("a"), case("b"), case("c")))
    assert found(discover(["e/s.evalset.json:c,a"], root=repo).targets)[0][2] == ["a", "c"]  # file order
    assert found(discover(["e/s.evalset.json:b", "e/s.evalset.json:a"], root=repo).targets)[0][2] == ["a", "b"]
    assert found(discover(["e/s.evalset.json:b", "e"], root=repo).targets)[0][2] == ["a", "b", "c"]
    write_json(repo / "runs.json", replay(("s", "b", 1, [invocation()])))
    code, res = results_of(repo, "e/s.evalset.json:b")
    assert code == 0 and [c["evalId"] for c in res["evalSets"][0]["cases"]] == ["b"]


def test_default_criteria(repo):
    write_json(repo / "e/s.evalset.json", evalset("s", case("c1", invocation(response="Sunny and warm", tools=[]))))
    write_json(repo / "runs.json", replay(("s", "c1", 1, [invocation(response="Sunny, warm", tools=[])])))
    code, res = results_of(repo, "e")
    metrics = res["evalSets"][0]["cases"][0]["metrics"]
    assert [(m["name"], m["threshold"], m["status"]) for m in metrics] == [
        ("tool_trajectory_avg_score", 1.0, "passed"), ("response_match_score", 0.8, "passed"),
        *[(name, None, "informational") for name in EFFICIENCY]]
    assert res["evalSets"][0]["configPath"] is None and code == 0


# ------------------------------------------------------------------ results, order, lines, reports


def test_line_points_at_the_case_id(repo):
    text = """{
  "eval_set_id": "lines",
  "eval_cases": [
    {
      "conversation": [{"user_content": {"parts": [{"text": "say \\"eval_id\\": \\"second\\""}]}}],
      "eval_id": "first"
    },
    {"evalId":
        "second", "conversation": []},
    {
      "eval_id": "東京_天気", "conversation": []
    },
    {"eval_id": "caf\\u00e9", "conversation": []}
  ]
}
"""
    (repo / "e").mkdir()
    (repo / "e/lines.evalset.json").write_text(text, encoding="utf-8")
    assert load_eval_file(repo / "e/lines.evalset.json").case_lines == {
        "first": 6, "second": 8, "東京_天気": 11, "café": 13}
    write_json(repo / "runs.json", replay(*[("lines", c, 1, []) for c in ("first", "second", "東京_天気", "café")]))
    _, res = results_of(repo, "e")
    assert [(c["evalId"], c["line"]) for c in res["evalSets"][0]["cases"]] == [
        ("first", 6), ("second", 8), ("東京_天気", 11), ("café", 13)]


def two_files(repo: Path) -> None:
    write_json(repo / "b/b.evalset.json", evalset("b", case("z"), case("a")))
    write_json(repo / "a/a.evalset.json", evalset("a", case("m"), case("k")))
    runs = [("b", "a", 2), ("b", "a", 1), ("a", "k", 1), ("b", "z", 1), ("a", "m", 1)]
    write_json(repo / "runs.json", replay(*[(s, c, n, [invocation()]) for s, c, n in runs]))


def test_results_follow_the_input_files_not_the_replay(repo):
    two_files(repo)
    _, res = results_of(repo, ".")
    assert [(s["evalSetId"], [c["evalId"] for c in s["cases"]]) for s in res["evalSets"]] == [
        ("a", ["m", "k"]), ("b", ["z", "a"])]
    assert [r["run"] for r in res["evalSets"][1]["cases"][1]["runs"]] == [1, 2]
    _, res = results_of(repo, "b", "a")  # PATH arguments keep their order
    assert [s["evalSetId"] for s in res["evalSets"]] == ["b", "a"]


def test_results_junit_and_markdown(repo):
    write_json(repo / "e/w.evalset.json", evalset(
        "w", case("good", invocation(response="Sunny in Paris", tools=[call("get_weather", city="Paris")])),
        case("bad", invocation(response="Rain in Rome", tools=[call("get_weather", city="Rome")]))))
    good = invocation(response="Sunny in Paris", tools=[call("get_weather", city="Paris")])
    bad = invocation(response="Rain in Rome", tools=[call("get_weather", city="Milan")])
    rome = invocation(response="Rain in Rome", tools=[call("get_weather", city="Rome")])
    write_json(repo / "runs.json", replay(("w", "good", 1, [good]), ("w", "good", 2, [good]),
                                          ("w", "bad", 1, [bad]), ("w", "bad", 2, [rome])))
    out = run_cli(["run", "e", "--replay", "runs.json", "--results", "out/r.json",
                   "--junit", "out/junit.xml", "--markdown", "out/report.md"], repo)
    assert out.code == 1
    assert "e/w.evalset.json" in out.stdout and "bad" in out.stdout
    res = json.loads((repo / "out/r.json").read_text())
    assert res["version"] == 1 and res["passed"] is False
    reliability = res["summary"].pop("reliability")  # good 2/2 runs, bad 1/2: pass^2 1/2, pass@2 2/2
    assert res["summary"] == {"evalSets": 1, "cases": 2, "passed": 1, "failed": 1, "errored": 0,
                              "notEvaluated": 0}
    assert (reliability["k"], reliability["cases"], reliability["passHatK"]["rate"],
            reliability["passAtK"]["rate"]) == (2, 2, 0.5, 1.0)
    assert (round(reliability["passHatK"]["low"], 4), round(reliability["passAtK"]["low"], 4)) == (0.0945, 0.3424)
    (eval_set,) = res["evalSets"]
    assert (eval_set["evalSetId"], eval_set["path"], eval_set["configPath"]) == ("w", "e/w.evalset.json", None)
    good_case, bad_case = eval_set["cases"]
    assert good_case["status"] == "passed" and bad_case["status"] == "failed"
    assert [(r["run"], r["status"]) for r in bad_case["runs"]] == [(1, "failed"), (2, "passed")]
    trajectory = bad_case["metrics"][0]
    assert {k: trajectory[k] for k in ("name", "threshold", "score", "status", "runs")} == {
        "name": "tool_trajectory_avg_score", "threshold": 1.0, "score": 0.5, "status": "failed",
        "runs": [0.0, 1.0]}
    assert set(trajectory) >= {"details"}

    suites = ET.parse(repo / "out/junit.xml").getroot()
    assert (suites.tag, suites.get("tests"), suites.get("failures"), suites.get("errors")) == (
        "testsuites", "2", "1", "0")
    cases = suites.findall("./testsuite/testcase")
    assert [(c.get("name"), c.get("file"), c.get("line")) for c in cases] == [
        ("good", "e/w.evalset.json", str(good_case["line"])), ("bad", "e/w.evalset.json", str(bad_case["line"]))]
    assert cases[0].find("failure") is None and cases[1].find("failure") is not None
    assert "tool_trajectory_avg_score" in cases[1].find("failure").get("message")

    markdown = (repo / "out/report.md").read_text()
    assert "bad" in markdown and "tool_trajectory_avg_score" in markdown


def test_junit_time_is_the_cases_own_time_not_its_runs_start_up(repo):
    """A run's recorded time includes the agent's start-up (a warm worker imports ADK before
    its first run): JUnit showed 90.5 s for one case of a 35 s run. A case's time is its
    runs' turns; a run without timed turns (an errored one) keeps its recorded time."""
    write_json(repo / "e/w.evalset.json", evalset("w", case("c"), case("broken")))
    timed = [{**invocation(invocation_id="inv-1"), "duration": 2.5},
             {**invocation(invocation_id="inv-2"), "duration": 1.25}]
    runs = replay(*({"evalSetId": "w", "evalId": "c", "run": n, "invocations": timed,
                     "error": None, "durationSeconds": 45.0} for n in (1, 2)),
                  {"evalSetId": "w", "evalId": "broken", "run": 1, "invocations": [],
                   "error": "the agent exited with status 1", "durationSeconds": 0.5})
    write_json(repo / "runs.json", runs)
    out = run_cli(["run", "e", "--replay", "runs.json", "--num-runs", "2", "--results", "r.json",
                   "--junit", "junit.xml"], repo)
    assert out.code == 1, out.output
    cases = {c.get("name"): c for c in ET.parse(repo / "junit.xml").getroot().iter("testcase")}
    assert cases["c"].get("time") == "7.500"  # 2 runs x (2.5 + 1.25), not 2 x 45
    assert cases["broken"].get("time") == "0.500"
    results = json.loads((repo / "r.json").read_text())
    assert [r["durationSeconds"] for r in results["evalSets"][0]["cases"][0]["runs"]] == [3.75, 3.75]


def test_junit_is_valid_xml_whatever_the_ids_and_texts(repo):
    """XML 1.0 cannot carry most control characters, U+FFFE or U+FFFF, not even as character
    references: in ids, file names, errors and stderr they are shown as escapes, as in the
    terminal, and distinct ids stay distinct."""
    set_id, ids = "s\x1b[0m", ["c\x01", "d\x02"]
    write_json(repo / "e/w\x01.evalset.json", evalset(set_id, *(case(i) for i in ids)))
    write_json(repo / "runs.json", replay((set_id, ids[0], 1, [invocation()]), {
        "evalSetId": set_id, "evalId": ids[1], "run": 1, "invocations": [],
        "error": "boom \uffff \ufffe \x01", "stderrTail": "\x1b[31mred\x1b[0m \U0001F600"}))
    out = run_cli(["run", "e", "--replay", "runs.json", "--junit", "out/junit.xml"], repo)
    assert out.code == 1, out.output
    suite = ET.parse(repo / "out/junit.xml").getroot().find("testsuite")
    assert (suite.get("name"), suite.get("file")) == ("s\\x1b[0m", "e/w\\x01.evalset.json")
    cases = suite.findall("testcase")
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        ("s\\x1b[0m", "c\\x01"), ("s\\x1b[0m", "d\\x02")]
    error = cases[1].find("error")
    assert error.get("message") == "agent run 1 errored"
    assert "agent run 1 error: boom \\uffff \\ufffe \\x01\nstderr tail:\n\\x1b[31mred\\x1b[0m \U0001F600" \
        in error.text


def test_exit_status_0_when_every_gate_passes(repo):
    write_json(repo / "e/w.evalset.json", evalset("w", case("c1", invocation(response="same words"))))
    write_json(repo / "runs.json", replay(("w", "c1", 1, [invocation(response="same words")])))
    out = run_cli(["run", "e", "--replay", "runs.json"], repo)
    assert out.code == 0, out.output
    # what was assumed is said (issue 20: no silent defaults), and nothing else
    assert out.stderr == ("evalcheck: warning: no test_config.json beside e/w.evalset.json: ADK's "
                          "default criteria (tool_trajectory_avg_score 1.0, response_match_score 0.8)\n")
    write_json(repo / "e/test_config.json", {"criteria": {"response_match_score": 0.8}})
    out = run_cli(["run", "e", "--replay", "runs.json"], repo)
    assert out.code == 0 and out.stderr == "", out.output


def test_migrate_uses_the_initial_session_beside_the_file(repo):
    write_json(repo / "old/weather.test.json", QUERY_LIST)
    write_json(repo / "old/initial-session.json", SESSION)
    out = run_cli(["migrate", "old/weather.test.json", "new/sub/weather.evalset.json"], repo)
    assert out.code == 0 and "new/sub/weather.evalset.json" in out.stdout
    migrated = json.loads((repo / "new/sub/weather.evalset.json").read_text())
    assert migrated["eval_cases"][0]["session_input"] == SESSION
    assert load_eval_file(repo / "new/sub/weather.evalset.json").eval_set == load_eval_file(
        repo / "old/weather.test.json").eval_set


def test_replay_may_hold_runs_of_cases_left_out_by_a_filter(repo):
    write_json(repo / "e/s.evalset.json", evalset("s", case("a"), case("b")))
    write_json(repo / "runs.json", replay(("s", "a", 1, [invocation()]), ("s", "b", 1, [invocation(response="no")])))
    code, res = results_of(repo, "e/s.evalset.json:a")
    assert code == 0 and [c["evalId"] for c in res["evalSets"][0]["cases"]] == ["a"]
