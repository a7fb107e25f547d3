"""Which ADK agent ``evalcheck-adk DIR`` runs an eval set on (standard library only: the
checker reads the same rule before any agent runs, for its setup check and --changed-since).

DIR is one agent when ADK's AgentLoader would take it for one (``agent.py`` or
``root_agent.yaml`` in it), or when its ``__init__.py`` defines ``root_agent``, or when it
holds no agent folders: that agent runs every eval set. Otherwise DIR holds several agents,
the folders in it that ADK's AgentLoader lists (``adk web DIR``, ``adk api_server DIR``):
those with ``agent.py``, ``root_agent.yaml`` or ``__init__.py``. Each eval set then runs on
the agent ADK would use for it: the agent folder its eval file lies in (``adk eval
DIR/shop DIR/shop/x.evalset.json``), else the agent its session's app name names (the
case's ``session_input.app_name``, or without one its eval set id).
"""

from __future__ import annotations

import os
from pathlib import Path

SINGLE_MARKERS = ("agent.py", "root_agent.yaml")  # ADK's is_single_agent_directory


def _looks_like_agent(folder: Path) -> bool:
    """ADK's AgentLoader._looks_like_agent_dir."""
    return any((folder / name).is_file() for name in (*SINGLE_MARKERS, "__init__.py"))


def _defines_root_agent(init: Path) -> bool:
    try:
        return "root_agent" in init.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def agents_in(folder: Path) -> list[str]:
    """The agents ADK's AgentLoader lists in ``folder`` (sorted); [] when it is one agent."""
    if any((folder / name).is_file() for name in SINGLE_MARKERS) \
            or _defines_root_agent(folder / "__init__.py"):
        return []
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(n for n in names if not n.startswith(".") and n != "__pycache__"
                  and (folder / n).is_dir() and _looks_like_agent(folder / n))


def agent_for(folder: Path, agents: list[str], eval_file: str | Path | None,
              app_name: str | None) -> str | None:
    """The agent of ``agents`` (in ``folder``) an eval set runs on: the one whose folder its
    eval file lies in, else the one ``app_name`` names; None when neither.
    ``eval_file``: relative to the working directory, or absolute."""
    if eval_file is not None:
        try:
            inside = Path(os.path.abspath(eval_file)).relative_to(os.path.abspath(folder)).parts
        except ValueError:
            inside = ()
        if len(inside) > 1 and inside[0] in agents:
            return inside[0]
    return app_name if app_name in agents else None


def no_agent(folder: str, agents: list[str], app_name: str | None) -> tuple[str, str]:
    """Why an eval set has no agent in ``folder`` (shown as the user named it), and the fix."""
    named = f"its app name '{app_name}' names none of them" if app_name else "it names no app"
    return (f"runs on no agent of {folder}: it lies in none of the agent folders there and "
            f"{named} (agents found: {', '.join(agents)})",
            f"put the eval file in its agent's folder (e.g. {folder.rstrip('/')}/{agents[0]}/), "
            "or set its cases' session_input.app_name to its agent's folder name")
