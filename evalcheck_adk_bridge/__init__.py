"""``evalcheck-adk DIR``: ADK agents as a stdio-protocol agent (a warm worker).

DIR is one ADK agent folder, or a folder of them (evalcheck_adk_bridge/folders.py: each eval
set then runs on the agent folder its eval file lies in, else the one its app name names).
An agent is loaded the way ``adk eval`` / ``adk web`` load it (``root_agent`` in
``agent.py`` or ``__init__.py``, an ``App``, or ``root_agent.yaml``; ``.env`` applied), with
the google-adk installed next to it: one agent before the first run starts, each of a
folder of agents on the first run it serves. The process then serves every run (of every
eval set, for a folder of agents: ``"evalSets": "any"`` in its ready), as many at once on
one asyncio loop as the checker's first start message offers (``"concurrent"``; 8 from a
checker that offers none), or ``--concurrent N``, as ADK's own eval does (it answers
``start`` with ``{"type": "ready", "sessions": "many", "concurrent": N}``, and names each
run's session in every answer): each run gets
fresh in-memory session, artifact and memory services, its own session with the start
message's state and its own ``Runner``, as ADK's own eval inference does; the agent's
``reset_data()``, when its module has one, is called before each run, as ADK does. Each
user turn is one ``Runner.run_async`` and the turn's ADK events go back as they are.

A top-level name of its own (not ``checker.*``): a ``checker/`` folder in the repository
under test cannot shadow it. Standard library only, until google-adk is imported.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import IO, Any

from .loading import Agents, LoadFailure
from .loading import load_agent as load_agent  # re-exported: checker/bridges/adk.py imports it from here
from .refusals import service_refusal
from .pacing import PACER, CallPacer
from .retries import TELL
from .runtime import end_process, eval_plugins, fewer_collections, no_collections

AT_START = "EVALCHECK_ADK_LOAD_AT_START"  # (= checker/agents/early_start.py AT_START)
USAGE = "usage: evalcheck-adk [--one-session | --concurrent N] DIR (an ADK agent folder, or a folder of them)"
DEFAULT_CONCURRENT = 8  # runs at once in the one process when not offered (ADK's own eval runs 4)
MAX_OFFERED = 4096  # sessions taken up to from a start message's offer
# The command names the agent's Python and comes first: the checker shows 300 characters.
ADK_MISSING = ("google-adk is not installed in the agent's Python; install it there: {command} "
               "(in the GitHub Action: setup-command: pip install google-adk)")


def adk_install_command(python: str) -> str:
    """How to install google-adk into ``python``'s environment, with what that environment
    has: its own pip; else uv; else pip bootstrapped by ensurepip (a venv made with
    ``--without-pip`` or by uv has no pip, and a bare ``pip install`` would install
    elsewhere, or not be found)."""
    import importlib.util
    import shlex
    import shutil

    exe = shlex.quote(python)
    if importlib.util.find_spec("pip") is not None:
        return f"{exe} -m pip install google-adk"
    if shutil.which("uv"):
        return f"uv pip install --python {exe} google-adk"
    if importlib.util.find_spec("ensurepip") is not None:
        return f"{exe} -m ensurepip && {exe} -m pip install google-adk"
    return (f"uv pip install --python {exe} google-adk (this Python has neither pip nor "
            "ensurepip; uv: https://docs.astral.sh/uv/)")


def _send(out: IO[str], message: dict[str, Any]) -> None:
    out.write(json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n")
    out.flush()


def _refuse(out: IO[str], message: str, ready: dict[str, Any], session_id: str | None) -> int:
    """A run whose agent (of a folder of agents) cannot be loaded or found: the process is up
    and serves the other runs, so it says ready (what kind of process it is), then fails
    this run with the reason."""
    _send(out, {**ready, **({} if session_id is None else {"session": session_id})})
    return _fail(out, message, session_id=session_id)


def _fail(out: IO[str], message: str, invocation_id: str | None = None,
          session_id: str | None = None, unavailable: dict[str, Any] | None = None) -> int:
    print(f"evalcheck ADK bridge: {message}", file=sys.stderr, flush=True)
    error: dict[str, Any] = {"type": "error", "message": message}
    if invocation_id:
        error["invocationId"] = invocation_id
    if session_id is not None:
        error["session"] = session_id
    if unavailable is not None:  # the model service refused: not the agent's error
        error["unavailable"] = unavailable
    _send(out, error)
    return 1


def make_runner(loaded: Any, app_name: str) -> Any:
    """A Runner of its own for one run, with fresh in-memory services."""
    from google.adk.agents.base_agent import BaseAgent
    from google.adk.apps.app import App
    from google.adk.artifacts.in_memory_artifact_service import InMemoryArtifactService
    from google.adk.memory.in_memory_memory_service import InMemoryMemoryService
    from google.adk.runners import Runner
    from google.adk.sessions.in_memory_session_service import InMemorySessionService

    services: dict[str, Any] = {"session_service": InMemorySessionService(),
                "artifact_service": InMemoryArtifactService(),
                "memory_service": InMemoryMemoryService()}
    if isinstance(loaded, App):
        app = loaded.model_copy(update={"plugins": list(loaded.plugins) + eval_plugins()})
        return Runner(app=app, app_name=app_name, **services)
    if isinstance(loaded, BaseAgent):
        return Runner(app_name=app_name, agent=loaded, plugins=eval_plugins(), **services)
    return Runner(app_name=app_name, node=loaded, plugins=eval_plugins(), **services)


async def warm_up() -> None:
    """One invocation of a do-nothing agent (no model, nothing of the user's) through a
    Runner: the modules ADK imports on a Runner's first run are imported before the first
    turn is timed, so invocation_duration_v1 measures the agent, not our start-up."""
    from google.adk.agents.base_agent import BaseAgent
    from google.adk.events.event import Event
    from google.genai import types

    class _Warmup(BaseAgent):
        async def _run_async_impl(self, ctx: Any) -> Any:
            yield Event(author=self.name, invocation_id=ctx.invocation_id,
                        content=types.Content(role="model", parts=[types.Part(text="ok")]))

    runner = make_runner(_Warmup(name="evalcheck_warmup"), "evalcheck_warmup")
    try:
        session = await runner.session_service.create_session(app_name="evalcheck_warmup",
                                                               user_id="warmup")
        async for _ in runner.run_async(user_id="warmup", session_id=session.id,
                                        new_message=types.Content(role="user",
                                                                  parts=[types.Part(text="hi")])):
            pass
    finally:
        await runner.close()


Reader = Callable[[], Awaitable["dict[str, Any] | None"]]


# The environment a process gets for its first run (CONTRACT section 5), from its start.
RUN_ENVIRONMENT = (("EVALCHECK_EVAL_SET_ID", "evalSetId"), ("EVALCHECK_EVAL_ID", "evalId"),
                   ("EVALCHECK_RUN", "run"))


def run_environment(start: dict[str, Any]) -> None:
    """The first run's variables, from its start message, where the environment has none (a
    process the checker started before it knew its first run)."""
    for name, field in RUN_ENVIRONMENT:
        value = start.get(field)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            os.environ.setdefault(name, str(value))


def read_first(first: dict[str, Any], read: Reader) -> Reader:
    """``read``, giving ``first`` (read already) first."""
    pending = [first]

    async def again() -> dict[str, Any] | None:
        return pending.pop() if pending else await read()
    return again


def line_reader(stdin: IO[bytes]) -> Reader:
    async def read() -> dict[str, Any] | None:
        line = await asyncio.to_thread(stdin.readline)
        if not line:
            return None
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ValueError("a protocol message must be a JSON object")
        return message
    return read


async def serve(agent_dir: Path, out: IO[str], stdin: IO[bytes], *, many: bool = True,
                concurrent: int | None = None) -> int:
    """Load the agent (a folder of agents: each on the first run it serves), then serve runs
    until stdin closes (one run unless ``many``; with ``many``, up to ``concurrent`` at once,
    None: as many as the checker offers)."""
    PACER.set(CallPacer())  # every run's calls of a model share the quota the service stated
    agents = Agents(agent_dir)
    # Started by evalcheck while it reads its inputs (checker/agents/early_start.py): the agent
    # (the code under test) is loaded only from the first start message, which also gives
    # the first run's variables the environment then lacks.
    at_start = os.environ.pop(AT_START, None) == "1"
    if not agents.several and not at_start:
        try:
            agents.for_run({})
        except LoadFailure as exc:
            return _fail(out, str(exc))
    try:
        await warm_up()
    except Exception as exc:  # only a speed-up: a failure here is not the agent's
        print(f"evalcheck ADK bridge: warm-up skipped ({type(exc).__name__}: {exc})",
              file=sys.stderr, flush=True)
    read = line_reader(stdin)
    if not agents.several and at_start:
        first = await read()
        if first is None:
            return 0
        if first.get("type") == "start":
            run_environment(first)
        try:
            agents.for_run({})
        except LoadFailure as exc:
            return _fail(out, str(exc))
        read = read_first(first, read)
    fewer_collections()
    if not many:
        start = await read()
        if start is None:
            return 0
        if start.get("type") != "start":
            return _fail(out, f"expected a start message, got {str(start.get('type'))[:40]}")
        try:
            loaded, reset = agents.for_run(start)
        except LoadFailure as exc:
            return _refuse(out, str(exc), {"type": "ready"}, None)
        if reset is not None:
            reset()
        return await serve_run(loaded, start, read, out, ready={"type": "ready"}) or 0
    return await serve_sessions(agents, read, out, concurrent)


def sessions_served(concurrent: int | None, start: dict[str, Any]) -> int:
    """``--concurrent N``, else what the checker's first start offers (the most runs it may
    have in flight: one process can take them all), else DEFAULT_CONCURRENT."""
    if concurrent is not None:
        return concurrent
    offered = start.get("concurrent")
    if isinstance(offered, int) and not isinstance(offered, bool) and offered >= 1:
        return min(offered, MAX_OFFERED)
    return DEFAULT_CONCURRENT


async def serve_sessions(agents: Agents, read: Reader, out: IO[str], concurrent: int | None) -> int:
    """Every run the checker starts, each in a task of its own: messages go to the run their
    ``session`` names (one without it, from a checker that sends none, to the latest start).
    With a folder of several agents, each run's agent and ids come from its start message
    only, never from this process's environment: one process serves every eval set
    (``"evalSets": "any"``). A single agent folder is the one the command line named (which
    may be chosen per eval set, ``agents/$EVALCHECK_EVAL_SET_ID``): it serves only the eval
    set it was started for."""
    ready: dict[str, Any] = {}
    inboxes: dict[str | None, asyncio.Queue[dict[str, Any] | None]] = {}
    tasks: set[asyncio.Task] = set()
    latest: str | None = None
    while (message := await read()) is not None:
        kind = message.get("type")
        if kind == "start":
            if not ready:  # the first start says how many runs the checker may send at once
                ready.update({"type": "ready", "sessions": "many",
                              "concurrent": sessions_served(concurrent, message)})
                if agents.several:
                    ready["evalSets"] = "any"
            given = (message.get("session") or {}).get("id")
            latest = given if isinstance(given, str) else None
            try:
                loaded, reset = agents.for_run(message)
            except LoadFailure as exc:  # this run fails, the others go on
                _refuse(out, str(exc), ready, latest)
                continue
            inbox = inboxes[latest] = asyncio.Queue()
            if reset is not None:
                reset()  # as ADK's eval calls it before each inference, concurrent ones too
            task = asyncio.create_task(_session(loaded, message, inbox.get, out, ready, latest))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            continue
        session_id = message.get("session", latest)
        target = inboxes.get(session_id)
        if target is None:
            continue  # a session already over (the checker ends a failed run too)
        target.put_nowait(message)
        if kind == "end":
            del inboxes[session_id]
    for inbox in inboxes.values():
        inbox.put_nowait(None)
    await asyncio.gather(*tasks, return_exceptions=True)
    return 0


async def _session(loaded: Any, start: dict[str, Any], read: Reader, out: IO[str],
                   ready: dict[str, Any], session_id: str | None) -> None:
    try:
        await serve_run(loaded, start, read, out, ready=ready, session_id=session_id)
    except Exception as exc:  # this run fails, the others go on
        _fail(out, f"{type(exc).__name__}: {exc}", session_id=session_id)


async def serve_run(loaded: Any, start: dict[str, Any], read: Reader, out: IO[str], *,
                    ready: dict[str, Any], session_id: str | None = None) -> int | None:
    """One run, in a session of its own (``session_id``: the checker's id of the run, named
    in every answer). None when the run ended with ``end``, else the exit status."""
    from google.genai import types

    named = {} if session_id is None else {"session": session_id}
    session_in = start.get("session") or {}
    app_name = session_in.get("appName") or "app"
    user_id = session_in.get("userId") or "user"
    runner = make_runner(loaded, app_name)
    # This run's ADK callbacks tell the checker of the refused calls they retry, if it asked.
    TELL.set((lambda refusal, paced: _send(out, {"type": "refused", "unavailable": refusal,
                                                 **({"paced": True} if paced else {}), **named}))
             if start.get("tellRefusals") is True else None)
    try:
        session = await runner.session_service.create_session(
            app_name=app_name, user_id=user_id, state=session_in.get("state") or {})
        # Set up: the checker times the first turn from here, not from our start.
        _send(out, {**ready, **named})
        while (message := await read()) is not None:
            kind = message.get("type")
            if kind == "end":
                return None
            if kind != "user":
                continue  # later protocol versions may add messages; ignore what we don't know
            invocation_id = message.get("invocationId")
            content = types.Content.model_validate(message.get("content"))
            events = []
            try:
                async for event in runner.run_async(user_id=user_id, session_id=session.id,
                                                    new_message=content):
                    events.append(event.model_dump(mode="json", by_alias=True, exclude_none=True))
            except Exception as exc:
                return _fail(out, f"the agent raised {type(exc).__name__}: {exc}", invocation_id,
                             session_id, service_refusal(exc))
            _send(out, {"type": "response", "invocationId": invocation_id, "events": events,
                        **named})
    finally:
        await runner.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    # The protocol gets its own copy of stdout; fd 1 then points at stderr, so whatever the
    # agent prints (print(), C extensions) lands in its log instead of corrupting the protocol.
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    many = "--one-session" not in args
    args = [a for a in args if a != "--one-session"]
    concurrent: int | None = None  # as many as the checker offers
    if "--concurrent" in args:
        at = args.index("--concurrent")
        value = args[at + 1] if at + 1 < len(args) else ""
        if not value.isdigit() or int(value) < 1:
            print(USAGE, file=sys.stderr)
            return 2
        concurrent = int(value)
        del args[at:at + 2]
    if len(args) != 1 or args[0] in ("-h", "--help") or args[0].startswith("-"):
        print(USAGE, file=sys.stderr)
        return 2
    agent_dir = Path(args[0]).resolve()
    if not agent_dir.is_dir():
        return _fail(out, f"agent folder not found: {args[0]}")
    no_collections()  # until serve() has loaded and warmed up (fewer_collections)
    try:
        import google.adk  # noqa: F401
    except ImportError:
        return _fail(out, ADK_MISSING.format(command=adk_install_command(sys.executable)))
    try:
        code = asyncio.run(serve(agent_dir, out, sys.stdin.buffer, many=many,
                                 concurrent=concurrent))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # bad input from the checker side, or an ADK failure: one line
        return _fail(out, f"{type(exc).__name__}: {exc}")
    end_process(code, out)
