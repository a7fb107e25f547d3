"""Our own ``evalcheck-adk`` started while ``evalcheck run`` reads its inputs.

Before the first model call an ADK agent's process spends a second or more importing
google-adk and google-genai, and the checker half a second importing itself and reading the
inputs: one after the other, on a machine with a CPU for each. For ``--agent-command
"evalcheck-adk DIR"`` - our bridge, installed beside this ``evalcheck``, as the first word of a
command the shell would not expand - the checker starts that process before anything else,
on the event loop the runs will use, and hands it to the first run. The bridge imports
google-adk and warms up meanwhile, and loads the agent (the code under test) only from its
first start message, once every input has been read (evalcheck_adk_bridge: ``serve``); the
start also gives it the first run's variables (``EVALCHECK_EVAL_SET_ID`` ...), which its
environment lacks. Any other command, one inside the Action's sandbox, and a run with
``--changed-since`` (which may run nothing) start as before, when the first run does. A
process started early and not taken (bad input, no run to do, Ctrl-C) is killed with its
whole process group.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from .adk_command import bridge_argument
from .our_commands import beside_evalcheck, with_our_command
from .process import become_subreaper, kill_group, reap, spawn

BRIDGE = "evalcheck-adk"
# Set for the process started early: it loads the agent from its first start message.
AT_START = "EVALCHECK_ADK_LOAD_AT_START"


def early_command(command: str | None, env: Mapping[str, str]) -> str | None:
    """``command`` as the agent runner will run it, when it may start early: ours (the
    ``evalcheck-adk`` installed beside this evalcheck, first word, plain words); else None."""
    if not command or bridge_argument(command) is None:
        return None
    resolved = with_our_command(command, env.get("PATH"))
    ours = beside_evalcheck(BRIDGE)
    program = shlex.split(resolved)[0]
    if ours is None or Path(program).name != BRIDGE:
        return None
    found = shutil.which(program, path=env.get("PATH"))
    if found is None or not os.path.samefile(found, ours):
        return None
    return resolved


class EarlyAgent:
    """The process started early, on the event loop (``runner``) the agent runs use; handed
    to the first run by ``take``, else killed by ``close``."""

    def __init__(self, runner: asyncio.Runner, proc: asyncio.subprocess.Process,
                 command: str, env: dict[str, str], cwd: Path):
        self.runner = runner
        self.command, self.env, self.cwd = command, env, cwd
        self._proc: asyncio.subprocess.Process | None = proc

    def take(self, command: str, env: Mapping[str, str], cwd: Path | None) -> asyncio.subprocess.Process | None:
        """The process, once, to a runner about to start ``command`` in ``env`` (without the
        run's variables) and ``cwd``, when it is the one started; else None."""
        proc, matches = self._proc, (command, dict(env), cwd) == (self.command, self.env, self.cwd)
        if proc is None or not matches:
            return None
        self._proc = None
        return proc

    def close(self) -> None:
        """Kill the process (and its group) if no run took it, then close the loop."""
        proc, self._proc = self._proc, None
        try:
            if proc is not None:
                self.runner.run(_end(proc))
        finally:
            self.runner.close()


async def _end(proc: asyncio.subprocess.Process) -> None:
    await kill_group(proc.pid, grace=0.5)
    await reap(proc)


@contextmanager
def started_early(command: str | None, *, when: bool = True) -> Iterator[EarlyAgent | None]:
    """Start ``command`` now when it may start early (``early_command``) and ``when``; the
    EarlyAgent, or None. Whatever no run took is killed on the way out."""
    env = dict(os.environ)
    resolved = early_command(command, env) if when else None
    if resolved is None:
        yield None
        return
    cwd = Path.cwd()
    become_subreaper()
    runner = asyncio.Runner()
    try:
        proc = runner.run(spawn(resolved, cwd=cwd, env={**env, AT_START: "1"}))
    except OSError:  # the first run starts it again and says why it cannot
        runner.close()
        yield None
        return
    early = EarlyAgent(runner, proc, resolved, env, cwd)
    try:
        yield early
    finally:
        early.close()
