"""SIGTERM handled as Ctrl-C.

Docker (``docker stop``) and the Actions runner (a cancelled job) send SIGTERM, first and
only to the container's PID 1. Python ignores SIGTERM there unless it has a handler, and
elsewhere dies of it without cleaning up. Here SIGTERM becomes the SIGINT that Ctrl-C
sends: the runs in flight are cancelled and kill their agents (and the agents' children),
the runs that finished are scored and written, marked interrupted (``--inference-out``, the
results and every report: agents/collect.py, scoring/interrupted.py), and the exit status is
143 (128 + SIGTERM) instead of Ctrl-C's 130.
"""

from __future__ import annotations

import contextlib
import contextvars
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass

EXIT_SIGINT = 128 + signal.SIGINT    # 130
EXIT_SIGTERM = 128 + signal.SIGTERM  # 143


@dataclass
class Interruption:
    """Which signal stopped the command, if any."""

    signal: int | None = None

    @property
    def status(self) -> int:
        return EXIT_SIGTERM if self.signal == signal.SIGTERM else EXIT_SIGINT

    def exit_status(self, code: str | int | None) -> str | int | None:
        """``code`` of a SystemExit, with Ctrl-C's 130 told apart from SIGTERM's 143."""
        return self.status if code == EXIT_SIGINT else code

    @property
    def name(self) -> str:
        return "SIGTERM" if self.signal == signal.SIGTERM else "SIGINT"


# The command's Interruption, for the reports of an interrupted run to name the signal; the
# signal handler is the process's, so is this (set only inside ``sigterm_as_ctrl_c``).
_ACTIVE: contextvars.ContextVar[Interruption | None] = contextvars.ContextVar("interruption", default=None)


def signal_name() -> str:
    """"SIGTERM" when the running command was stopped by SIGTERM, else "SIGINT" (Ctrl-C)."""
    seen = _ACTIVE.get()
    return seen.name if seen is not None else "SIGINT"


@contextlib.contextmanager
def sigterm_as_ctrl_c() -> Iterator[Interruption]:
    seen = Interruption()
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return
    token = _ACTIVE.set(seen)

    def on_sigterm(signum: int, frame: object) -> None:
        seen.signal = signal.SIGTERM
        # Whatever handles SIGINT now - asyncio's (cancels the runs) or Python's default
        # (KeyboardInterrupt) - handles this too.
        signal.raise_signal(signal.SIGINT)

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    # A shell script's background job (`evalcheck run ... &`) starts with SIGINT ignored:
    # the SIGINT that SIGTERM becomes would be lost, and asyncio would not install its
    # handler (which cancels the runs cleanly). Listen to SIGINT while the command runs.
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield seen
    finally:
        _ACTIVE.reset(token)
        signal.signal(signal.SIGTERM, previous)
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
