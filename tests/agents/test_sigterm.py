"""SIGTERM (docker stop, a cancelled job) does what Ctrl-C does, through the real entry points:
agents and their children killed, finished runs written, exit status 143."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from .helpers import AGENTS, PY, assert_all_gone, case, cli_env, read_pids, write_eval_set

ECHO = f"{shlex.quote(PY)} {shlex.quote(str(AGENTS / 'echo_agent.py'))}"
ROOT = Path(__file__).resolve().parents[2]


def slow_or_echo(pidfile: Path) -> str:
    return (f'if [ "$EVALCHECK_EVAL_ID" = slow ]; then {shlex.quote(PY)} '
            f'{shlex.quote(str(AGENTS / "misbehave.py"))} hang {pidfile}; else {ECHO}; fi')


def wait_for_agents(proc: subprocess.Popen, pidfile: Path, log: Path) -> None:
    deadline = time.monotonic() + 60
    # The slow agent and its child run, and the fast case has answered.
    while len(read_pids(pidfile)) < 2 or not log.exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    time.sleep(1.0)  # the fast run closes its agent and is recorded


def start_cli_run(tmp_path: Path, **popen) -> tuple[subprocess.Popen, Path, Path]:
    """`evalcheck run` of a fast and a slow case, signalled once both agents run; returns
    the process, the agents' pid file and the inference-out file."""
    pidfile, log, out = tmp_path / "pids", tmp_path / "turns.log", tmp_path / "inference.json"
    path = write_eval_set(tmp_path / "evals", "set", [case("fast", turns=1), case("slow", turns=1)])
    proc = subprocess.Popen(
        [PY, "-c", "from checker.cli import main; main()", "run", str(path), "--agent-command",
         slow_or_echo(pidfile), "--num-runs", "1", "--concurrency", "2", "--inference-out", str(out)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=cli_env(ECHO_LOG=str(log)), **popen)
    wait_for_agents(proc, pidfile, log)
    return proc, pidfile, out


def test_sigterm_on_the_cli_is_ctrl_c_with_status_143(tmp_path):
    proc, pidfile, out = start_cli_run(tmp_path)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr
    assert f"evalcheck: interrupted; 1 run(s) had finished, written to {out}" in stderr
    assert [(r["evalId"], r["run"]) for r in json.loads(out.read_text())["runs"]] == [("fast", 1)]
    assert_all_gone(read_pids(pidfile))


def test_sigterm_to_the_action_entrypoint_as_pid_1_would_get_it(tmp_path):
    """The container's entrypoint script, started the way the runner starts it (inputs as
    INPUT_* variables); SIGTERM goes to it alone, as Docker sends it to PID 1 only."""
    pidfile, log = tmp_path / "pids", tmp_path / "turns.log"
    ws = tmp_path / "ws"
    write_eval_set(ws / "evals", "set", [case("fast", turns=1), case("slow", turns=1)])
    (ws / ".git").mkdir()
    out = tmp_path / "github_output"
    out.touch()
    env = {**cli_env(ECHO_LOG=str(log)), "GITHUB_WORKSPACE": str(ws), "GITHUB_OUTPUT": str(out),
           "INPUT_PATHS": "evals", "INPUT_AGENT-COMMAND": slow_or_echo(pidfile),
           "INPUT_NUM-RUNS": "1", "INPUT_CONCURRENCY": "2", "INPUT_INFERENCE-OUT": "inference.json"}
    proc = subprocess.Popen([PY, str(ROOT / "entrypoint")], cwd=ws, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    wait_for_agents(proc, pidfile, log)
    os.kill(proc.pid, signal.SIGTERM)  # only the entrypoint: not its process group
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 143, stdout + stderr
    assert "Traceback" not in stdout + stderr
    assert [(r["evalId"], r["run"]) for r in json.loads((ws / "inference.json").read_text())["runs"]] == [("fast", 1)]
    assert_all_gone(read_pids(pidfile))
    assert "passed" not in out.read_text()  # no verdict from an interrupted job


def test_sigterm_during_setup_command_stops_its_children(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    pidfile = tmp_path / "setup.pids"
    env = {**cli_env(), "GITHUB_WORKSPACE": str(ws), "INPUT_REPLAY": "x.json",
           "INPUT_SETUP-COMMAND": f"sleep 300 & echo $! > {pidfile}; echo $$ >> {pidfile}; wait"}
    # valid inputs: they are all read before setup-command runs (issue 22)
    turn = {"invocation_id": "i", "user_content": {"role": "user", "parts": [{"text": "hi"}]},
            "final_response": {"role": "model", "parts": [{"text": "hello"}]}}
    (ws / "s.evalset.json").write_text(json.dumps(
        {"eval_set_id": "s", "eval_cases": [{"eval_id": "c", "conversation": [turn]}]}))
    (ws / "x.json").write_text(json.dumps(
        {"version": 1, "runs": [{"evalSetId": "s", "evalId": "c", "run": 1, "invocations": [turn]}]}))
    proc = subprocess.Popen([PY, str(ROOT / "entrypoint")], cwd=ws, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 30
    while len(read_pids(pidfile)) < 2:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 143, stdout + stderr
    assert_all_gone(read_pids(pidfile))
    # Its group was closed.
    assert stdout.rstrip().splitlines()[-1] == "::endgroup::", stdout


def test_an_interrupt_while_the_setup_output_echo_starts_still_stops_the_group(tmp_path, monkeypatch):
    """The signal may land at any point after the command started - here, as its output echo
    starts (a loaded machine: the shell is quicker than the thread): the group is stopped."""
    import io

    import pytest

    from checker.agents import setup_command
    from checker.action.github.workflow import Commands

    pidfile = tmp_path / "setup.pids"
    started = setup_command._Echo.start

    def start_then_interrupt(self):
        started(self)
        deadline = time.monotonic() + 30
        while len(read_pids(pidfile)) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        raise KeyboardInterrupt

    monkeypatch.setattr(setup_command._Echo, "start", start_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        setup_command.run_setup(f"sleep 300 & echo $! > {pidfile}; echo $$ >> {pidfile}; wait",
                                tmp_path, Commands(io.StringIO()))
    assert_all_gone(read_pids(pidfile))


def test_sigterm_stops_a_background_job_of_a_script_whose_sigint_is_ignored(tmp_path):
    """`evalcheck run ... &` in a shell script starts with SIGINT ignored (user audit: the
    run went on to its turn timeout and exited 1)."""
    proc, pidfile, _ = start_cli_run(  # SIGINT ignored, as `sh -c 'cmd &'` starts it
        tmp_path, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr
    assert_all_gone(read_pids(pidfile))
