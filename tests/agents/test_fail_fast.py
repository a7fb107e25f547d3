"""An agent that cannot start stops the whole run at once: exit status 2 and one message,
not the same failure once per case and run. (``--agent-url`` with nothing listening:
tests/agents/test_api_server.py.)"""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from .helpers import AGENTS, PY, REPO, case, cli_env, write_eval_set

ECHO = f"{shlex.quote(PY)} {shlex.quote(str(AGENTS / 'echo_agent.py'))}"


def evalcheck_run(tmp_path: Path, command: str, *, cases: int = 3, num_runs: int = 3,
                  env: dict | None = None) -> subprocess.CompletedProcess:
    path = write_eval_set(tmp_path / "evals", "set", [case(f"c{i}", turns=1) for i in range(cases)])
    return subprocess.run(
        [PY, "-c", "from checker.cli import main; main()", "run", str(path),
         "--agent-command", command, "--num-runs", str(num_runs), "--concurrency", "4",
         "--results", str(tmp_path / "results.json")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env=cli_env(CI="true", **(env or {})))


def assert_one_message(done: subprocess.CompletedProcess, tmp_path: Path) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    assert done.stderr.startswith("evalcheck: error: the agent cannot start: the first 4 runs "
                                  "all failed the same way before it answered anything: ")
    assert done.stderr.count("\n") == 1, done.stderr  # one line: no per-case lines
    assert not (tmp_path / "results.json").exists()
    return done.stderr


def test_command_not_found(tmp_path):
    err = assert_one_message(evalcheck_run(tmp_path, "pyhton agent.py"), tmp_path)
    assert "the agent exited with status 127" in err
    assert "(the command was not found: check --agent-command" in err
    assert "; its last output: /bin/sh: 1: pyhton: not found" in err  # the shell's own words


def test_command_not_executable(tmp_path):
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    err = assert_one_message(evalcheck_run(tmp_path, "./agent.sh"), tmp_path)
    assert "the agent exited with status 126" in err
    assert "cannot be executed: check its permissions" in err


def test_import_error(tmp_path):
    agent = tmp_path / "agent.py"
    agent.write_text("import no_such_module_for_this_agent\n")
    err = assert_one_message(evalcheck_run(tmp_path, f"{shlex.quote(PY)} agent.py"), tmp_path)
    assert "the agent exited with status 1" in err
    assert "ModuleNotFoundError: No module named 'no_such_module_for_this_agent'" in err


def test_stops_without_running_the_other_cases(tmp_path):
    log = tmp_path / "started"
    began = time.monotonic()
    done = evalcheck_run(tmp_path, f"echo x >> {log}; exit 127", cases=20, num_runs=3)
    assert_one_message(done, tmp_path)
    assert len(log.read_text().splitlines()) < 20  # not 60: it stopped after the first runs
    assert time.monotonic() - began < 30


def test_runs_that_fail_differently_are_reported_as_usual(tmp_path):
    """Only the same failure at the start of every first run stops the run."""
    command = f'case "$EVALCHECK_EVAL_ID" in c0) exit 3;; esac; exec {ECHO}'
    done = evalcheck_run(tmp_path, command, cases=3, num_runs=2)
    assert done.returncode == 1, done.stderr
    assert "set/c0: 2 of 2 runs errored - run 1: the agent exited with status 3" in done.stderr
    assert (tmp_path / "results.json").exists()


def test_a_failure_after_answering_is_not_a_start_failure(tmp_path):
    script = tmp_path / "agent.py"
    script.write_text("import json, sys\nfor line in sys.stdin:\n"
                      "    if json.loads(line)['type'] == 'user':\n        sys.exit(1)\n")
    done = evalcheck_run(tmp_path, f"{shlex.quote(PY)} agent.py", cases=2, num_runs=2)
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("runs errored") == 2


def test_adk_bridge_on_an_agent_that_cannot_load(tmp_path):
    pytest.importorskip("google.adk")
    folder = tmp_path / "broken_agent"
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text("import no_such_module_for_the_agent\n")
    command = f"{shlex.quote(str(Path(PY).parent / 'evalcheck-adk'))} {shlex.quote(str(folder))}"
    err = assert_one_message(evalcheck_run(tmp_path, command), tmp_path)
    assert "the agent reported an error in turn 1: cannot load the ADK agent in " in err
    assert "no_such_module_for_the_agent" in err


@pytest.fixture
def short_dir():
    """A folder with a short path: the bridge's message names the agent's Python twice, and
    the checker shows 300 characters of it."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="ae", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("with_pip", [False, True], ids=["venv-without-pip", "pip-at-hand"])
def test_adk_bridge_without_google_adk_says_how_to_install_it(tmp_path, short_dir, with_pip):
    """An agent environment without google-adk (evalcheck installed elsewhere, e.g. pipx).
    Made without pip, it cannot run `pip install`: the message bootstraps pip first, with the
    agent's own Python (no uv on PATH here); with pip at hand (the base Python's, seen
    through --system-site-packages), that pip of the agent's Python."""
    venv = short_dir / "env"
    subprocess.run([PY, "-m", "venv", "--without-pip", *(["--system-site-packages"] if with_pip else []),
                    str(venv)], check=True)
    (tmp_path / "my_agent").mkdir()
    python = str(venv / "bin" / "python")
    command = f"{shlex.quote(python)} -m evalcheck_adk_bridge my_agent"
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                           if not (Path(p) / "uv").exists())
    err = assert_one_message(evalcheck_run(tmp_path, command, env={"PYTHONPATH": str(REPO), "PATH": path}),
                             tmp_path)
    assert "google-adk is not installed in the agent's Python; install it there: " in err
    if with_pip:
        assert f"there: {python} -m pip install google-adk (in the GitHub Action" in err
    else:
        assert f"there: {python} -m ensurepip && {python} -m pip install google-adk " in err
        done = subprocess.run([python, "-m", "pip", "--version"], capture_output=True)
        assert done.returncode != 0  # a bare pip of this environment does not exist


def test_adk_bridge_on_a_folder_without_root_agent_says_so_in_full(tmp_path):
    """ADK's own text is a page of layout help; the message was cut mid-word at 300 chars."""
    pytest.importorskip("google.adk")
    folder = tmp_path / "my_agent"
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text("helper = 1\n")
    command = f"{shlex.quote(str(Path(PY).parent / 'evalcheck-adk'))} my_agent"
    err = assert_one_message(evalcheck_run(tmp_path, command), tmp_path)
    assert err.endswith("the agent reported an error in turn 1: cannot load the ADK agent in "
                        "my_agent: no root_agent in my_agent/agent.py, my_agent/__init__.py or "
                        "my_agent/root_agent.yaml (define root_agent, the agent to evaluate, in "
                        "my_agent/agent.py: as adk run and adk web load it)\n"), err
    assert "\u2026" not in err and "last output" not in err  # nothing cut, no log echo
