"""The ADK bridge as a worker serving concurrent sessions: one process serves many runs, at
once, each in a session of its own (no state, history or session leaks between runs), the
agent loaded before the first turn; and its name, ``evalcheck-adk``, cannot be shadowed by a
``checker/`` folder."""

from __future__ import annotations

import asyncio
import json
import shlex
import subprocess
from pathlib import Path

import pytest

from checker.agents.base import RunJob
from checker.agents.stdio import StdioRunner

from .helpers import PY, REPO, case, cli_env, write_eval_set

pytest.importorskip("google.adk")

BRIDGE = Path(PY).parent / "evalcheck-adk"
ADK_DIR = REPO / "tests" / "adk_agent"

# A real ADK agent (a BaseAgent, no model) that tells what its session holds.
INTROSPECT = '''
import json, os
from google.adk.agents import BaseAgent
from google.adk.events import Event, EventActions
from google.genai import types

RESETS = [0]
LOADED_IN = os.getpid()


def reset_data():
    RESETS[0] += 1


class Introspect(BaseAgent):
    async def _run_async_impl(self, ctx):
        state = dict(ctx.session.state)
        seen = {"events": len(ctx.session.events), "state": state, "pid": os.getpid(),
                "session": ctx.session.id, "resets": RESETS[0]}
        yield Event(author=self.name, invocation_id=ctx.invocation_id,
                    content=types.Content(role="model", parts=[types.Part(text=json.dumps(seen))]),
                    actions=EventActions(state_delta={"visits": state.get("visits", 0) + 1}))


root_agent = Introspect(name="introspect")
'''


def introspect_agent(tmp_path: Path) -> Path:
    folder = tmp_path / "introspect"
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import agent\n")
    (folder / "agent.py").write_text(INTROSPECT)
    return folder


def run_in_sequence(runner: StdioRunner, jobs: list[RunJob]) -> list:
    async def go():
        try:
            runs = [await runner.run(job) for job in jobs]
            return runs, [w.runs for w in runner._idle] + [w.served for w in runner._shared]
        finally:
            await runner.aclose()
    return asyncio.run(go())


def seen(run) -> list[dict]:
    return [json.loads(inv.final_response.parts[0].text) for inv in run.invocations]


def test_runs_in_one_worker_are_independent_sessions(tmp_path):
    folder = introspect_agent(tmp_path)
    runner = StdioRunner(f"{shlex.quote(str(BRIDGE))} {shlex.quote(str(folder))}", cwd=tmp_path)
    jobs = [RunJob("set", case(f"c{i}", turns=2, state={"user_name": f"user{i}"}), run, turn_timeout=60)
            for i in range(3) for run in (1, 2)]
    runs, served = run_in_sequence(runner, jobs)
    assert [r.error for r in runs] == [None] * 6
    assert served == [6]  # one process served all six runs
    views = [seen(r) for r in runs]
    assert len({v["pid"] for view in views for v in view}) == 1
    for n, (job, view) in enumerate(zip(jobs, views)):
        # Turn 1 sees only its own user message and the case's state; turn 2 its own run's
        # history and state change - never another run's.
        assert view[0]["events"] == 1 and view[0]["state"] == job.case.session_input.state
        assert view[1]["events"] == 3
        assert view[1]["state"] == {**job.case.session_input.state, "visits": 1}
        assert view[0]["session"] == view[1]["session"]
        assert view[0]["resets"] == n + 1  # the agent module's reset_data(), as ADK calls it
    assert len({view[0]["session"] for view in views}) == 6


# INTROSPECT whose first turns wait for each other: a run passes only when GATHER first turns
# are in flight in one process at once (else each reports a timeout).
CONCURRENT = INTROSPECT.replace("    async def _run_async_impl(self, ctx):\n", """    async def _run_async_impl(self, ctx):
        import asyncio
        if len(ctx.session.events) == 1:
            GATE.setdefault("open", asyncio.Event())
            GATE["in"] = GATE.get("in", 0) + 1
            if GATE["in"] >= GATHER:
                GATE["open"].set()
            await asyncio.wait_for(GATE["open"].wait(), 60)
""") + "\nGATE = {}\nGATHER = 8\n"


def test_concurrent_runs_in_one_process_share_nothing(tmp_path):
    folder = introspect_agent(tmp_path)
    (folder / "agent.py").write_text(CONCURRENT)
    runner = StdioRunner(f"{shlex.quote(str(BRIDGE))} {shlex.quote(str(folder))}", cwd=tmp_path)
    jobs = [RunJob("set", case(f"c{i}", turns=2, state={"user_name": f"user{i}"}), run,
                   turn_timeout=120) for i in range(4) for run in (1, 2)]

    async def go():
        try:
            return await asyncio.gather(*(runner.run(job) for job in jobs))
        finally:
            await runner.aclose()

    runs = asyncio.run(go())
    assert [r.error for r in runs] == [None] * 8
    views = [seen(r) for r in runs]
    assert len({v["pid"] for view in views for v in view}) == 1  # one import for all
    for job, view in zip(jobs, views):
        # Its own user message, the case's state, its own history and state change; never
        # another run's, although all eight ran at once in the one process.
        assert view[0]["events"] == 1 and view[0]["state"] == job.case.session_input.state
        assert view[1]["events"] == 3
        assert view[1]["state"] == {**job.case.session_input.state, "visits": 1}
        assert view[0]["session"] == view[1]["session"]
    assert len({view[0]["session"] for view in views}) == 8


@pytest.mark.parametrize("args, offered, serves", [("", 24, 24), ("--concurrent 3 ", 24, 3),
                                                   ("", None, 8)])
def test_it_serves_as_many_sessions_as_the_checker_offers_unless_told(tmp_path, args, offered, serves):
    """The first start's "concurrent" (the most runs evalcheck may have in flight) is what
    the bridge says it serves, so that one process takes them all; --concurrent N wins."""
    folder = introspect_agent(tmp_path)
    runner = StdioRunner(f"{shlex.quote(str(BRIDGE))} {args}{shlex.quote(str(folder))}",
                         cwd=tmp_path, sessions=offered)

    async def go():
        try:
            run = await runner.run(RunJob("set", case("a", turns=1), 1, turn_timeout=60))
            return run, runner.agent_kind().result()
        finally:
            await runner.aclose()

    run, kind = asyncio.run(go())
    assert run.error is None, run.error
    assert kind == ("concurrent", serves)


def test_first_turn_is_timed_from_ready_not_from_the_import(tmp_path):
    """The bridge loads google-adk and the agent before the first turn: turn 1 of the first
    run (in a new process) takes about as long as turn 1 of a later run."""
    folder = introspect_agent(tmp_path)
    runner = StdioRunner(f"{shlex.quote(str(BRIDGE))} {shlex.quote(str(folder))}", cwd=tmp_path)
    runs, _ = run_in_sequence(runner, [RunJob("set", case("a", turns=1), n, turn_timeout=60)
                                       for n in (1, 2)])
    first, later = (r.invocations[0].duration for r in runs)
    assert runs[0].duration_seconds > 0.5  # the process start and imports: the run's, not the turn's
    assert first < 0.5 and later < 0.5, (first, later)


def test_a_checker_folder_in_the_repository_does_not_shadow_the_bridge(tmp_path):
    """A user repository with a checker/ package of its own, evalcheck run from its root,
    the bridge importable in the agent's Python by path, as the Action's image does."""
    import shutil
    import site

    repo = tmp_path / "repo"
    (repo / "checker").mkdir(parents=True)
    (repo / "checker" / "__init__.py").write_text("# the team's own checker package\n")
    shutil.copytree(ADK_DIR / "weather_app", repo / "weather_app",
                    ignore=shutil.ignore_patterns("__pycache__"))
    bridge = tmp_path / "evalcheck-bridge"  # the Dockerfile's /opt/evalcheck-bridge
    shutil.copytree(REPO / "evalcheck_adk_bridge", bridge / "evalcheck_adk_bridge")
    shutil.copytree(REPO / "checker" / "bridges", bridge / "checker" / "bridges")
    # -S: no .pth files (no editable install of evalcheck); google-adk by path.
    agent_python = (f"PYTHONPATH={shlex.quote(str(bridge))}:"
                    f"{shlex.quote(':'.join(site.getsitepackages()))} {shlex.quote(PY)} -S")
    eval_case = case("paris", turns=1, text="What is the weather in Paris?",
                     state={"user_name": "Ada", "units": "celsius"})
    path = write_eval_set(repo / "evals", "weather_app", [eval_case])

    def run(command: str) -> subprocess.CompletedProcess:
        return subprocess.run([PY, "-c", "from checker.cli import main; main()", "run",
                               str(path), "--agent-command", command, "--num-runs", "1",
                               "--inference-out", str(repo / "out.json")],
                              cwd=repo, capture_output=True, text=True, timeout=120, env=cli_env())

    done = run(f"{agent_python} -m evalcheck_adk_bridge weather_app")
    recorded = json.loads((repo / "out.json").read_text())["runs"][0]
    assert recorded.get("error") is None, done.stderr
    assert recorded["invocations"][0]["finalResponse"]["parts"][0]["text"] == \
        "Ada, it is sunny in Paris, 21 degrees celsius."
    # The old name is what such a folder shadows: why the bridge has a name of its own.
    (repo / "out.json").unlink()
    done = run(f"{agent_python} -m checker.bridges.adk weather_app")
    assert done.returncode == 2 and "No module named 'checker.bridges'" in done.stderr, done.stderr


def test_one_session_mode_is_protocol_1(tmp_path):
    folder = introspect_agent(tmp_path)
    runner = StdioRunner(f"{shlex.quote(str(BRIDGE))} --one-session {shlex.quote(str(folder))}",
                         cwd=tmp_path)
    runs, served = run_in_sequence(runner, [RunJob("set", case("a", turns=1), n, turn_timeout=60)
                                            for n in (1, 2)])
    assert [r.error for r in runs] == [None, None] and served == []
    assert seen(runs[0])[0]["pid"] != seen(runs[1])[0]["pid"]


# An LlmAgent whose model says which retry options the request came with (ADK's eval sets
# them with its EnsureRetryOptionsPlugin), whether ADK's evaluation package was imported,
# and how the cyclic collector is set.
RETRIES = '''
import json, sys
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.genai import types


class Telling(BaseLlm):
    model: str = "telling"

    async def generate_content_async(self, llm_request, stream=False):
        options = llm_request.config.http_options
        retry = options.retry_options if options else None
        import gc
        told = {"attempts": retry.attempts if retry else None,
                "evaluation_imported": "google.adk.evaluation" in sys.modules,
                "gc_threshold": gc.get_threshold()[0], "frozen": gc.get_freeze_count(),
                "gc_enabled": gc.isenabled()}
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=json.dumps(told))]))


root_agent = LlmAgent(name="telling", model=Telling(), instruction="Say it.")
'''


def test_model_calls_are_retried_by_the_bridge_and_the_collector_is_set_for_serving(tmp_path):
    """Where ADK's own eval inference gives a model call google-genai's retries (7 attempts
    unless the agent sets its own), the bridge asks google-genai for one attempt and retries
    the call itself (evalcheck_adk_bridge/retries.py: the service's delay, told to the
    checker; tests/refusals/test_storm_adk.py); ADK's plugin, for the calls it leaves, is
    loaded without google.adk.evaluation."""
    folder = tmp_path / "telling"
    folder.mkdir()
    (folder / "agent.py").write_text(RETRIES)
    runner = StdioRunner(f"{shlex.quote(str(BRIDGE))} {shlex.quote(str(folder))}", cwd=tmp_path)
    runs, _ = run_in_sequence(runner, [RunJob("set", case("a", turns=1), 1, turn_timeout=60)])
    assert runs[0].error is None, runs[0].error
    (told,) = seen(runs[0])
    assert (told["attempts"], told["evaluation_imported"]) == (1, False)
    # The collector set for serving runs: google-adk and the agent, loaded, are never
    # scanned again; the youngest generation is collected after 100,000 allocations; off
    # while they loaded, it runs again.
    assert told["gc_threshold"] == 100_000 and told["frozen"] > 50_000, told
    assert told["gc_enabled"], told


# An agent that leaves a file open (buffered, never closed) and has an exit handler.
LEAVES_OPEN = INTROSPECT + '''
import atexit
LOG = open(os.environ["AGENT_FILE"], "w")  # noqa: SIM115  (left open on purpose)
LOG.write("loaded\\n")
atexit.register(lambda: open(os.environ["AGENT_FILE"] + ".exit", "w").write("exit handler ran"))


class _UnloadedAtTeardown:
    # What it needs is bound now: at teardown, module globals may be gone already.
    def __del__(self, _open=open, _path=os.environ["AGENT_FILE"] + ".teardown"):
        with _open(_path, "w") as told:
            told.write("the interpreter tore down")


UNLOADED = _UnloadedAtTeardown()
'''


def test_the_bridge_exits_at_once_yet_runs_exit_handlers_and_flushes_open_files(tmp_path):
    """The bridge ends its process without the interpreter's teardown (seconds of a loaded
    machine's time), but what an exit must do is done: exit handlers run, files flushed."""
    import os

    folder = introspect_agent(tmp_path)
    (folder / "agent.py").write_text(LEAVES_OPEN)
    written = tmp_path / "agent.txt"
    runner = StdioRunner(f"{shlex.quote(str(BRIDGE))} {shlex.quote(str(folder))}", cwd=tmp_path,
                         env={**os.environ, "AGENT_FILE": str(written)})

    async def go():
        run = await runner.run(RunJob("set", case("a", turns=1), 1, turn_timeout=60))
        (worker,) = runner._shared
        await runner.aclose()
        return run, worker.agent.proc.returncode

    run, status = asyncio.run(go())
    assert run.error is None and status == 0
    assert written.read_text() == "loaded\n"
    assert (tmp_path / "agent.txt.exit").read_text() == "exit handler ran"
    # No teardown: a module-level object's finalizer, which the interpreter's teardown
    # would run, did not.
    assert not (tmp_path / "agent.txt.teardown").exists()
