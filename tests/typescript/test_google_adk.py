"""Google's @google/adk agents through ``adk api_server`` (@google/adk-devtools): the real
npm packages, the example agent (tools reading and writing session state, a sub-agent
reached by transfer_to_agent; a scripted offline model) scored through --agent-url and
--agent-server-command with no change to evalcheck; @google/adk's camelCase events with
millisecond timestamps read as ADK's."""

from __future__ import annotations

import json
import shlex
import time

import pytest

from tshelpers import (ADAPTER, AGENTS, WEATHER_SCORES, api_server_command, check_weather_example,
                       examples_copy, free_port, metric_runs, most_in_flight, run_evalcheck,
                       visits_eval_set)

WRONG_CASE = {
    "evalId": "wrong_expectation",
    "conversation": [{
        "invocationId": "inv-1",
        "userContent": {"role": "user", "parts": [{"text": "How is the weather in Lima?"}]},
        "finalResponse": {"role": "model", "parts": [{"text": "Dee, Lima is foggy and 61 degrees."}]},
        "intermediateData": {"toolUses": [{"name": "get_weather",
                                           "args": {"city": "Lima", "units": "fahrenheit"}}]}}],
    "sessionInput": {"appName": "weather_app", "userId": "dee",
                     "state": {"user_name": "Dee", "units": "fahrenheit"}},
}


@pytest.fixture(scope="module")
def example_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("google")
    project = examples_copy(tmp) / "google-adk"
    eval_file = project / "evals" / "weather_app.test.json"
    eval_set = json.loads(eval_file.read_text())
    eval_set["evalCases"].append(WRONG_CASE)  # fails on purpose: the gate must see it
    eval_file.write_text(json.dumps(eval_set))
    port = free_port()
    started = time.time()
    results, inference, done = run_evalcheck(
        tmp, project / "evals", "--agent-url", f"http://127.0.0.1:{port}",
        "--agent-server-command", api_server_command(project / "agents", port))
    return results, inference, done, (started, time.time()), project


def test_example_agent_scores_as_expected(example_run):
    results, inference, done, *_ = example_run
    assert done.returncode == 1, done.stdout + done.stderr
    assert "wrong_expectation: tool_trajectory_avg_score 0.00 < 1.00" in done.stdout
    assert all(r.get("error") is None for r in inference["runs"]), inference["runs"]
    runs = metric_runs(results)
    for key, score in WEATHER_SCORES.items():
        assert runs[key] == [score, score], key
    assert runs[("wrong_expectation", "tool_trajectory_avg_score")] == [0.0, 0.0]


def test_tools_state_and_sub_agent_as_adk_records_them(example_run):
    _, inference, *_ = example_run
    assert len(inference["runs"]) == 8
    events = check_weather_example(inference, "agentName")
    # Usage metadata is kept on the model's events, as ADK keeps it.
    usages = [e["usageMetadata"] for e in events if "usageMetadata" in e]
    assert [u["candidatesTokenCount"] for u in usages] == [20, 10, 10]


def test_millisecond_timestamps_do_not_leak_into_the_record(example_run):
    """@google/adk stamps events and sessions in milliseconds (Python's ADK: seconds); a
    turn's creation time and duration are evalcheck's own clock, in seconds."""
    _, inference, _, (started, ended), _ = example_run
    for run in inference["runs"]:
        for invocation in run["invocations"]:
            assert started <= invocation["creationTimestamp"] <= ended
            assert 0 < invocation["duration"] < ended - started


def test_concurrent_sessions_keep_their_own_state(tmp_path):
    """8 runs at once on one server, each case's session with its own marker, a tool that
    writes state: every turn sees only its own session's visits and marker."""
    evals = visits_eval_set(tmp_path / "evals")
    port = free_port()
    results, inference, done = run_evalcheck(
        tmp_path, evals, "--agent-url", f"http://127.0.0.1:{port}",
        "--agent-server-command", api_server_command(AGENTS / "google", port),
        concurrency=8)
    assert done.returncode == 0, done.stdout + done.stderr
    assert all(score == 1.0 for (_, name), scores in metric_runs(results).items()
               if name in ("tool_trajectory_avg_score", "response_match_score") for score in scores)
    assert len(inference["runs"]) == 16
    assert most_in_flight(inference) >= 4


def normalized(inference: dict) -> list:
    """The recorded runs without what differs by nature: ids, timestamps, durations."""
    def scrub(value):
        if isinstance(value, dict):
            return {k: scrub(v) for k, v in value.items()
                    if k not in ("invocationId", "creationTimestamp", "duration", "id")}
        if isinstance(value, list):
            return [scrub(v) for v in value]
        return value
    runs = sorted(inference["runs"], key=lambda r: (r["evalId"], r["run"]))
    return [scrub({k: v for k, v in run.items() if k != "durationSeconds"}) for run in runs]


def test_the_adapter_runs_google_agents_in_process_alike(example_run, tmp_path):
    """evalcheck-adk-ts serves the same @google/adk agent in-process: the same events, the
    same scores as through adk api_server."""
    results, inference, _, _, project = example_run
    command = f"{shlex.quote(str(ADAPTER))} agents/weather_app/agent.ts"
    in_process, recorded, done = run_evalcheck(tmp_path, project / "evals", "--agent-command",
                                               command, cwd=project)
    assert done.returncode == 1, done.stdout + done.stderr  # wrong_expectation
    assert normalized(recorded) == normalized(inference)
    assert metric_runs(in_process).keys() == metric_runs(results).keys()
    assert all(metric_runs(in_process)[key] == scores for key, scores in metric_runs(results).items()
               if key[1] != "invocation_duration_v1")


def test_a_server_listening_on_another_port_fails_at_once_naming_it(tmp_path):
    """@google/adk-devtools' adk api_server on another port than --agent-url's: said at once
    (its own "access at http://localhost:PORT" line), not after the 120 s start-up wait."""
    from tshelpers import evalcheck

    port, other = free_port(), free_port()
    began = time.monotonic()
    done = evalcheck("run", str(visits_eval_set(tmp_path / "evals")), "--agent-url",
                     f"http://127.0.0.1:{port}", "--agent-server-command",
                     api_server_command(AGENTS / "google", other),
                     "--results", str(tmp_path / "results.json"), cwd=tmp_path)
    assert time.monotonic() - began < 60  # a few seconds: node's start-up, then a second
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(
        f"evalcheck: error: the agent server cannot be used: the agent server says it listens "
        f"on http://localhost:{other} (port {other}), but --agent-url is http://127.0.0.1:{port} "
        f"(port {port}): give both the same port"), done.stderr
    assert not (tmp_path / "results.json").exists()


def test_an_agent_that_raises_as_the_server_loads_it_is_quoted_from_its_log(tmp_path):
    """@google/adk-devtools' adk api_server skips an agent that throws as it loads it, and
    lists the others: the app it does not serve is said with the server's own words."""
    from tshelpers import NODE_MODULES, evalcheck

    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "node_modules").symlink_to(NODE_MODULES, target_is_directory=True)
    (agents / "keyed.mjs").write_text(
        'import { LlmAgent } from "@google/adk";\n'
        'if (!process.env.GOOGLE_API_KEY) throw new Error("GOOGLE_API_KEY is not set");\n'
        'export const rootAgent = new LlmAgent({ name: "keyed", model: "gemini-2.5-flash" });\n')
    evals = tmp_path / "evals"
    evals.mkdir()
    (evals / "keyed.test.json").write_text(json.dumps({"evalSetId": "keyed", "evalCases": [{
        "evalId": "hello", "conversation": [{
            "invocationId": "inv-1",
            "userContent": {"role": "user", "parts": [{"text": "hello"}]},
            "finalResponse": {"role": "model", "parts": [{"text": "hi"}]}}],
        "sessionInput": {"appName": "keyed", "userId": "u", "state": {}}}]}))
    (evals / "test_config.json").write_text(json.dumps({"criteria": {"response_match_score": 0.5}}))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    done = evalcheck("run", str(evals), "--agent-url", url, "--agent-server-command",
                     api_server_command(agents, port), "--results", str(tmp_path / "r.json"),
                     cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"evalcheck: error: the agent server at {url} failed to load app 'keyed'; its log says: "
        f"Failed to load agent 'keyed' from {agents / 'keyed.mjs'}: GOOGLE_API_KEY is not set. "
        "Skipping it; the other agents are unaffected. (fix what stops the agent from loading "
        "(it runs as the server imports it), then run again)\n"), done.stderr
