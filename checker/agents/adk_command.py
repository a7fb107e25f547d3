"""An ``evalcheck-adk DIR`` agent command as the checker reads it, before any agent runs: the
folder it loads and, when DIR holds several ADK agents, the agent each eval set runs on (the
bridge's own rule, evalcheck_adk_bridge/folders.py). An eval set that would run on none is
bad input, said once before any agent starts (docs/adk-users.md)."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evalcheck_adk_bridge.folders import agent_for, agents_in, no_agent

from ..errors import InputError

if TYPE_CHECKING:
    from ..inputs.discover import EvalTarget

BRIDGE_COMMANDS = ("evalcheck-adk",)
BRIDGE_MODULES = ("evalcheck_adk_bridge", "checker.bridges.adk")
SHELL_WORDS = {";", "&&", "||", "|", "&", "(", ")"}
EVALSET_SUFFIXES = (".evalset.json", "_evalset.json")  # where $.eval_cases[i] is the case


def bridge_argument(command: str | None) -> str | None:
    """DIR of an ``evalcheck-adk [--one-session | --concurrent N] DIR`` command (or ``python
    -m evalcheck_adk_bridge DIR``), as written; None for any other command, or one the shell
    would expand or chain."""
    if not command:
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if any(w in SHELL_WORDS or any(ch in w for ch in "$`*?") for w in words):
        return None
    start = next((i + 1 for i, w in enumerate(words) if Path(w).name in BRIDGE_COMMANDS), None)
    if start is None:
        start = next((i + 2 for i, w in enumerate(words[:-1])
                      if w == "-m" and words[i + 1] in BRIDGE_MODULES), None)
    if start is None:
        return None
    positional = []
    skip = False
    for word in words[start:]:
        if skip:
            skip = False
        elif word == "--concurrent":
            skip = True
        elif not word.startswith("-"):
            positional.append(word)
    if len(positional) != 1 or not Path(positional[0]).is_dir():
        return None
    return positional[0]


@dataclass(frozen=True)
class BridgeFolder:
    """The folder an ``evalcheck-adk DIR`` command loads (relative to the working directory,
    as the bridge resolves it) and the agents in it ([]: DIR is one agent)."""

    written: str  # DIR as the command writes it
    path: Path  # resolved
    agents: tuple[str, ...]

    def agents_of(self, target: EvalTarget) -> list[str]:
        """The agents the target's selected cases run on (DIR itself: [""]); InputError when
        a case would run on none."""
        if not self.agents:
            return [""]
        names = list(self.agents)
        placed = agent_for(self.path, names, target.loaded.path, None)
        if placed is not None:
            return [placed]
        apps = {o.eval_id: o.app_name or target.eval_set_id for o in target.loaded.case_outlines()}
        found = []
        for eval_id in target.case_ids:
            name = agent_for(self.path, names, None, apps[eval_id])
            if name is None:
                raise self._no_agent(target, eval_id, apps[eval_id])
            found.append(name)
        return list(dict.fromkeys(found))

    def _no_agent(self, target: EvalTarget, eval_id: str, app_name: str) -> InputError:
        problem, fix = no_agent(self.written, list(self.agents), app_name)
        loaded = target.loaded
        at = None
        if loaded.display_path.endswith(EVALSET_SUFFIXES) and not loaded.legacy:
            at = f"$.eval_cases[{loaded.case_ids.index(eval_id)}].session_input.app_name"
        return InputError(f"eval case '{eval_id}' {problem}", file=loaded.display_path, path=at, fix=fix,
                          line=loaded.case_lines.get(eval_id))


def read_bridge_command(command: str | None) -> BridgeFolder | None:
    """What an ``evalcheck-adk DIR`` command loads; None for any other command."""
    written = bridge_argument(command)
    if written is None:
        return None
    path = Path(written).resolve()
    return BridgeFolder(written, path, tuple(agents_in(path)))


def check_bridge_agents(command: str | None, targets: Iterable[EvalTarget]) -> None:
    """Every eval set has an agent in a folder of agents, or InputError naming the first
    eval file and case that has none."""
    folder = read_bridge_command(command)
    if folder is not None and folder.agents:
        for target in targets:
            folder.agents_of(target)
