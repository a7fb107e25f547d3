"""The Action's ``setup-command``: the pull request's code, run before the agent.

Its output reaches the log only through evalcheck's guarded stream (checker/safety/output.py), a
line at a time, like the agent's: it is read from a pipe, never inherited, so nothing it
prints - nor anything it leaves running in the background, which may print later - can be
a workflow command or show a known secret. What it leaves running keeps running (a server
the agent needs, say); its later lines are shown with a ``setup-command:`` prefix.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ..errors import InputError
from ..safety.output import Commands, GuardedStream
from ..safety.redact import Redactor

if TYPE_CHECKING:
    from .sandbox import AgentSandbox

LATE_PREFIX = "setup-command: "  # a line printed after the command itself has exited
DRAIN_SECONDS = 0.5  # after the shell exits, how long its pipe may take to reach its end
MAX_LINE = 64 * 1024  # bytes of one line of its output shown at once


class _Echo(threading.Thread):
    """Copies the command's output to ``stream`` line by line until the pipe's end (the
    last process holding it exits)."""

    def __init__(self, pipe: IO[bytes], stream: GuardedStream):
        super().__init__(name="setup-command output", daemon=True)
        self.pipe, self.stream = pipe, stream
        self.prefix = ""

    def run(self) -> None:
        with self.pipe:
            # A line at most MAX_LINE bytes: a longer one is shown in pieces, so a command
            # that prints a gigabyte without a newline costs no more memory than this.
            while raw := self.pipe.readline(MAX_LINE):
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                try:
                    self.stream.write(self.prefix + line + "\n")
                    self.stream.flush()
                except Exception:  # a closed or full log must not fail the job, nor stop the drain
                    pass


def run_setup(command: str, workdir: Path, commands: Commands,
              sandbox: AgentSandbox | None = None) -> None:
    """Run ``command`` with ``/bin/sh -c`` in ``workdir`` (as the sandbox's user when given);
    raises InputError when it fails."""
    from .process import become_subreaper

    # The guarded stdout of the Action; any other stream is guarded here, so the output
    # cannot go around the sanitiser even when this runs outside guarded().
    stream = sys.stdout if isinstance(sys.stdout, GuardedStream) else GuardedStream(sys.stdout, Redactor())
    as_agent = {} if sandbox is None else {"env": sandbox.environ(os.environ), **sandbox.popen_kwargs()}
    commands.group("evalcheck: setup-command")
    try:
        # Its own process group, and we its subreaper: on Ctrl-C/SIGTERM everything it
        # started is stopped and reaped too.
        become_subreaper()
        proc: subprocess.Popen[bytes] | None = None
        try:  # a Ctrl-C/SIGTERM from the start stops the group, even while the echo starts
            proc = subprocess.Popen(["/bin/sh", "-c", command], cwd=workdir,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, start_new_session=True, **as_agent)
            assert proc.stdout is not None
            echo = _Echo(proc.stdout, stream)
            echo.start()
            returncode = proc.wait()
        except BaseException:
            if proc is not None:
                stop_group(proc.pid)
            raise
        echo.join(DRAIN_SECONDS)  # the pipe ends now unless something it started holds it
        echo.prefix = LATE_PREFIX
    finally:
        stream.end_line()
        commands.endgroup()
    if returncode != 0:
        raise InputError(f"setup-command failed with exit status {returncode}",
                         fix="see the 'evalcheck: setup-command' group in the log")


def stop_group(pgid: int, grace: float = 5.0) -> None:
    """SIGTERM to process group ``pgid``, SIGKILL after ``grace`` seconds; its members that
    are our children (we are their subreaper) are reaped, so none is left a zombie."""
    import signal
    import time

    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            try:
                while os.waitpid(-pgid, os.WNOHANG)[0] > 0:
                    pass
            except ChildProcessError:
                pass
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)
