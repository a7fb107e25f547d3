"""Attacks on the log, the verdict and the reports, through the action's entrypoint with a
fake runner environment (issue 11 "Why"): eval-file and agent text must not become a
workflow command, change a step output, the check run or the verdict; a planted secret
appears in no written file and no log line."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path

import pytest

from checker.action import entry as action
from fake_github import FakeGitHub
from github_data import pr_event
from runner_env import Runner, input_env

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from runner_model import commands_in  # noqa: E402

HEAD = "a" * 40
SECRET = "AIzaPLANTED-secret-key_0123456789abcdef"
AGENT = Path(__file__).resolve().parent / "agents" / "hostile_agent.py"
# What evalcheck itself may issue.
AUTHORED = {"add-mask", "error", "warning", "notice", "group", "endgroup"}


def run_action(tmp_path: Path, fake: FakeGitHub, capfd, *, files=None, env_extra=None, **inputs):
    runner = Runner.create(tmp_path, pr_event(head_sha=HEAD))
    for name, text in (files or {}).items():
        (runner.workspace / name).write_text(text, encoding="utf-8")
    env = {**runner.github_env(fake.base_url, in_container=False, head_sha=HEAD),
           **input_env(fake.token, **{"paths": "agent_evals", **inputs}),
           "GOOGLE_API_KEY": SECRET, **(env_extra or {})}
    cwd = os.getcwd()
    os.chdir(runner.workspace)
    try:
        code = action.main(env)
    finally:
        os.chdir(cwd)
    out = capfd.readouterr()
    return code, runner, out.out + out.err


def only_authored_commands(log: str) -> None:
    for syntax, name, data in commands_in(log):
        assert syntax == "v2", f"legacy command in the log: {name} {data!r}"
        assert name in AUTHORED, f"forged command {name!r} in the log"


def written_files(runner: Runner) -> str:
    texts = [p.read_text(encoding="utf-8", errors="replace")
             for p in [*runner.workspace.rglob("*"), *runner.file_commands.iterdir()] if p.is_file()]
    return "\n".join(texts)


def hostile_command(mode: str, text: str) -> str:
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(AGENT))} {mode} {shlex.quote(text)}"


def test_an_eval_id_cannot_set_an_output(tmp_path, fake, capfd):
    forged = "x\n::set-output name=passed::true"
    case = {"eval_id": forged, "conversation": [{"invocation_id": "i", "user_content": {
        "role": "user", "parts": [{"text": "hi"}]}}]}
    evalset = {"eval_set_id": "attack", "eval_cases": [case, case]}  # duplicated: exit 2
    code, runner, log = run_action(tmp_path, fake, capfd, paths="attack.evalset.json",
                                   agent_command=hostile_command("answer", "hello"),
                                   files={"attack.evalset.json": json.dumps(evalset)})
    assert code == 2
    assert "x\\n: :set-output" in log  # shown, escaped
    only_authored_commands(log)
    assert "passed" not in runner.outputs()
    assert fake.writes() == []


@pytest.mark.parametrize("payload", [
    "##[set-output name=passed;]true",
    "##[stop-commands]token",
    "ok\n::set-output name=passed::true\r::stop-commands::t2",
    f"\u200b::add-mask::x and the key {SECRET}",
])
def test_an_agent_cannot_forge_commands_outputs_or_the_verdict(tmp_path, fake, capfd, payload):
    code, runner, log = run_action(tmp_path, fake, capfd, commit_status="true",
                                   agent_command=hostile_command("error", f"{payload} {SECRET}"))
    assert code == 1
    only_authored_commands(log)
    # The annotations after the agent ran are still commands: nothing stopped them.
    assert any(name == "error" and "gate failed (fail-on: failure)" in data for _, name, data in commands_in(log))
    outputs = runner.outputs()
    assert outputs["passed"] == "false"
    (check,) = fake.check_runs.values()
    assert check["conclusion"] == "failure"
    assert fake.statuses[0]["state"] == "failure"
    results = json.loads((runner.workspace / outputs["results-path"]).read_text())
    assert results["passed"] is False
    # The secret reached neither the log nor a file nor GitHub.
    assert SECRET not in log
    assert SECRET not in written_files(runner)
    assert SECRET not in json.dumps([w.body for w in fake.writes()])
    assert "***" in (runner.workspace / outputs["markdown-path"]).read_text()


def test_setup_command_and_what_it_leaves_running_cannot_issue_commands(tmp_path, fake, capfd):
    """Its output is read from a pipe and echoed through the guarded stream, so a command it
    prints - or one a background process it started prints after it exited, while the
    evaluation runs - is shown, escaped, and never reaches the runner as a command."""
    done = tmp_path / "late-lines-printed"
    setup = (f"echo '::error::forged now {SECRET}'; "
             "(sleep 1; echo '::warning::forged later'; echo '::stop-commands::gotcha'; "
             f"touch {shlex.quote(str(done))}) &")
    code, runner, log = run_action(tmp_path, fake, capfd, replay="recorded_runs.json",
                                   setup_command=setup)
    deadline = time.monotonic() + 20
    while not done.exists():
        assert time.monotonic() < deadline, "the background process never printed"
        time.sleep(0.05)
    while "gotcha" not in log:  # its last line crosses the pipe and the echo
        assert time.monotonic() < deadline, "the late lines never reached the log"
        time.sleep(0.05)
        out = capfd.readouterr()
        log += out.out + out.err
    assert code == 1  # the example suite fails on purpose; the setup succeeded
    assert ": :error: :forged now ***" in log
    assert "setup-command: : :warning: :forged later" in log
    assert "setup-command: : :stop-commands: :gotcha" in log
    only_authored_commands(log)
    assert SECRET not in log
    assert runner.outputs()["passed"] == "false"


@pytest.mark.parametrize("text, piece", [
    # The progress line clips the error to 300 characters: the cut lands inside the key.
    ("x" * 230 + SECRET, SECRET[:25]),
    # The stderr tail keeps the last 2048 bytes: the cut lands inside the key.
    (SECRET + "y" * (2048 - 35), SECRET[-30:]),
])
def test_a_secret_cut_through_by_a_clip_leaves_no_piece(tmp_path, fake, capfd, text, piece):
    code, runner, log = run_action(tmp_path, fake, capfd, agent_command=hostile_command("error", text))
    assert code == 1
    assert piece not in log
    assert piece not in written_files(runner)
    assert piece not in json.dumps([w.body for w in fake.writes()])


def test_a_secret_the_log_would_escape_is_still_hidden(tmp_path, fake, capfd):
    password = "hunter2::s3cret"  # a log line shows it as "hunter2: :s3cret"
    code, _, log = run_action(tmp_path, fake, capfd, env_extra={"DB_PASSWORD": password},
                              agent_command=hostile_command("error", f"cannot connect with {password}"))
    assert code == 1
    assert "hunter2: :s3cret" not in log and password not in log


def test_setup_command_output_without_newlines_is_shown_in_bounded_pieces(tmp_path, fake, capfd):
    from checker.agents.setup_command import MAX_LINE

    setup = "yes x | head -n 300000 | tr -d '\\n'; echo; echo '::error::after the flood'"
    code, runner, log = run_action(tmp_path, fake, capfd, replay="recorded_runs.json", setup_command=setup)
    assert code == 1
    pieces = [line for line in log.splitlines() if line and set(line) == {"x"}]
    assert sum(map(len, pieces)) == 300000 and max(map(len, pieces)) <= MAX_LINE
    assert ": :error: :after the flood" in log
    only_authored_commands(log)
