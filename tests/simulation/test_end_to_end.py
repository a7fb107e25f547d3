"""conversation_scenario cases end to end through ``evalcheck run``, with a scripted simulated
user (the fake Gemini server): the plain Python stdio example agent, the real ADK test agent
through the ADK bridge and through a real ``adk api_server``; then ``--replay`` of the recorded
runs scores the same."""

from __future__ import annotations

import json
import shlex
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from judges.fake_gemini import FakeGemini, error_reply, json_reply

REPO = Path(__file__).resolve().parents[2]
PY = sys.executable
PYTHON_AGENT = REPO / "examples" / "agents" / "python_weather" / "agent.py"
ADK_AGENT = REPO / "tests" / "adk_agent"
ADK_BIN = Path(PY).parent / "adk"
SIMULATOR_PREFIX = "You are a Simulated User whose job is to test an AI Agent."
JUDGE_OK = json_reply({"criteria": [], "is_valid": True})


def is_simulator(prompt: str) -> bool:
    return prompt.startswith(SIMULATOR_PREFIX)


def history_of(prompt: str) -> str:
    return prompt.split("# Conversation History\n\n", 1)[1]


def evalcheck(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-c", "from checker.cli import main; main()", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300, env=env)


def cli_env(fake: FakeGemini) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items()
           if k not in ("GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GEMINI_BASE_URL")}
    env.update({"GOOGLE_API_KEY": "test-key", "EVALCHECK_GEMINI_BASE_URL": fake.url, "CI": "true"})
    return env


def write_case(folder: Path, case: dict, simulator: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "scenario.evalset.json").write_text(json.dumps(
        {"eval_set_id": "scenarios", "eval_cases": [case]}))
    (folder / "test_config.json").write_text(json.dumps({
        "criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5,
                     "per_turn_user_simulator_quality_v1": {
                         "threshold": 0.5, "judge_model_options": {"num_samples": 1}}},
        "user_simulator_config": simulator}))
    return folder


def run_and_replay(tmp: Path, evals: Path, fake: FakeGemini, *agent_args: str):
    """``evalcheck run`` with the agent, then ``--replay`` of what it recorded."""
    env = cli_env(fake)
    results, inference, replayed = tmp / "results.json", tmp / "inference.json", tmp / "replayed.json"
    done = evalcheck("run", str(evals), *agent_args, "--num-runs", "2", "--concurrency", "2",
                     "--results", str(results), "--inference-out", str(inference), cwd=tmp, env=env)
    # Exit 1: the reference metrics cannot score a scenario case (check_scores).
    assert done.returncode == 1, done.stdout + done.stderr
    sent = list(fake.requests)
    again = evalcheck("run", str(evals), "--replay", str(inference), "--results", str(replayed),
                      cwd=tmp, env=env)
    assert again.returncode == 1, again.stdout + again.stderr
    assert not any(is_simulator(r.prompt) for r in fake.requests[len(sent):])
    return (json.loads(results.read_text()), json.loads(inference.read_text()),
            json.loads(replayed.read_text()), sent, done)


def comparable(results: dict) -> dict:
    """A results file without what differs by nature between two runs: timings, metadata."""
    def scrub(value):
        if isinstance(value, dict):
            return {k: scrub(v) for k, v in value.items() if k not in ("durationSeconds", "metadata")}
        if isinstance(value, list):
            return [scrub(v) for v in value]
        return value
    return scrub(results)


def user_texts(run: dict) -> list[str]:
    return ["".join(p.get("text", "") for p in inv["userContent"]["parts"])
            for inv in run["invocations"]]


def final_texts(run: dict) -> list[str]:
    return ["".join(p.get("text", "") for p in inv["finalResponse"]["parts"])
            for inv in run["invocations"]]


def metrics_of(results: dict) -> dict[str, dict]:
    (case,) = results["evalSets"][0]["cases"]
    return {m["name"]: m for m in case["metrics"]}


def check_scores(results: dict) -> None:
    (case,) = results["evalSets"][0]["cases"]
    # The reference metrics are not evaluated on a scenario case, which fails it, as google-adk's
    # AgentEvaluator reports it (tests/agents/test_adk_evaluator_aggregation.py); each run
    # passed the metrics that scored it.
    assert case["status"] == "failed" and [r["status"] for r in case["runs"]] == ["passed"] * 2
    metrics = metrics_of(results)
    for name in ("tool_trajectory_avg_score", "response_match_score"):
        assert metrics[name]["status"] == "not_evaluated"
        assert metrics[name]["error"] == "the case has no reference conversation"
    per_turn = metrics["per_turn_user_simulator_quality_v1"]
    assert (per_turn["status"], per_turn["score"], per_turn["runs"]) == ("passed", 1.0, [1.0, 1.0])
    assert metrics["inference_call_count_v1"]["status"] == "informational"


# ------------------------------------------------------------------ (a) plain Python agent


@pytest.fixture(scope="module")
def python_agent(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("python")
    evals = write_case(tmp / "evals", {
        "eval_id": "paris_then_oslo",
        "conversation_scenario": {"starting_prompt": "What is the weather in Paris?",
                                  "conversation_plan": "Ask for the weather in Paris, then Oslo."}},
        {"model": "gemini-simulated-user", "include_function_calls": True})
    # tee keeps, per run, exactly what the agent read on stdin.
    command = (f'tee "{tmp}/received-$EVALCHECK_RUN.jsonl" | '
               f"{shlex.quote(PY)} {shlex.quote(str(PYTHON_AGENT))}")
    with FakeGemini() as fake:
        fake.on(lambda p: is_simulator(p) and "agent: It is rainy in Oslo" in p,
                json_reply("Great, thanks! </finished>"))
        fake.on(lambda p: is_simulator(p) and "agent: It is sunny in Paris" in p,
                json_reply("And in Oslo?"))
        fake.on(lambda p: not is_simulator(p), JUDGE_OK)
        return (*run_and_replay(tmp, evals, fake, "--agent-command", command), tmp)


def test_python_agent_receives_the_simulated_turns(python_agent):
    results, inference, _, sent, done, tmp = python_agent
    for run in (1, 2):
        received = [json.loads(line) for line in (tmp / f"received-{run}.jsonl").read_text().splitlines()]
        assert [m["type"] for m in received] == ["start", "user", "user"]
        assert [m["content"] for m in received[1:]] == [
            {"role": "user", "parts": [{"text": "What is the weather in Paris?"}]},
            {"role": "user", "parts": [{"text": "And in Oslo?"}]}]
    assert [(r["run"], r.get("error")) for r in inference["runs"]] == [(1, None), (2, None)]
    for run in inference["runs"]:
        assert user_texts(run) == ["What is the weather in Paris?", "And in Oslo?"]
        assert final_texts(run) == ["It is sunny in Paris, 21 degrees Celsius.",
                                    "It is rainy in Oslo, 9 degrees Celsius."]
    simulated = [r for r in sent if is_simulator(r.prompt)]
    assert len(simulated) == 4 and {r.model for r in simulated} == {"gemini-simulated-user"}
    assert sorted(history_of(r.prompt) for r in simulated)[0] == (
        "user: What is the weather in Paris?\n\n"
        "agent called tool 'get_weather' with args: {'city': 'Paris'}\n\n"
        "Tool 'get_weather' returned: {'condition': 'sunny', 'temp_c': 21}\n\n"
        "agent: It is sunny in Paris, 21 degrees Celsius.")
    assert "user simulator: 4 calls, 480 tokens" in done.stdout
    assert results["metadata"]["userSimulator"]["calls"] == 4
    # Each run's simulated user asked twice (100 in + 20 out each): its own bucket, per run,
    # recorded with the run (--inference-out) and summed per case and suite, and priced.
    (case,) = results["evalSets"][0]["cases"]
    per_run = {"input": 200, "output": 40, "models": {"gemini-simulated-user": {"input": 200, "output": 40}}}
    assert [r["usage"]["simulator"] for r in case["runs"]] == [per_run, per_run]
    assert [r["simulatorUsage"] for r in inference["runs"]] == [per_run, per_run]
    assert case["usage"]["simulator"]["input"] == 400 and case["usage"]["simulator"]["output"] == 80
    assert results["summary"]["usage"]["simulator"]["input"] + \
        results["summary"]["usage"]["simulator"]["output"] == 480
    assert "judge" in case["usage"] and "simulator" not in case["usage"]["judge"].get("models", {})


def test_python_agent_scores_and_replays_identically(python_agent):
    results, _, replayed, *_ = python_agent
    check_scores(results)
    assert comparable(replayed) == comparable(results)


# ------------------------------------------------------------------ (b, c) the real ADK agent

ADK_CASE = {
    "eval_id": "paris_then_forecast",
    "conversation_scenario": {
        "starting_prompt": "What is the weather in Paris?",
        "conversation_plan": "Ask for the weather in Paris, then for a 3-day forecast for Tokyo.",
        "user_persona": "NOVICE"},
    "session_input": {"app_name": "weather_app", "user_id": "u",
                      "state": {"user_name": "Ada", "units": "celsius"}}}

FORECAST_HISTORY = (
    "user: What is the weather in Paris?\n\n"
    "weather_agent called tool 'get_weather' with args: {'city': 'Paris'}\n\n"
    "Tool 'get_weather' returned: {'city': 'Paris', 'condition': 'sunny', 'temperature': 21, "
    "'units': 'celsius'}\n\n"
    "weather_agent: Ada, it is sunny in Paris, 21 degrees celsius.\n\n"
    "user: And the forecast for Tokyo for 3 days?\n\n"
    "weather_agent: Let me ask our forecast specialist.\n\n"
    "weather_agent called tool 'transfer_to_agent' with args: {'agent_name': 'forecast_agent'}\n\n"
    "Tool 'transfer_to_agent' returned: {'result': None}\n\n"
    "forecast_agent called tool 'get_forecast' with args: {'city': 'Tokyo', 'days': 3}\n\n"
    "Tool 'get_forecast' returned: {'city': 'Tokyo', 'days': ['cloudy', 'windy', 'sunny']}\n\n"
    "forecast_agent: The forecast for Tokyo: cloudy, windy, sunny.")


def adk_fake() -> FakeGemini:
    fake = FakeGemini()
    fake.on(lambda p: is_simulator(p) and "forecast_agent: The forecast for Tokyo" in p,
            json_reply("Thanks, that's all I needed. </finished>"))
    fake.on(lambda p: is_simulator(p) and "weather_agent: Ada, it is sunny in Paris" in p,
            json_reply("And the forecast for Tokyo for 3 days?"))
    fake.on(lambda p: not is_simulator(p), JUDGE_OK)
    return fake


def check_adk_conversation(inference: dict, sent: list) -> None:
    assert [(r["run"], r.get("error")) for r in inference["runs"]] == [(1, None), (2, None)]
    for run in inference["runs"]:
        assert user_texts(run) == ["What is the weather in Paris?",
                                   "And the forecast for Tokyo for 3 days?"]
        assert final_texts(run) == ["Ada, it is sunny in Paris, 21 degrees celsius.",
                                    "The forecast for Tokyo: cloudy, windy, sunny."]
    simulated = [r for r in sent if is_simulator(r.prompt)]
    assert len(simulated) == 4
    # The NOVICE persona's template, and the conversation as ADK's simulator would show it.
    assert all("# Persona Description" in r.prompt for r in simulated)
    assert sorted(history_of(r.prompt) for r in simulated)[-1] == FORECAST_HISTORY


@pytest.fixture(scope="module")
def via_bridge(tmp_path_factory):
    pytest.importorskip("google.adk")
    tmp = tmp_path_factory.mktemp("bridge")
    evals = write_case(tmp / "evals", ADK_CASE, {"include_function_calls": True})
    command = (f'tee "{tmp}/received-$EVALCHECK_RUN.jsonl" | {shlex.quote(PY)} -m '
               f"checker.bridges.adk {shlex.quote(str(ADK_AGENT / 'weather_app'))}")
    with adk_fake() as fake:
        return (*run_and_replay(tmp, evals, fake, "--agent-command", command), tmp)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def via_api_server(tmp_path_factory):
    pytest.importorskip("google.adk")
    tmp = tmp_path_factory.mktemp("api")
    agents = tmp / "agents"
    shutil.copytree(ADK_AGENT, agents, ignore=shutil.ignore_patterns(".adk", "__pycache__", "evals"))
    evals = write_case(tmp / "evals", ADK_CASE, {"include_function_calls": True})
    port = free_port()
    server = (f"{shlex.quote(str(ADK_BIN))} api_server --port {port} "
              f"--session_service_uri memory:// {shlex.quote(str(agents))}")
    with adk_fake() as fake:
        return run_and_replay(tmp, evals, fake, "--agent-url", f"http://127.0.0.1:{port}",
                              "--agent-server-command", server)


def test_adk_bridge_plays_the_scenario(via_bridge):
    results, inference, replayed, sent, _, tmp = via_bridge
    # What the bridge read, run by run: one process may serve both runs, at once, each
    # message naming its run's session (one without: the latest start's, as the protocol says).
    received = [json.loads(line) for path in sorted(tmp.glob("received-*.jsonl"))
                for line in path.read_text().splitlines()]
    by_session: dict[str, list] = {}
    latest = None
    for message in received:
        if message["type"] == "start":
            latest = message["session"]["id"]
            by_session[latest] = []
        elif message["type"] == "user":
            by_session[message.get("session", latest)].append(message["content"])
    runs = list(by_session.values())
    assert runs == [[{"role": "user", "parts": [{"text": "What is the weather in Paris?"}]},
                     {"role": "user", "parts": [{"text": "And the forecast for Tokyo for 3 days?"}]}]] * 2
    check_adk_conversation(inference, sent)
    check_scores(results)
    assert comparable(replayed) == comparable(results)


def test_adk_api_server_plays_the_scenario(via_api_server, via_bridge):
    results, inference, replayed, sent, _ = via_api_server
    check_adk_conversation(inference, sent)
    check_scores(results)
    assert comparable(replayed) == comparable(results)
    # The same scores as through the bridge (only the measured durations differ).
    def timeless(data: dict) -> dict:
        return {k: v for k, v in metrics_of(data).items() if k != "invocation_duration_v1"}
    assert timeless(results) == timeless(via_bridge[0])


def test_a_simulator_failure_errors_only_that_case(tmp_path):
    evals = write_case(tmp_path / "evals", {
        "eval_id": "blocked",
        "conversation_scenario": {"starting_prompt": "What is the weather in Paris?",
                                  "conversation_plan": "Ask for Paris, then Oslo."}}, {})
    static = json.loads((evals / "scenario.evalset.json").read_text())
    static["eval_cases"].append({"eval_id": "static", "conversation": [
        {"user_content": {"role": "user", "parts": [{"text": "Weather in Rome?"}]},
         "final_response": {"role": "model", "parts": [{"text": "It is sunny in Rome, 24 degrees Celsius."}]}}]})
    (evals / "scenario.evalset.json").write_text(json.dumps(static))
    results = tmp_path / "results.json"
    with FakeGemini() as fake:
        fake.on(is_simulator, error_reply(400, "model not found"))
        fake.on(lambda p: not is_simulator(p), JUDGE_OK)
        done = evalcheck("run", str(evals), "--agent-command",
                         f"{shlex.quote(PY)} {shlex.quote(str(PYTHON_AGENT))}", "--num-runs", "1",
                         "--results", str(results), cwd=tmp_path, env=cli_env(fake))
    assert done.returncode == 1, done.stderr
    cases = {c["evalId"]: c for c in json.loads(results.read_text())["evalSets"][0]["cases"]}
    assert cases["blocked"]["status"] == "error"
    assert cases["blocked"]["runs"][0]["error"] == (
        "simulated user: model request rejected (HTTP 400 INVALID_ARGUMENT: model not found)")
    assert cases["static"]["runs"][0]["status"] != "error"


def test_the_agent_budget_covers_the_simulated_users_tokens(tmp_path):
    """The example agent reports 0 tokens: only its simulated user's (2 calls of 120 a run)
    can spend --max-agent-tokens. One run at a time: the first spends 240 > 200, so
    runs 2 and 3 never start, and the case is not evaluated, exit 2 naming the budget."""
    evals = write_case(tmp_path / "evals", {
        "eval_id": "paris_then_oslo",
        "conversation_scenario": {"starting_prompt": "What is the weather in Paris?",
                                  "conversation_plan": "Ask for the weather in Paris, then Oslo."}},
        {"model": "gemini-simulated-user"})
    results = tmp_path / "results.json"
    with FakeGemini() as fake:
        fake.on(lambda p: is_simulator(p) and "agent: It is rainy in Oslo" in p,
                json_reply("Thanks! </finished>"))
        fake.on(lambda p: is_simulator(p) and "agent: It is sunny in Paris" in p,
                json_reply("And in Oslo?"))
        fake.on(lambda p: not is_simulator(p), JUDGE_OK)
        done = evalcheck("run", str(evals), "--agent-command",
                         f"{shlex.quote(PY)} {shlex.quote(str(PYTHON_AGENT))}", "--num-runs", "3",
                         "--concurrency", "1", "--max-agent-tokens", "200",
                         "--results", str(results), cwd=tmp_path, env=cli_env(fake))
        simulated = [r for r in fake.requests if is_simulator(r.prompt)]
    assert done.returncode == 2, done.stdout + done.stderr
    assert "the agent token budget (--max-agent-tokens 200) was spent (240 tokens used): " \
           "2 runs not started, 1 case not evaluated" in done.stderr
    assert len(simulated) == 2  # run 1's simulated user only
    (case,) = json.loads(results.read_text())["evalSets"][0]["cases"]
    # Run 1 ran, and its reference metrics could not score the scenario: failed, as in
    # google-adk's AgentEvaluator (check_scores), not merely not evaluated.
    assert case["status"] == "failed"
    assert [r["status"] for r in case["runs"]][1:] == ["not_evaluated", "not_evaluated"]
    assert case["usage"]["simulator"]["input"] == 200 and case["usage"]["agent"]["input"] == 0


def test_bad_custom_template_is_exit_2_naming_file_and_path(tmp_path):
    scenario = {"eval_id": "s", "conversation_scenario": {
        "starting_prompt": "Hi", "conversation_plan": "Say hi.", "user_persona": "EXPERT"}}
    env = {"PATH": "/usr/bin:/bin"}
    # Missing a required name: bad config whatever the cases.
    evals = write_case(tmp_path / "a", scenario, {
        "custom_instructions": "{{ conversation_plan }} {{ stop_signal }}"})
    done = evalcheck("run", str(evals), "--agent-command", "true", cwd=tmp_path, env=env)
    assert done.returncode == 2
    assert "a/test_config.json at $.user_simulator_config.custom_instructions: custom_instructions " \
           "does not use {{ conversation_history }}" in done.stderr
    assert "the template must use {{ stop_signal }}" in done.stderr
    assert "Traceback" not in done.stderr
    # Without {{ persona }} while a case has a persona: bad input before any agent runs.
    evals = write_case(tmp_path / "b", scenario, {
        "custom_instructions": "{{ conversation_plan }} {{ stop_signal }} {{ conversation_history }}"})
    done = evalcheck("run", str(evals), "--agent-command", "echo started > started.txt",
                     cwd=tmp_path, env=env)
    assert done.returncode == 2
    assert ("b/test_config.json at $.user_simulator_config.custom_instructions: "
            "custom_instructions does not use {{ persona }}, but eval case 's' of ") in done.stderr
    assert not (tmp_path / "started.txt").exists()


def test_the_example_scenarios_run_with_the_example_agent(tmp_path):
    """examples/scenarios with examples/agents/python_weather, the simulated user scripted."""
    results = tmp_path / "results.json"
    with FakeGemini() as fake:
        fake.on(lambda p: is_simulator(p) and "Rome is warmer" in history_of(p),
                json_reply("</finished>"))
        fake.on(lambda p: is_simulator(p) and "It is sunny in Paris" in history_of(p),
                json_reply("Which city is warmer, Paris or Rome?"))
        fake.on(lambda p: is_simulator(p) and "Which city do you mean?" in history_of(p),
                json_reply("um, Oslo? and is Oslo or Rome warmer"))
        fake.on(lambda p: not is_simulator(p), JUDGE_OK)
        done = evalcheck("run", "examples/scenarios", "--agent-command",
                         f"{shlex.quote(PY)} examples/agents/python_weather/agent.py",
                         "--num-runs", "1", "--results", str(results), cwd=REPO, env=cli_env(fake))
    assert done.returncode == 0, done.stdout + done.stderr
    inference_free = json.loads(results.read_text())
    assert inference_free["summary"]["passed"] == 2
    assert inference_free["metadata"]["userSimulator"]["calls"] == 4


def test_a_credential_the_simulated_user_sent_reaches_no_file_and_no_log(tmp_path):
    """A credential header in user_simulator_config's model_configuration is a secret like
    the judges': a model endpoint echoing it leaves *** in results, recorded runs and logs."""
    secret = "sim-header-secret-4711"
    evals = write_case(tmp_path / "evals", {
        "eval_id": "echoed",
        "conversation_scenario": {"starting_prompt": "What is the weather in Paris?",
                                  "conversation_plan": "Ask for Paris, then Oslo."}},
        {"model_configuration": {"http_options": {"headers": {"x-goog-api-key": secret}}}})
    with FakeGemini() as fake:
        fake.on(is_simulator, error_reply(400, f"key {secret} is not valid here"))
        fake.on(lambda p: not is_simulator(p), JUDGE_OK)
        done = evalcheck("run", str(evals), "--agent-command",
                         f"{shlex.quote(PY)} {shlex.quote(str(PYTHON_AGENT))}", "--num-runs", "1",
                         "--results", "results.json", "--inference-out", "runs.json",
                         "--markdown", "report.md", cwd=tmp_path, env=cli_env(fake))
        assert any(r.headers.get("x-goog-api-key") == secret for r in fake.requests)
    assert done.returncode == 1, done.stderr
    results = (tmp_path / "results.json").read_text()
    assert "key *** is not valid here" in results
    for text in (results, (tmp_path / "runs.json").read_text(), (tmp_path / "report.md").read_text(),
                 done.stdout, done.stderr):
        assert secret not in text
