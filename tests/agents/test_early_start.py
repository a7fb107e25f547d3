"""Our evalcheck-adk started while the checker reads its inputs (checker/agents/early_start.py):
it imports google-adk meanwhile, loads the agent (the code under test) only from its first
start message, which gives it the first run's variables; it serves the first run, and is
killed when nothing takes it. Only our own bridge, as the first word of a plain command."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from checker.agents.base import RunJob
from checker.agents.early_start import early_command, started_early
from checker.agents.stdio import StdioRunner

from .helpers import PY, case, cli_env, write_eval_set

pytest.importorskip("google.adk")

BIN = Path(PY).parent
BRIDGE = BIN / "evalcheck-adk"

# A real ADK agent (no model) whose import is logged: which process, with what eval set.
LOGGED = '''
import json, os, time
from google.adk.agents import BaseAgent
from google.adk.events import Event
from google.genai import types

with open(os.environ["AGENT_IMPORT_LOG"], "a") as log:
    log.write(json.dumps({"group": os.getpgrp(), "set": os.environ.get("EVALCHECK_EVAL_SET_ID"),
                          "case": os.environ.get("EVALCHECK_EVAL_ID"),
                          "run": os.environ.get("EVALCHECK_RUN"),
                          "flag": os.environ.get("EVALCHECK_ADK_LOAD_AT_START")}) + "\\n")


class Echo(BaseAgent):
    async def _run_async_impl(self, ctx):
        text = ctx.session.events[-1].content.parts[0].text
        yield Event(author=self.name, invocation_id=ctx.invocation_id,
                    content=types.Content(role="model", parts=[types.Part(text=f"echo: {text}")]))


root_agent = Echo(name="echo")
'''


@pytest.fixture
def logged_agent(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "logged"
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text(LOGGED)
    monkeypatch.setenv("AGENT_IMPORT_LOG", str(tmp_path / "imports.log"))
    monkeypatch.chdir(tmp_path)
    return folder


def imports(tmp_path: Path) -> list[dict]:
    log = tmp_path / "imports.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def cpu_seconds(group: int) -> float:
    """CPU the processes of ``group`` used (the shell and the bridge it started)."""
    used = 0
    for pid in subprocess.run(["pgrep", "-g", str(group)], capture_output=True,
                              text=True).stdout.split():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        used += int(fields[11]) + int(fields[12])
    return used / os.sysconf("SC_CLK_TCK")


def wait_until_idle(group: int, timeout: float = 60.0) -> float:
    """Until the process has used CPU and then none for a second: done with what it does
    before reading its input."""
    deadline = time.monotonic() + timeout
    last, still_since = cpu_seconds(group), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = cpu_seconds(group)
        if now != last:
            last, still_since = now, time.monotonic()
        elif last > 0.3 and time.monotonic() - still_since > 1.0:
            return last
    raise AssertionError(f"process group {group} did not settle: {last} s of CPU")


def alive(group: int) -> bool:
    """Whether a process of ``group`` still runs (zombies aside)."""
    for pid in subprocess.run(["pgrep", "-g", str(group)], capture_output=True,
                              text=True).stdout.split():
        with contextlib.suppress(FileNotFoundError):
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX":
                return True
    return False


def test_the_bridge_imports_early_and_loads_the_agent_only_for_the_first_run(logged_agent, tmp_path):
    command = f"{shlex.quote(str(BRIDGE))} {shlex.quote(str(logged_agent))}"
    with started_early(command) as early:
        assert early is not None
        pid = early._proc.pid
        # google-adk imported and warmed up (a second of CPU), then it waits for its start:
        # the code under test is not loaded yet.
        assert wait_until_idle(pid) > 0.3
        assert imports(tmp_path) == []
        runner = StdioRunner(command, cwd=Path.cwd(), early=early)
        jobs = [RunJob("set_a", case(f"c{i}", turns=1), run, turn_timeout=60)
                for i in (1, 2) for run in (1, 2)]

        async def go():
            try:
                return await asyncio.gather(*(runner.run(job) for job in jobs))
            finally:
                await runner.aclose()

        runs = early.runner.run(go())
        assert [r.error for r in runs] == [None] * 4
        assert runs[0].invocations[0].final_response.parts[0].text.startswith("echo: ")
        # Loaded once, in the process started early, with the first run's variables; the
        # flag that told it to wait for its start is not the agent's to see.
        assert imports(tmp_path) == [{"group": pid, "set": "set_a", "case": "c1", "run": "1",
                                      "flag": None}]
    assert not alive(pid)


def test_one_not_taken_is_killed_at_once(logged_agent, tmp_path):
    command = f"{shlex.quote(str(BRIDGE))} {shlex.quote(str(logged_agent))}"
    with pytest.raises(KeyboardInterrupt):
        with started_early(command) as early:
            assert early is not None
            pid = early._proc.pid
            raise KeyboardInterrupt  # Ctrl-C while the inputs are read
    assert not alive(pid)  # still importing google-adk had it not been killed
    assert imports(tmp_path) == []


def test_bad_input_stops_with_exit_2_and_the_agent_never_loaded(logged_agent, tmp_path):
    write_eval_set(tmp_path / "evals", "set_a", [case("c1", turns=1)])
    began = time.monotonic()
    done = subprocess.run(
        [str(BIN / "evalcheck"), "run", "evals", "--agent-command",
         f"{shlex.quote(str(BRIDGE))} {shlex.quote(str(logged_agent))}",
         "--baseline", "no-such-main.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=cli_env())
    assert done.returncode == 2, done.stderr
    assert "no-such-main.json" in done.stderr and done.stderr.count("\n") == 1
    listed = subprocess.run(["pgrep", "-f", f"evalcheck-adk {logged_agent}"],
                            capture_output=True, text=True).stdout.split()
    assert listed == [], time.monotonic() - began  # killed, not left to finish its imports
    assert imports(tmp_path) == []


def test_a_whole_run_uses_the_process_started_early(logged_agent, tmp_path):
    write_eval_set(tmp_path / "evals", "set_a", [case(f"c{i}", turns=1) for i in range(3)],
                   config={"criteria": {"response_match_score": 0.1}})
    done = subprocess.run(
        [str(BIN / "evalcheck"), "run", "evals", "--agent-command",
         f"evalcheck-adk {shlex.quote(str(logged_agent))}", "--num-runs", "2",
         "--results", "results.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=180,
        env=cli_env(PATH=f"{BIN}:{os.environ['PATH']}"))
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "results.json").read_text())
    assert [c["status"] for s in results["evalSets"] for c in s["cases"]] == ["passed"] * 3
    (loaded,) = imports(tmp_path)  # one process, loaded once, for the first run
    assert loaded["set"] == "set_a" and loaded["run"] == "1" and loaded["flag"] is None


def test_only_our_own_bridge_as_a_plain_command_starts_early(tmp_path):
    agent = tmp_path / "agent"
    agent.mkdir()
    path = f"{BIN}:{os.environ['PATH']}"
    env = {"PATH": path}
    ours = f"{shlex.quote(str(BRIDGE))} {agent}"
    assert early_command(ours, env) == ours
    assert early_command(f"evalcheck-adk --concurrent 4 {agent}", env) == f"evalcheck-adk --concurrent 4 {agent}"
    other = tmp_path / "bin"
    other.mkdir()
    shutil.copy(BRIDGE, other / "evalcheck-adk")  # another install, first on PATH
    assert early_command(f"evalcheck-adk {agent}", {"PATH": f"{other}:{path}"}) is None
    assert early_command(f"{other / 'evalcheck-adk'} {agent}", env) is None
    for command in (f"{PY} -m evalcheck_adk_bridge {agent}",   # some Python's
                    f"env X=1 evalcheck-adk {agent}",          # not the first word
                    f"evalcheck-adk {tmp_path}/$EVALCHECK_EVAL_SET_ID",  # expanded per eval set
                    f"evalcheck-adk {agent} && echo done",
                    f"evalcheck-adk {tmp_path / 'missing'}",
                    f"{PY} {agent / 'agent.py'}", "", None):
        assert early_command(command, env) is None, command


def test_an_agent_that_cannot_load_in_the_process_started_early_cannot_start(tmp_path):
    # It read its first start before it failed to load the agent; still a failure to start
    # (exit 2), not an errored run - without a retry in a process started later to say so.
    folder = tmp_path / "broken_agent"
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text("import no_such_module_for_the_agent\n")
    write_eval_set(tmp_path / "evals", "set_a", [case("c1", turns=1)])
    done = subprocess.run(
        [str(BIN / "evalcheck"), "run", "evals", "--agent-command",
         f"{shlex.quote(str(BRIDGE))} {shlex.quote(str(folder))}", "--num-runs", "1",
         "--retries", "0"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=cli_env())
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("evalcheck: error: the agent cannot start: "), done.stderr
    assert "no_such_module_for_the_agent" in done.stderr
