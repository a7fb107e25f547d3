"""The ``evalcheck`` command ends without the interpreter's teardown (checker/cli.py's
console), yet with its exit status, its output and its exit handlers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EVALCHECK = Path(sys.executable).with_name("evalcheck")

# evalcheck with an exit handler and a module-level object whose finalizer only the
# interpreter's teardown runs; THREAD: another thread is still running at the end.
ENDING = """
import atexit, os, sys, threading, time
from checker import cli

class UnloadedAtTeardown:
    def __del__(self, _open=open, _path=os.environ["MARKS"] + ".teardown"):
        with _open(_path, "w") as told:
            told.write("torn down")

KEPT = UnloadedAtTeardown()
atexit.register(lambda: open(os.environ["MARKS"] + ".atexit", "w").write("ran"))
atexit.register(sys.stdout.write, "said at exit")  # left in the stream's buffer
if os.environ.get("THREAD"):
    threading.Thread(target=time.sleep, args=(0.3,)).start()
sys.argv = ["evalcheck", *sys.argv[1:]]
cli.console()
"""


def child_env(**extra: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items()
           if name not in ("PYTHONUNBUFFERED", "THREAD")}  # stdout to a pipe: block buffered
    return {**env, "PYTHONPATH": str(ROOT), **extra}


@pytest.mark.parametrize("argv, status, said", [
    (["--version"], 0, "evalcheck, version"),
    (["run", "no-such-folder", "--agent-command", "true"], 2, "no-such-folder"),
])
def test_the_command_keeps_its_exit_status_and_output(argv: list[str], status: int, said: str) -> None:
    done = subprocess.run([str(EVALCHECK), *argv], capture_output=True, text=True,
                          env=child_env(), timeout=120)
    assert done.returncode == status, done.stderr
    assert said in done.stdout + done.stderr


@pytest.mark.parametrize("thread", [False, True])
def test_exit_handlers_run_and_the_teardown_only_with_another_thread(tmp_path: Path, thread: bool) -> None:
    marks = tmp_path / "marks"
    env = child_env(MARKS=str(marks), **({"THREAD": "1"} if thread else {}))
    done = subprocess.run([sys.executable, "-c", ENDING, "--version"], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("evalcheck, version")
    assert done.stdout.endswith("said at exit")  # flushed after the exit handlers
    assert (tmp_path / "marks.atexit").read_text() == "ran"
    # Without another thread the process ends before the teardown; with one, as ever.
    assert (tmp_path / "marks.teardown").exists() is thread
