"""``--adk-eval-history DIR``: results adk web opens (issue 23.5), checked with google-adk's own
results manager, models and web server."""

from __future__ import annotations

import json
import re

import pytest

from corehelpers import case, evalset, invocation, replay, run_cli, write_json

pytest.importorskip("google.adk")

from google.adk.evaluation.eval_result import EvalSetResult  # noqa: E402
from google.adk.evaluation.evaluator import EvalStatus  # noqa: E402
from google.adk.evaluation.local_eval_set_results_manager import LocalEvalSetResultsManager  # noqa: E402
from google.adk.evaluation.local_eval_sets_manager import LocalEvalSetsManager  # noqa: E402

CRITERIA = {"criteria": {"response_match_score": 0.5, "tool_trajectory_avg_score": 1.0}}
WEATHER = {"name": "get_weather", "args": {"city": "Paris"}}


def two_turns(first: str = "Sunny in Paris.", tools: list | None = None) -> list[dict]:
    return [invocation("Weather in Paris?", first, tools if tools is not None else [WEATHER], "inv-1"),
            invocation("Thanks", "You are welcome.", [], "inv-2")]


@pytest.fixture
def project(repo):
    """An agent folder ``weather`` with one eval set of two cases and recorded runs: ``paris``
    passes both runs, ``rome`` passes run 1 and misses the tool call in run 2; ``oslo``'s
    agent errored in run 2."""
    cases = [dict(case("paris", *two_turns()), session_input={"app_name": "weather", "user_id": "ada",
                                                                  "state": {"units": "celsius"}}),
             case("rome", *two_turns()), case("oslo", *two_turns())]
    write_json(repo / "weather/evals/trip.evalset.json", evalset("trip", *cases))
    write_json(repo / "weather/evals/test_config.json", CRITERIA)
    runs = [("trip", "paris", 1, two_turns()), ("trip", "paris", 2, two_turns()),
            ("trip", "rome", 1, two_turns()), ("trip", "rome", 2, two_turns(tools=[])),
            ("trip", "oslo", 1, two_turns()),
            {"evalSetId": "trip", "evalId": "oslo", "run": 2, "invocations": [],
             "error": "agent crashed"}]
    write_json(repo / "runs.json", replay(*runs))
    return repo


def history(repo, *extra: str):
    out = run_cli(["run", "weather/evals", "--replay", "runs.json", "--results", "r.json",
                   "--adk-eval-history", "out/agents", *extra], repo)
    return out, json.loads((repo / "r.json").read_text())


def test_adk_loads_lists_and_serves_the_history_as_adk_web_does(project):
    out, results = history(project)
    assert out.code == 1, out.output  # rome's mean trajectory 0.75 < 1.0; oslo errored
    agents = project / "out/agents"
    manager = LocalEvalSetResultsManager(agents_dir=str(agents))
    ids = manager.list_eval_set_results("weather")
    assert len(ids) == 1 and re.fullmatch(r"weather_trip_\d+\.\d+", ids[0]), ids
    assert (agents / "weather/.adk/eval_history" / f"{ids[0]}.evalset_result.json").is_file()
    loaded = manager.get_eval_set_result("weather", ids[0])
    assert loaded.eval_set_result_id == loaded.eval_set_result_name == ids[0]
    assert loaded.eval_set_id == "trip"
    assert loaded.creation_timestamp == float(ids[0].rsplit("_", 1)[1])

    # one EvalCaseResult per run, each with that run's own verdict
    status = {(r.eval_id, r.session_id): r.final_eval_status for r in loaded.eval_case_results}
    assert status == {("paris", "evalcheck-paris-run-1"): EvalStatus.PASSED,
                      ("paris", "evalcheck-paris-run-2"): EvalStatus.PASSED,
                      ("rome", "evalcheck-rome-run-1"): EvalStatus.PASSED,
                      ("rome", "evalcheck-rome-run-2"): EvalStatus.FAILED,
                      ("oslo", "evalcheck-oslo-run-1"): EvalStatus.PASSED,
                      ("oslo", "evalcheck-oslo-run-2"): EvalStatus.FAILED}
    by_case = {c["evalId"]: c for c in results["evalSets"][0]["cases"]}
    rome2 = [r for r in loaded.eval_case_results if r.session_id == "evalcheck-rome-run-2"][0]
    scores = {m.metric_name: (m.score, m.threshold, m.eval_status) for m in rome2.overall_eval_metric_results}
    evalcheck = {m["name"]: m["runs"][1] for m in by_case["rome"]["metrics"]}
    assert scores["tool_trajectory_avg_score"] == (evalcheck["tool_trajectory_avg_score"], 1.0, EvalStatus.FAILED)
    assert scores["tool_trajectory_avg_score"][0] == 0.5  # turn 1 missed its call, turn 2 matched
    assert scores["response_match_score"][2] == EvalStatus.PASSED
    # per invocation: the actual and expected invocations and each metric's score on it
    turns = rome2.eval_metric_result_per_invocation
    assert [t.actual_invocation.invocation_id for t in turns] == ["inv-1", "inv-2"]
    assert turns[0].expected_invocation.intermediate_data.tool_uses[0].name == "get_weather"
    trajectory = [[m for m in t.eval_metric_results if m.metric_name == "tool_trajectory_avg_score"][0]
                  for t in turns]
    assert [(m.score, m.eval_status) for m in trajectory] == [(0.0, EvalStatus.FAILED), (1.0, EvalStatus.PASSED)]
    # the drill-down: the run's conversation as session events, and the case's session input
    paris = [r for r in loaded.eval_case_results if r.session_id == "evalcheck-paris-run-1"][0]
    session = paris.session_details
    assert (session.id, session.app_name, session.user_id, session.state) == \
        ("evalcheck-paris-run-1", "weather", "ada", {"units": "celsius"})
    assert paris.user_id == "ada"
    assert [(e.author, e.invocation_id) for e in session.events] == [
        ("user", "inv-1"), ("weather", "inv-1"), ("weather", "inv-1"), ("user", "inv-2"), ("weather", "inv-2")]
    assert session.events[1].get_function_calls()[0].args == {"city": "Paris"}
    assert session.events[2].content.parts[0].text == "Sunny in Paris."
    # an errored run: FAILED with no metric results, as ADK writes a failed inference
    oslo2 = [r for r in loaded.eval_case_results if r.session_id == "evalcheck-oslo-run-2"][0]
    assert oslo2.overall_eval_metric_results == [] and oslo2.session_details.events == []

    # the eval set where adk web's eval sets manager reads it
    eval_set = LocalEvalSetsManager(agents_dir=str(agents)).get_eval_set("weather", "trip")
    assert [c.eval_id for c in eval_set.eval_cases] == ["paris", "rome", "oslo"]

    # adk web's own API (its FastAPI app) lists and serves them
    from fastapi.testclient import TestClient
    from google.adk.cli.fast_api import get_fast_api_app

    client = TestClient(get_fast_api_app(agents_dir=str(agents), web=True))
    assert client.get("/dev/apps/weather/eval-results").json() == {"evalResultIds": ids}
    served = client.get(f"/dev/apps/weather/eval-results/{ids[0]}")
    assert served.status_code == 200 and len(served.json()["evalCaseResults"]) == 6
    assert client.get("/dev/apps/weather/eval-sets").json() == {"evalSetIds": ["trip"]}


def test_the_file_is_snake_case_as_adk_writes_it(project):
    history(project)
    [written] = (project / "out/agents/weather/.adk/eval_history").iterdir()
    raw = json.loads(written.read_text())
    adk = json.loads(EvalSetResult.model_validate(raw).model_dump_json())  # as ADK's manager writes
    assert set(raw) == set(adk)
    assert set(raw["eval_case_results"][0]) == set(adk["eval_case_results"][0])
    assert set(raw["eval_case_results"][0]["overall_eval_metric_results"][0]) <= \
        set(adk["eval_case_results"][0]["overall_eval_metric_results"][0])


def test_one_run_gives_each_case_evalchecks_verdict(project):
    runs = json.loads((project / "runs.json").read_text())
    runs["runs"] = [r for r in runs["runs"] if r["run"] == 1]  # paris, rome, oslo
    runs["runs"][1]["invocations"] = two_turns(tools=[])  # rome misses its tool call
    write_json(project / "runs.json", runs)
    out, results = history(project)
    manager = LocalEvalSetResultsManager(agents_dir=str(project / "out/agents"))
    newest = max(manager.list_eval_set_results("weather"), key=lambda i: float(i.rsplit("_", 1)[1]))
    adk = {r.eval_id: r.final_eval_status.name for r in manager.get_eval_set_result("weather", newest).eval_case_results}
    ours = {c["evalId"]: c["status"] for c in results["evalSets"][0]["cases"]}
    assert ours == {"paris": "passed", "rome": "failed", "oslo": "passed"}
    assert adk == {"paris": "PASSED", "rome": "FAILED", "oslo": "PASSED"}


def test_never_replaces_a_file_and_refuses_names_adk_cannot_use(project):
    (project / "out/agents/weather").mkdir(parents=True)
    mine = project / "out/agents/weather/trip.evalset.json"
    mine.write_text("my own eval set\n")
    out, _ = history(project)
    assert mine.read_text() == "my own eval set\n"
    out, _ = history(project, "--app-name", "../escape")
    assert out.code == 1
    assert "not written to the ADK eval history: its app name '../escape' cannot name a file" in out.stderr
    assert not (project / "out/escape").exists() and not (project / "out/agents/..").joinpath("escape").exists()


def test_known_secrets_never_reach_the_history(project, monkeypatch):
    monkeypatch.setenv("WEATHER_API_KEY", "s3cr3t-weather-key-123")
    runs = json.loads((project / "runs.json").read_text())
    runs["runs"][0]["invocations"][0]["final_response"]["parts"][0]["text"] = "Key s3cr3t-weather-key-123, sunny."
    write_json(project / "runs.json", runs)
    history(project)
    [written] = (project / "out/agents/weather/.adk/eval_history").iterdir()
    assert "s3cr3t-weather-key-123" not in written.read_text()
    assert "sunny" in written.read_text()
