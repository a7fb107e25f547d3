"""``evalcheck-adk`` and ``evalcheck-adk-ts`` found where pip put them, beside ``evalcheck``.

pip installs the three commands into one scripts folder (a venv's ``bin``). Run as
``.venv/bin/evalcheck`` without that folder on PATH, an agent command ``evalcheck-adk DIR``
would fail as "evalcheck-adk: not found" although it is installed: a command that starts
with one of them, which PATH does not find, is run from that folder instead. PATH still
wins: an agent's own environment may hold the bridge it means.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import sysconfig
from pathlib import Path

OUR_COMMANDS = ("evalcheck-adk", "evalcheck-adk-ts")
# The shell's words for a program it did not find: dash's "sh: 1: NAME: not found", bash's
# "NAME: command not found".
_NOT_FOUND = re.compile(r"(?:^|[\s:/])(evalcheck-adk(?:-ts)?): (?:command )?not found\b", re.M)


def install_dirs() -> list[Path]:
    """The folders evalcheck's own commands were installed in: that of the running
    ``evalcheck`` (as invoked, and with its links resolved), and the running interpreter's
    scripts folder."""
    found: list[Path] = []
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0 and not argv0.startswith("-") and os.path.isfile(argv0):
        found += [Path(os.path.abspath(argv0)).parent, Path(argv0).resolve().parent]
    scripts = sysconfig.get_path("scripts")
    if scripts:
        found.append(Path(scripts))
    found.append(Path(os.path.abspath(sys.executable)).parent)
    return list(dict.fromkeys(found))


def beside_evalcheck(name: str) -> Path | None:
    """``name`` (one of ``OUR_COMMANDS``) in the folders evalcheck was installed in."""
    for folder in install_dirs():
        path = folder / name
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


def with_our_command(command: str, path: str | None) -> str:
    """``command`` with its program written as a full path when it is one of ours that
    ``path`` (the agent's PATH) does not find and that is installed beside evalcheck; else
    ``command`` as it is."""
    stripped = command.lstrip()
    words = stripped.split(maxsplit=1)
    name = words[0] if words else ""
    if name not in OUR_COMMANDS or shutil.which(name, path=path) is not None:
        return command
    found = beside_evalcheck(name)
    if found is None:
        return command
    return shlex.quote(str(found)) + stripped[len(name):]


def not_found_hint(output: str | None) -> str | None:
    """What to do when the shell said one of ours was not found (its ``output``): where it
    was looked for, and the fix; None for any other output."""
    match = _NOT_FOUND.search(output or "")
    if match is None:
        return None
    name = match.group(1)
    folders = ", ".join(str(d) for d in install_dirs())
    return (f"{name} is not on PATH, nor beside evalcheck in {folders}: install it where the "
            f"agent runs (pip install evalcheck-adk), or put the folder that holds {name} on "
            "PATH, or give its full path in --agent-command")
