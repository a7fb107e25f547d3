"""A real google-adk agent (tools that run, a sub-agent, state from session_input; its
model is scripted and offline) evaluated through the ADK bridge and through a real
``adk api_server``: the same invocations, the same scores, and the scores ADK's own
AgentEvaluator reports for the deterministic metrics."""

from __future__ import annotations

import asyncio
import json
import shlex
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import PY, REPO

ADK_DIR = REPO / "tests" / "adk_agent"
EVALS = ADK_DIR / "evals"
EVAL_FILE = EVALS / "weather_app.evalset.json"
DETERMINISTIC = ("tool_trajectory_avg_score", "response_match_score")
ADK_BIN = Path(PY).parent / "adk"

pytest.importorskip("google.adk")


def evalcheck(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-c", "from checker.cli import main; main()", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_and_load(tmp: Path, *agent_args: str) -> tuple[dict, dict, subprocess.CompletedProcess]:
    results, inference = tmp / "results.json", tmp / "inference.json"
    done = evalcheck("run", str(EVALS), *agent_args, "--num-runs", "2", "--concurrency", "2",
                     "--results", str(results), "--inference-out", str(inference))
    assert done.returncode == 1, done.stderr  # wrong_expectation fails on purpose
    assert "wrong_expectation: tool_trajectory_avg_score 0.00 < 1.00" in done.stdout
    return json.loads(results.read_text()), json.loads(inference.read_text()), done


@pytest.fixture(scope="module")
def via_bridge(tmp_path_factory):
    command = f"{shlex.quote(str(Path(PY).parent / 'evalcheck-adk'))} {shlex.quote(str(ADK_DIR / 'weather_app'))}"
    return run_and_load(tmp_path_factory.mktemp("bridge"), "--agent-command", command)


@pytest.fixture(scope="module")
def via_api_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("api")
    # A copy: the server writes its .adk folder next to the agents.
    agents = tmp / "agents"
    shutil.copytree(ADK_DIR, agents, ignore=shutil.ignore_patterns(".adk", "__pycache__", "evals"))
    port = free_port()
    # No --session_service_uri: evalcheck has the server it starts keep sessions in memory.
    server = f"{shlex.quote(str(ADK_BIN))} api_server --port {port} {shlex.quote(str(agents))}"
    return (*run_and_load(tmp, "--agent-url", f"http://127.0.0.1:{port}",
                          "--agent-server-command", server), agents)


def scores(results: dict, names=DETERMINISTIC) -> dict:
    return {(c["evalId"], m["name"]): m["runs"] for s in results["evalSets"] for c in s["cases"]
            for m in c["metrics"] if m["name"] in names}


def normalized(inference: dict) -> list:
    """The recorded runs without what differs by nature: ids, timestamps, durations."""
    def scrub(value):
        if isinstance(value, dict):
            return {k: scrub(v) for k, v in value.items()
                    if k not in ("invocationId", "creationTimestamp", "duration", "id")}
        if isinstance(value, list):
            return [scrub(v) for v in value]
        return value
    return [scrub({k: v for k, v in run.items() if k != "durationSeconds"}) for run in inference["runs"]]


def test_bridge_runs_the_real_agent(via_bridge):
    results, inference, done = via_bridge
    runs = {(r["evalId"], r["run"]): r for r in inference["runs"]}
    assert len(runs) == 8 and all(r.get("error") is None for r in runs.values())
    # Session state reached the instruction (user name) and the tool (units).
    compare = runs[("compare_fahrenheit", 1)]["invocations"][0]
    assert compare["finalResponse"]["parts"][0]["text"] == (
        "Bob, it is clear in Rome, 75 degrees fahrenheit and it is rainy in Oslo, "
        "48 degrees fahrenheit. Rome is warmer.")
    # The second turn went through the sub-agent, with its tool call and response.
    second = runs[("weather_then_forecast", 2)]["invocations"][1]
    events = second["intermediateData"]["invocationEvents"]
    calls = [p["functionCall"]["name"] for e in events for p in (e.get("content") or {}).get("parts", [])
             if "functionCall" in p]
    assert calls == ["transfer_to_agent", "get_forecast"]
    assert {e["author"] for e in events} == {"weather_agent", "forecast_agent"}
    assert second["finalResponse"]["parts"][0]["text"] == "The forecast for Tokyo: cloudy, windy, sunny."
    # Usage metadata and durations feed the efficiency metrics.
    case = next(c for c in results["evalSets"][0]["cases"] if c["evalId"] == "paris_celsius")
    metrics = {m["name"]: m for m in case["metrics"]}
    assert metrics["inference_call_count_v1"]["score"] == 2.0
    assert metrics["token_usage_v1"]["score"] > 0
    assert metrics["invocation_duration_v1"]["score"] > 0


def test_bridge_and_api_server_agree(via_bridge, via_api_server):
    assert normalized(via_bridge[1]) == normalized(via_api_server[1])
    assert scores(via_bridge[0]) == scores(via_api_server[0])
    assert len(scores(via_bridge[0])) == 8


def test_api_server_started_by_evalcheck_keeps_sessions_in_memory(via_api_server):
    agents = via_api_server[3]
    assert list(agents.rglob("*.db")) == []  # adk api_server's default: .adk/session.db


def test_api_server_is_stopped(via_api_server):
    port = via_api_server[2].args  # the command line holds the port
    url = next(a for a in port if isinstance(a, str) and a.startswith("http://"))
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=1).close()


def test_replay_of_the_inference_file_scores_the_same(via_bridge, tmp_path):
    results, inference, _ = via_bridge
    replay = tmp_path / "inference.json"
    replay.write_text(json.dumps(inference))
    out = tmp_path / "replayed.json"
    done = evalcheck("run", str(EVALS), "--replay", str(replay), "--results", str(out))
    assert done.returncode == 1, done.stderr
    replayed = json.loads(out.read_text())
    all_metrics = {m["name"] for s in results["evalSets"] for c in s["cases"] for m in c["metrics"]}
    assert scores(replayed, all_metrics) == scores(results, all_metrics)
    assert replayed["summary"] == results["summary"]


def adk_evaluator_scores(eval_id: str) -> dict[str, float]:
    """What ADK's AgentEvaluator reports for one case (2 runs), from its summary lines."""
    from google.adk.evaluation.agent_evaluator import AgentEvaluator
    from google.adk.evaluation.eval_config import EvalConfig
    from google.adk.evaluation.eval_set import EvalSet

    data = json.loads(EVAL_FILE.read_text())
    data["eval_cases"] = [c for c in data["eval_cases"] if c["eval_id"] == eval_id]
    eval_set = EvalSet.model_validate(data)
    config = EvalConfig.model_validate(json.loads((EVALS / "test_config.json").read_text()))
    reported: dict[str, float] = {}

    def record(eval_metric_result_with_invocations, overall_eval_status, overall_score,
               metric_name, threshold):
        reported[metric_name] = overall_score

    original = AgentEvaluator._print_details
    AgentEvaluator._print_details = staticmethod(record)
    sys.path.insert(0, str(ADK_DIR))
    try:
        asyncio.run(AgentEvaluator.evaluate_eval_set(
            agent_module="weather_app", eval_set=eval_set, eval_config=config, num_runs=2))
    except AssertionError:
        pass  # a failed threshold: the scores were reported all the same
    finally:
        AgentEvaluator._print_details = original
        sys.path.remove(str(ADK_DIR))
    return reported


def test_scores_equal_adk_agent_evaluator(via_bridge, via_api_server):
    pytest.importorskip("pandas")
    ours = via_bridge[0]
    compared = 0
    for case in ours["evalSets"][0]["cases"]:
        theirs = adk_evaluator_scores(case["evalId"])
        for metric in case["metrics"]:
            if metric["name"] in DETERMINISTIC:
                assert metric["score"] == pytest.approx(theirs[metric["name"]], abs=1e-12), \
                    (case["evalId"], metric["name"])
                compared += 1
    assert compared == 8


def test_bridge_reports_an_agent_that_cannot_load(tmp_path):
    from checker.agents.stdio import StdioRunner

    from .helpers import case, run_one

    folder = tmp_path / "broken_agent"
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text("import no_such_module_for_the_agent\n")
    runner = StdioRunner(f"{shlex.quote(PY)} -m checker.bridges.adk {shlex.quote(str(folder))}",
                         cwd=REPO)
    run = run_one(runner, case(), turn_timeout=60)
    assert run.error.startswith("the agent reported an error in turn 1: cannot load the ADK agent in ")
    assert "no_such_module_for_the_agent" in run.error


def reported_usage(inference: dict) -> dict:
    """Per (case, run): the agent's usage metadata summed over every event it sent."""
    found = {}
    for run in inference["runs"]:
        prompt = output = 0
        models = set()
        for invocation in run["invocations"]:
            for event in invocation["intermediateData"]["invocationEvents"]:
                usage = event.get("usageMetadata")
                if usage:
                    prompt += usage.get("promptTokenCount", 0)
                    output += usage.get("candidatesTokenCount", 0)
                    models.add(event.get("modelVersion"))
        found[(run["evalId"], run["run"])] = (prompt, output, models)
    return found


def test_agent_tokens_are_the_sum_of_what_adk_reported(via_bridge, via_api_server):
    for results, inference in (via_bridge[:2], via_api_server[:2]):
        reported = reported_usage(inference)
        total_in = total_out = 0
        for case in results["evalSets"][0]["cases"]:
            for run in case["runs"]:
                prompt, output, models = reported[(case["evalId"], run["run"])]
                assert prompt > 0 and models == {"scripted-weather-1"}
                assert run["usage"]["agent"] == {"input": prompt, "output": output, "models": {
                    "scripted-weather-1": {"input": prompt, "output": output}}}
                total_in, total_out = total_in + prompt, total_out + output
        agent = results["summary"]["usage"]["agent"]
        assert (agent["input"], agent["output"]) == (total_in, total_out)
        # no price for the scripted model: counted, never costed
        assert results["summary"]["usage"]["cost"]["unpriced"] == ["scripted-weather-1"]
    assert via_bridge[0]["summary"]["usage"] == via_api_server[0]["summary"]["usage"]
