"""The agents ``evalcheck-adk DIR`` serves, loaded the way ADK's own CLI loads them: one agent,
loaded before the first run, or each agent of a folder of agents, loaded on the first run
that needs it (evalcheck_adk_bridge/folders.py says which run needs which)."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .folders import agent_for, agents_in, no_agent

Reset = Callable[[], object]


class LoadFailure(Exception):
    """An agent that cannot be loaded, or a run that names none: the message says why."""


def load_agent(agent_dir: Path) -> Any:
    """The folder's root agent or App, exactly as ADK's own CLI loads it."""
    from google.adk.cli.utils.agent_loader import AgentLoader

    return AgentLoader(str(agent_dir.parent)).load_agent(agent_dir.name)


def shown(folder: Path) -> str:
    """The agent folder as the user named it: relative to the working directory when inside."""
    try:
        return folder.relative_to(Path.cwd().resolve()).as_posix() or "."
    except ValueError:
        return str(folder)


def load_problem(agent_dir: Path, exc: Exception) -> str:
    """Why the agent folder did not load, in one short line: the checker shows the first
    300 characters of it, and ADK's own "no root_agent" text is a page of layout help."""
    text = str(exc)
    if text.startswith("No root_agent found"):
        name = agent_dir.name
        return (f"no root_agent in {name}/agent.py, {name}/__init__.py or {name}/root_agent.yaml "
                f"(define root_agent, the agent to evaluate, in {name}/agent.py: as adk run "
                "and adk web load it)")
    return f"{type(exc).__name__}: {' '.join(text.split(chr(10) * 2, 1)[0].split())}"


def reset_function(agent_dir: Path) -> Reset | None:
    """The agent module's ``reset_data``, which ADK's eval calls before each inference."""
    for name in (f"{agent_dir.name}.agent", agent_dir.name):
        reset = getattr(sys.modules.get(name), "reset_data", None)
        if callable(reset):
            return reset
    return None


def make_model_clients(loaded: Any) -> None:
    """The google-genai client of each Gemini model of the agent's tree, made now, as ADK
    makes it on the model's first call (0.1-0.3 s of CPU each, its SSL contexts): otherwise
    it holds up every run in flight then, and the call leaves that long after its turn
    (pacing.py), into the quota's next window. Only a speed-up: a model that cannot be made
    fails its first call as it would have."""
    from google.adk.agents.base_agent import BaseAgent
    from google.adk.models.google_llm import Gemini

    root = getattr(loaded, "root_agent", loaded)
    seen: set[int] = set()
    pending = [root] if isinstance(root, BaseAgent) else []
    while pending:
        agent = pending.pop()
        if id(agent) in seen:
            continue
        seen.add(id(agent))
        pending.extend(sub for sub in getattr(agent, "sub_agents", None) or ()
                       if isinstance(sub, BaseAgent))
        pending.extend(tool.agent for tool in getattr(agent, "tools", None) or ()
                       if isinstance(getattr(tool, "agent", None), BaseAgent))
        try:
            model = getattr(agent, "canonical_model", None)
            if isinstance(model, Gemini):
                model.api_client  # noqa: B018 - a cached property: the client, made once
        except Exception:  # the call will fail with it, as under ADK
            continue


class Agents:
    """What ``evalcheck-adk DIR`` serves: the agent DIR is, or the agents DIR holds."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.names = agents_in(folder)  # [] when DIR is one agent
        self._loaded: dict[str, tuple[Any, Reset | None]] = {}
        self._failed: dict[str, str] = {}  # an agent that failed to load is not tried again

    @property
    def several(self) -> bool:
        return bool(self.names)

    def load(self, agent_dir: Path) -> tuple[Any, Reset | None]:
        """The agent in ``agent_dir`` and its reset function (loaded once); raises LoadFailure."""
        key = agent_dir.name
        if key in self._loaded:
            return self._loaded[key]
        if key in self._failed:
            raise LoadFailure(self._failed[key])
        try:
            loaded = load_agent(agent_dir)
        except Exception as exc:  # the user's agent failing to import: say why, in one line
            self._failed[key] = (f"cannot load the ADK agent in {shown(agent_dir)}: "
                                 f"{load_problem(agent_dir, exc)}")
            raise LoadFailure(self._failed[key]) from None
        self._loaded[key] = (loaded, reset_function(agent_dir))
        make_model_clients(loaded)
        gc.freeze()  # as what was loaded before the first run (fewer_collections)
        return self._loaded[key]

    def for_run(self, start: dict[str, Any]) -> tuple[Any, Reset | None]:
        """The agent a run's ``start`` message is for (DIR itself when it is one agent)."""
        if not self.several:
            return self.load(self.folder)
        path = start.get("evalSetPath")
        app_name = (start.get("session") or {}).get("appName")
        name = agent_for(self.folder, self.names, path if isinstance(path, str) else None,
                         app_name if isinstance(app_name, str) else None)
        if name is None:
            what = path if isinstance(path, str) else f"eval set '{start.get('evalSetId')}'"
            problem, fix = no_agent(shown(self.folder), self.names,
                                    app_name if isinstance(app_name, str) else None)
            raise LoadFailure(f"{what} {problem} ({fix})")
        return self.load(self.folder / name)
