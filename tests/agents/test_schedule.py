"""num-runs, concurrency, ordering, progress, scenario cases, Ctrl-C and the CLI wiring."""

from __future__ import annotations

import asyncio
import io
import json
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

from checker.inputs.discover import discover
from checker.commands.stage_options import agent_options
from checker.options import RunOptions
from checker.models.evalset import EvalCase
from checker.agents.schedule import Progress, run_agent_jobs

from .helpers import (
    AGENTS,
    PY,
    REPO,
    assert_all_gone,
    case,
    cli_env,
    process_state,
    read_pids,
    write_eval_set,
)

ECHO = f"{shlex.quote(PY)} {shlex.quote(str(AGENTS / 'echo_agent.py'))}"


def run_jobs(tmp_path: Path, cases: list[EvalCase], **options) -> tuple[list, str]:
    path = write_eval_set(tmp_path / "evals", "set", cases)
    targets = discover([str(path)], root=tmp_path).targets
    stream = io.StringIO()
    opts = agent_options(RunOptions(paths=[str(path)], **({"agent_command": ECHO} | options)))
    jobs = asyncio.run(run_agent_jobs(targets, opts, progress=_progress(targets, opts, stream)))
    return jobs, stream.getvalue()


def _progress(targets, opts, stream):
    from checker.agents.schedule import plan_jobs

    return Progress(plan_jobs(targets, opts), stream=stream, interactive=False)


def test_every_case_runs_num_runs_times_in_input_order(tmp_path, monkeypatch):
    log = tmp_path / "turns.log"
    monkeypatch.setenv("ECHO_LOG", str(log))
    monkeypatch.setenv("ECHO_SLEEP", "0.3")
    cases = [case(f"c{i}", turns=1, state={"user_name": f"user{i}"}) for i in range(4)]
    runs, output = run_jobs(tmp_path, cases, num_runs=3, concurrency=4)
    assert [(r.eval_id, r.run) for r in runs] == [(f"c{i}", n) for i in range(4) for n in (1, 2, 3)]
    assert all(r.error is None for r in runs)
    # Each run got its own session state.
    assert runs[4].invocations[0].intermediate_data.invocation_events[0].content.parts[0] \
        .function_call.args == {"q": "What is the weather in Paris? (1)", "user": "user1"}
    # Up to 4 agents at once, and really in parallel.
    spans = [tuple(map(float, line.split()[2:])) for line in log.read_text().splitlines()]
    assert len(spans) == 12
    most = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    assert most == 4
    # In CI logs: one line per finished case.
    lines = output.splitlines()
    assert len(lines) == 4 and all(line.endswith(": 3 runs done") for line in lines)


def test_concurrency_one_runs_one_at_a_time(tmp_path, monkeypatch):
    log = tmp_path / "turns.log"
    monkeypatch.setenv("ECHO_LOG", str(log))
    monkeypatch.setenv("ECHO_SLEEP", "0.05")
    runs, _ = run_jobs(tmp_path, [case("a", turns=2), case("b", turns=1)], num_runs=2, concurrency=1)
    assert [(r.eval_id, r.run, len(r.invocations)) for r in runs] == [
        ("a", 1, 2), ("a", 2, 2), ("b", 1, 1), ("b", 2, 1)]
    spans = sorted(tuple(map(float, line.split()[2:])) for line in log.read_text().splitlines())
    assert all(end <= next_start for (_, end), (next_start, _) in zip(spans, spans[1:]))


def test_durations_are_measured_per_turn(tmp_path, monkeypatch):
    monkeypatch.setenv("ECHO_SLEEP", "0.2")
    runs, _ = run_jobs(tmp_path, [case("a", turns=2)], num_runs=1)
    durations = [i.duration for i in runs[0].invocations]
    assert all(0.2 <= d < 2.0 and d == round(d, 3) for d in durations)


def test_scenario_case_without_gemini_credentials_errors_its_runs_only(tmp_path, monkeypatch):
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI",
                 "EVALCHECK_GEMINI_BASE_URL", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    scenario = EvalCase.model_validate({
        "eval_id": "simulated",
        "conversation_scenario": {"starting_prompt": "Hi", "conversation_plan": "Ask about Paris."}})
    runs, output = run_jobs(tmp_path, [case("static", turns=1), scenario], num_runs=2)
    assert [(r.eval_id, r.error is None) for r in runs] == [
        ("static", True), ("static", True), ("simulated", False), ("simulated", False)]
    # Found before the agent starts: no invocation, and the variables to set.
    assert runs[2].invocations == []
    assert runs[2].error == ("no Gemini credentials for the simulated user: set GOOGLE_API_KEY "
                             "(or GEMINI_API_KEY) for the Gemini API, or "
                             "GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT and "
                             "GOOGLE_CLOUD_LOCATION for Vertex AI")
    assert "set/simulated: 2 of 2 runs errored - run 1: no Gemini credentials for the simulated" \
        in output


def test_one_bad_run_does_not_stop_the_others(tmp_path):
    pidfile = tmp_path / "pids"
    command = (f'if [ "$EVALCHECK_EVAL_ID" = bad ]; then {shlex.quote(PY)} '
               f'{shlex.quote(str(AGENTS / "misbehave.py"))} crash_turn2 {pidfile}; else {ECHO}; fi')
    runs, output = run_jobs(tmp_path, [case("good"), case("bad"), case("also_good")],
                            agent_command=command, num_runs=2, concurrency=2)
    assert [(r.eval_id, r.error) for r in runs] == [
        ("good", None), ("good", None),
        ("bad", "the agent exited with status 1 without answering turn 2"),
        ("bad", "the agent exited with status 1 without answering turn 2"),
        ("also_good", None), ("also_good", None)]
    assert "\n    | RuntimeError: agent crashed in turn two\n" in output
    assert_all_gone(read_pids(pidfile))


def test_progress_on_a_terminal_is_one_updated_line():
    jobs_case = case("a", turns=1)
    from checker.models.records import RecordedRun
    from checker.agents.base import RunJob

    jobs = [RunJob("s", jobs_case, 1), RunJob("s", jobs_case, 2)]
    from checker.safety.output import GuardedStream
    from checker.safety.redact import Redactor

    raw = io.StringIO()
    progress = Progress(jobs, stream=GuardedStream(raw, Redactor()), interactive=True)
    progress.run_done(jobs[0], RecordedRun(eval_set_id="s", eval_id="a", run=1,
                                           error="bad\x1b[31m ::error::x"))
    progress.run_done(jobs[1], RecordedRun(eval_set_id="s", eval_id="a", run=2))
    progress.close()
    text = raw.getvalue()
    assert text.startswith("evalcheck: 0/1 cases done, 1 failed run")
    assert "\r\x1b[Kevalcheck: [1/1] s/a: 1 of 2 runs errored - run 1: bad\\x1b[31m : :error: :x\n" in text
    assert text.endswith("evalcheck: 1/1 cases done, 1 failed run\n")


def test_ctrl_c_kills_agents_and_keeps_finished_runs(tmp_path):
    pidfile = tmp_path / "pids"
    command = (f'if [ "$EVALCHECK_EVAL_ID" = slow ]; then {shlex.quote(PY)} '
               f'{shlex.quote(str(AGENTS / "misbehave.py"))} hang {pidfile}; else {ECHO}; fi')
    path = write_eval_set(tmp_path / "evals", "set", [case("fast", turns=1), case("slow", turns=1)])
    out = tmp_path / "inference.json"
    log = tmp_path / "turns.log"
    proc = subprocess.Popen(
        [PY, "-c", "from checker.cli import main; main()", "run", str(path), "--agent-command",
         command, "--num-runs", "1", "--concurrency", "2", "--inference-out", str(out)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=cli_env(ECHO_LOG=str(log)))
    deadline = time.monotonic() + 60
    # Wait until the slow agent and its child run and the fast case has answered.
    while len(read_pids(pidfile)) < 2 or not log.exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    time.sleep(1.0)  # the fast run closes its agent and is recorded
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert f"evalcheck: interrupted; 1 run(s) had finished, written to {out}" in stderr
    runs = json.loads(out.read_text())["runs"]
    assert [(r["evalId"], r["run"]) for r in runs] == [("fast", 1)]
    assert_all_gone(read_pids(pidfile))


def test_cli_with_example_agents(tmp_path):
    for command in (f"{shlex.quote(PY)} examples/agents/python_weather/agent.py",
                    "node examples/agents/node_weather/agent.js"):
        if command.startswith("node") and subprocess.run(["sh", "-c", "command -v node"],
                                                         capture_output=True).returncode:
            continue
        done = subprocess.run([PY, "-c", "from checker.cli import main; main()", "run",
                               "examples/weather", "--agent-command", command,
                               "--results", str(tmp_path / "r.json")],
                              cwd=REPO, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (command, done.stdout, done.stderr)
        results = json.loads((tmp_path / "r.json").read_text())
        assert results["summary"]["passed"] == 2


def test_example_adk_agent_folder_loads():
    pytest.importorskip("google.adk")
    from checker.bridges.adk import load_agent

    agent = load_agent(REPO / "examples" / "agents" / "adk_weather")
    assert agent.name == "weather_agent" and [t.__name__ for t in agent.tools] == ["get_weather"]


def test_zombie_check_helper_sees_a_zombie():
    """The process checks of these tests can fail: an unreaped child shows as Z."""
    child = subprocess.Popen(["true"])
    deadline = time.monotonic() + 5
    while process_state(child.pid) != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    with pytest.raises(AssertionError, match="processes left behind"):
        assert_all_gone([child.pid])
    child.wait()
    assert_all_gone([child.pid])


def test_the_plan_keeps_one_job_per_case_and_makes_each_run_when_taken(tmp_path):
    """--num-runs x cases jobs are not held: a job per case, each run's made on demand."""
    from checker.agents.schedule import plan_jobs

    path = write_eval_set(tmp_path / "evals", "set", [case(f"c{i}", turns=1) for i in range(3)])
    targets = discover([str(path)], root=tmp_path).targets
    plan = plan_jobs(targets, agent_options(RunOptions(paths=[str(path)], agent_command=ECHO, num_runs=100)))
    assert len(plan) == 300 and len(plan.templates) == 3
    jobs = iter(plan)
    assert [(j.eval_id, j.run) for j in (next(jobs), next(jobs))] == [("c0", 1), ("c0", 2)]
    assert [(j.eval_id, j.run) for j in plan][99:101] == [("c0", 100), ("c1", 1)]
    assert plan.runs_per_case() == {("set", f"c{i}"): 100 for i in range(3)}
