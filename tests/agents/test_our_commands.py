"""``evalcheck-adk`` is found beside ``evalcheck`` when the venv's bin is not on PATH (run as
``.venv/bin/evalcheck``); where it is nowhere, the message names the folders looked in and
the fix. (``evalcheck-adk-ts``: tests/typescript/test_adapter_beside_evalcheck.py.)"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from .helpers import PY, REPO, case, write_eval_set

pytest.importorskip("google.adk")

EVALCHECK = Path(PY).parent / "evalcheck"
ADK_DIR = REPO / "tests" / "adk_agent"
# No venv on it: the system's programs only (sh, and node for the TypeScript adapter).
BARE_PATH = "/usr/bin:/bin"


def test_the_bridge_beside_evalcheck_runs_with_its_folder_off_path(tmp_path):
    assert not (Path("/usr/bin") / "evalcheck-adk").exists()
    done = subprocess.run(
        [str(EVALCHECK), "run", str(ADK_DIR / "evals"), "--agent-command",
         f"evalcheck-adk {shlex.quote(str(ADK_DIR / 'weather_app'))}", "--num-runs", "1",
         "--results", "results.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=180,
        env={"PATH": BARE_PATH, "HOME": str(tmp_path), "CI": "true"})
    # The weather eval set's wrong_expectation case fails by design: exit 1, not 2.
    assert done.returncode == 1, done.stderr
    assert "not found" not in done.stderr
    results = json.loads((tmp_path / "results.json").read_text())
    runs = [run for c in results["evalSets"][0]["cases"] for run in c["runs"]]
    assert len(runs) == 4 and all(run.get("error") is None for run in runs), runs


def test_a_bridge_found_nowhere_names_where_it_was_looked_for(tmp_path):
    """The folders evalcheck was installed in made to hold no bridge (an install without it)."""
    empty = tmp_path / "bin"
    empty.mkdir()
    write_eval_set(tmp_path / "evals", "set", [case("a", turns=1), case("b", turns=1)])
    program = ("import pathlib, checker.agents.our_commands as where\n"
               f"where.install_dirs = lambda: [pathlib.Path({str(empty)!r})]\n"
               "from checker.cli import main\nmain()\n")
    done = subprocess.run(
        [PY, "-c", program, "run", "evals", "--agent-command", "evalcheck-adk agents",
         "--results", "results.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
        env={"PATH": BARE_PATH, "HOME": str(tmp_path), "CI": "true"})
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("evalcheck: error: the agent cannot start: "), done.stderr
    assert "exited with status 127" in done.stderr
    assert (f"(evalcheck-adk is not on PATH, nor beside evalcheck in {empty}: install it where "
            "the agent runs (pip install evalcheck-adk), or put the folder that holds "
            "evalcheck-adk on PATH, or give its full path in --agent-command)") in done.stderr
    assert not (tmp_path / "results.json").exists()


def test_the_bridge_on_path_wins_over_the_one_beside_evalcheck(tmp_path):
    """The Action's image: evalcheck's own venv holds a bridge too, but the one on PATH is the
    agent's (/opt/agent, with the user's google-adk), and it is the one that runs."""
    own = tmp_path / "agent-venv" / "bin"
    own.mkdir(parents=True)
    bridge = own / "evalcheck-adk"
    bridge.write_text(f"#!/bin/sh\nexec {shlex.quote(PY)} {shlex.quote(str(REPO / 'tests' / 'agents' / 'agents' / 'echo_agent.py'))}\n")
    bridge.chmod(0o755)
    write_eval_set(tmp_path / "evals", "set", [case("a", turns=1)])
    done = subprocess.run(
        [str(EVALCHECK), "run", "evals", "--agent-command", "evalcheck-adk agents",
         "--num-runs", "1", "--results", "results.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
        env={"PATH": f"{own}:{BARE_PATH}", "HOME": str(tmp_path), "CI": "true"})
    assert done.returncode == 0, done.stderr  # the echo agent answers as the case expects
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["summary"]["passed"] == 1, results["summary"]
