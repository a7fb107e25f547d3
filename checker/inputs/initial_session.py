"""The initial session of a legacy eval file (ADK's ``initial_session_file``).

ADK reads only ``state``, ``app_name`` and ``user_id`` from that file, so it also takes a full
session dump - what ``adk web`` or a session service saves, with ``id``, ``events`` and
``last_update_time`` (Google's ``trip_planner_agent/initial.session.json`` is one). We read
the same three keys from a dump and say what was ignored; any other unknown key is still a
mistake (a misspelt ``stat`` must not silently start the agent with no state).

Beside a legacy file, ``initial-session.json`` or ``initial.session.json`` is picked up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from ..errors import InputError
from ..models.base import StrictModel
from .validation import read_json, validate

INITIAL_SESSION_FILES = ("initial-session.json", "initial.session.json")
_DUMP_ONLY_KEYS = {"id", "events", "last_update_time", "lastUpdateTime"}
_READ_KEYS = {"state", "app_name", "appName", "user_id", "userId"}


class InitialSession(StrictModel):
    state: dict[str, Any] = Field(default_factory=dict)
    app_name: str = ""
    user_id: str = ""


class SessionDump(InitialSession):
    """ADK's ``Session`` as dumped: the fields beyond the initial session are ignored."""

    id: str | None = None
    events: list[Any] = Field(default_factory=list)
    last_update_time: float | None = None


@dataclass
class LoadedSession:
    session: InitialSession
    display: str
    notes: list[str] = field(default_factory=list)


def find_beside(eval_file: Path, eval_display: str) -> tuple[Path, str] | None:
    """The initial session file next to a legacy eval file (path, display), if any."""
    found = [eval_file.parent / name for name in INITIAL_SESSION_FILES
             if (eval_file.parent / name).is_file()]
    shown = [str(Path(eval_display).parent / p.name) for p in found]
    if len(found) > 1:
        raise InputError(f"two initial session files: {shown[0]} and {shown[1]}", file=eval_display,
                         fix="keep one of them (or pass --initial-session FILE)")
    return (found[0], shown[0]) if found else None


def parse_initial_session(data: Any, display: str) -> LoadedSession:
    if not isinstance(data, dict):
        raise InputError(f"expected a JSON object with state, app_name and user_id, got "
                         f"{type(data).__name__}", file=display, path="$")
    if not _DUMP_ONLY_KEYS & data.keys():
        return LoadedSession(validate(InitialSession, data, display), display)
    dump = validate(SessionDump, data, display)
    ignored = [k for k in data if k not in _READ_KEYS]
    described = [f"{k} ({len(dump.events)})" if k == "events" else k for k in ignored]
    note = (f"{display}: a session dump: read state, app_name and user_id, as ADK does; "
            f"ignored {', '.join(described)}")
    return LoadedSession(InitialSession(state=dump.state, app_name=dump.app_name,
                                        user_id=dump.user_id), display, [note])


def load_initial_session(path: Path, display: str | None = None) -> LoadedSession:
    display = display or str(path)
    if not path.is_file():
        raise InputError("initial session file not found", file=display)
    return parse_initial_session(read_json(path, display), display)
