"""``python -m checker.bridges.adk AGENT_DIR``: an ADK agent folder as a stdio-protocol agent.

The folder is loaded the way ``adk eval`` / ``adk web`` load it (``root_agent`` in
``agent.py`` or ``__init__.py``, an ``App``, or ``root_agent.yaml``; ``.env`` applied), with
the google-adk installed next to it. Each process serves one (case, run): a fresh in-memory
session with the start message's state, one ``Runner.run_async`` per user turn, and the
turn's ADK events sent back as they are, so the checker builds the invocation the way ADK's
own inference does.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import IO, Any


def _send(out: IO[str], message: dict[str, Any]) -> None:
    out.write(json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n")
    out.flush()


def _fail(out: IO[str], message: str, invocation_id: str | None = None) -> int:
    print(f"evalcheck ADK bridge: {message}", file=sys.stderr, flush=True)
    error: dict[str, Any] = {"type": "error", "message": message}
    if invocation_id:
        error["invocationId"] = invocation_id
    _send(out, error)
    return 1


def load_agent(agent_dir: Path) -> Any:
    """The folder's root agent or App, exactly as ADK's own CLI loads it."""
    from google.adk.cli.utils.agent_loader import AgentLoader

    return AgentLoader(str(agent_dir.parent)).load_agent(agent_dir.name)


def _eval_plugins() -> list[Any]:
    # ADK's inference adds model-call retries; do the same when this ADK has the plugin.
    try:
        from google.adk.evaluation._retry_options_utils import EnsureRetryOptionsPlugin
    except ImportError:
        return []
    return [EnsureRetryOptionsPlugin(name="ensure_retry_options")]


def make_runner(loaded: Any, app_name: str) -> Any:
    from google.adk.agents.base_agent import BaseAgent
    from google.adk.apps.app import App
    from google.adk.artifacts.in_memory_artifact_service import InMemoryArtifactService
    from google.adk.memory.in_memory_memory_service import InMemoryMemoryService
    from google.adk.runners import Runner
    from google.adk.sessions.in_memory_session_service import InMemorySessionService

    services = {"session_service": InMemorySessionService(),
                "artifact_service": InMemoryArtifactService(),
                "memory_service": InMemoryMemoryService()}
    if isinstance(loaded, App):
        app = loaded.model_copy(update={"plugins": list(loaded.plugins) + _eval_plugins()})
        return Runner(app=app, app_name=app_name, **services)
    if isinstance(loaded, BaseAgent):
        return Runner(app_name=app_name, agent=loaded, plugins=_eval_plugins(), **services)
    return Runner(app_name=app_name, node=loaded, plugins=_eval_plugins(), **services)


async def serve(agent_dir: Path, out: IO[str], stdin: IO[bytes]) -> int:
    from google.genai import types

    async def read() -> dict[str, Any] | None:
        line = await asyncio.to_thread(stdin.readline)
        if not line:
            return None
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ValueError("a protocol message must be a JSON object")
        return message

    try:
        loaded = load_agent(agent_dir)
    except Exception as exc:  # the user's agent failing to import: say why, in one line
        return _fail(out, f"cannot load the ADK agent in {agent_dir}: {type(exc).__name__}: {exc}")
    start = await read()
    if start is None:
        return 0
    if start.get("type") != "start":
        return _fail(out, f"expected a start message, got {str(start.get('type'))[:40]}")
    session_in = start.get("session") or {}
    app_name = session_in.get("appName") or "app"
    user_id = session_in.get("userId") or "user"
    runner = make_runner(loaded, app_name)
    try:
        session = await runner.session_service.create_session(
            app_name=app_name, user_id=user_id, state=session_in.get("state") or {})
        # Set up: the checker starts timing the first turn from here, not from our start.
        _send(out, {"type": "ready"})
        while (message := await read()) is not None:
            if message.get("type") != "user":
                continue  # later protocol versions may add messages; ignore what we don't know
            invocation_id = message.get("invocationId")
            content = types.Content.model_validate(message.get("content"))
            events = []
            try:
                async for event in runner.run_async(user_id=user_id, session_id=session.id,
                                                    new_message=content):
                    events.append(event.model_dump(mode="json", by_alias=True, exclude_none=True))
            except Exception as exc:
                return _fail(out, f"the agent raised {type(exc).__name__}: {exc}", invocation_id)
            _send(out, {"type": "response", "invocationId": invocation_id, "events": events})
    finally:
        await runner.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    # The protocol gets its own copy of stdout; fd 1 then points at stderr, so whatever the
    # agent prints (print(), C extensions) lands in its log instead of corrupting the protocol.
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print("usage: python -m checker.bridges.adk AGENT_DIR", file=sys.stderr)
        return 2
    agent_dir = Path(args[0]).resolve()
    if not agent_dir.is_dir():
        return _fail(out, f"agent folder not found: {args[0]}")
    try:
        import google.adk  # noqa: F401
    except ImportError:
        return _fail(out, "google-adk is not installed in this Python; install it with "
                          "pip install 'evalcheck[adk]' (or pip install google-adk)")
    try:
        return asyncio.run(serve(agent_dir, out, sys.stdin.buffer))
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # bad input from the checker side, or an ADK failure: one line
        return _fail(out, f"{type(exc).__name__}: {exc}")


if __name__ == "__main__":
    sys.exit(main())
