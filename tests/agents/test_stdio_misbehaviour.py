"""Every way an agent can misbehave ends only its own run, with the reason shown, and
leaves no process behind (the agent writes its pid and its child's pid to a file)."""

from __future__ import annotations

import shlex
import time

import pytest

from checker.agents.stdio import StdioRunner

from .helpers import AGENTS, PY, assert_all_gone, case, read_pids, run_one


def misbehaving(tmp_path, mode: str, **kwargs) -> tuple[StdioRunner, object]:
    pidfile = tmp_path / "pids"
    command = f"{shlex.quote(PY)} {shlex.quote(str(AGENTS / 'misbehave.py'))} {mode} {pidfile}"
    options = {"kill_grace": 0.5, "exit_grace": 2.0, "max_line_bytes": 1 << 20} | kwargs
    return StdioRunner(command, cwd=tmp_path, **options), pidfile


@pytest.mark.parametrize("mode, turn_timeout, reason", [
    ("exit_early", 5.0, "the agent exited with status 3 without answering turn 1"),
    ("crash_turn2", 5.0, "the agent exited with status 1 without answering turn 2"),
    ("hang", 1.0, "turn 1: no answer within 1 s (--turn-timeout)"),
    ("invalid_message", 5.0, "turn 1: invalid protocol message at $.toolUses[0].name: Field required"),
    ("unknown_type", 5.0, 'turn 1: invalid protocol message at $.type: expected "response" or "error", got "answer"'),
    ("wrong_id", 5.0, "turn 1: the response is for invocation 'inv-999', expected 'inv-1'"),
    ("error_message", 5.0, "the agent reported an error in turn 1: model quota exceeded"),
    ("huge_json_line", 5.0, "turn 1: a stdout line longer than 1 MiB"),
    ("nonzero_after_last", 5.0, "the agent exited with status 4 after the last turn"),
    ("leave_child", 5.0, "the agent exited but left 2 process(es) running; they were killed"),
])
def test_misbehaving_agent_fails_its_run(tmp_path, mode, turn_timeout, reason):
    runner, pidfile = misbehaving(tmp_path, mode)
    run = run_one(runner, case(turns=2), turn_timeout=turn_timeout)
    assert run.error == reason
    assert_all_gone(read_pids(pidfile))


def test_crash_keeps_the_finished_turns_and_the_traceback_tail(tmp_path):
    runner, pidfile = misbehaving(tmp_path, "crash_turn2")
    run = run_one(runner, case(turns=3))
    assert len(run.invocations) == 1
    assert run.stderr_tail is not None
    assert run.stderr_tail.splitlines()[-1] == "RuntimeError: agent crashed in turn two"
    assert_all_gone(read_pids(pidfile))


def test_exit_reason_shows_the_agents_last_words(tmp_path):
    runner, pidfile = misbehaving(tmp_path, "exit_early")
    run = run_one(runner, case())
    assert run.stderr_tail == "fatal: no API key configured"


def test_agent_that_never_reads_stdin_times_out_on_the_write(tmp_path):
    runner, pidfile = misbehaving(tmp_path, "no_stdin")
    # 200 KB per user turn: more than a pipe buffer, so the write itself blocks.
    run = run_one(runner, case(text="x" * 200_000), turn_timeout=1.0)
    assert run.error == "the agent did not read turn 1 within the turn timeout (it must read stdin)"
    assert_all_gone(read_pids(pidfile))


def test_agent_ignoring_sigterm_is_killed(tmp_path):
    runner, pidfile = misbehaving(tmp_path, "ignore_sigterm")
    began = time.monotonic()
    run = run_one(runner, case(), turn_timeout=0.5)
    assert run.error == "turn 1: no answer within 0.5 s (--turn-timeout)"
    assert time.monotonic() - began < 10
    assert_all_gone(read_pids(pidfile))


def test_agent_that_does_not_exit_after_stdin_closes(tmp_path):
    runner, pidfile = misbehaving(tmp_path, "no_exit", exit_grace=0.5)
    run = run_one(runner, case())
    assert run.error == "the agent did not exit within 0.5 s after its input was closed"
    assert len(run.invocations) == 2
    assert_all_gone(read_pids(pidfile))


def test_non_json_stdout_is_agent_output_not_an_error(tmp_path):
    runner, pidfile = misbehaving(tmp_path, "garbage_then_answer")
    run = run_one(runner, case())
    assert run.error is None
    assert [i.final_response.parts[0].text for i in run.invocations] == ["It is sunny in Paris."] * 2
    assert_all_gone(read_pids(pidfile))


def test_flooding_agent_is_read_with_bounded_buffers(tmp_path):
    """20 MiB on each stream and a 3 MiB line: the run still works, the tail stays small."""
    runner, pidfile = misbehaving(tmp_path, "flood_then_answer", max_line_bytes=1 << 20)
    run = run_one(runner, case(turns=1), turn_timeout=60)
    assert run.error is None and len(run.invocations) == 1
    runner, pidfile = misbehaving(tmp_path, "flood_then_answer")
    # The same agent that then errors: its log tail is the end of stderr, 2 KB at most.
    runner.command += " && exit 9"
    run = run_one(runner, case(turns=1), turn_timeout=60)
    assert run.error is not None
    assert len(run.stderr_tail.encode()) <= 2048
    assert len(run.stderr_tail.splitlines()) <= 20
    assert "the last words of the log" in run.stderr_tail


def test_command_that_cannot_start(tmp_path):
    runner = StdioRunner("./no-such-agent", cwd=tmp_path)
    run = run_one(runner, case())
    # It dies while its input is being written: which write notices first is a race, and
    # each of these reasons is right.
    assert run.error in ("the agent exited with status 127 without answering turn 1",
                         "the agent exited with status 127 before reading turn 1",
                         "the agent exited with status 127 before reading the start message")
    assert "not found" in run.stderr_tail
