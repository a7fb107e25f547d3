"""A user's report template, rendered within bounds.

The template is the repository's code, and the checker may run as root: it renders in
Jinja's sandbox (no path to Python's internals), and within bounds - a string or list
repeated past MAX_ITEMS, a power past MAX_POWER_BITS, recursion past Python's limit or a
rendering longer than RENDER_SECONDS is a template error (exit status 2), not a job that
exhausts the runner's memory or its time limit.
"""

from __future__ import annotations

import contextlib
import operator
import signal
import threading
from collections.abc import Iterator
from typing import Any

from jinja2 import Template
from jinja2.sandbox import SandboxedEnvironment, SecurityError

MAX_ITEMS = 1_000_000       # characters or items one `*` may make
MAX_POWER_BITS = 100_000    # bits of the result of one `**`
RENDER_SECONDS = 60.0


class BoundedSandbox(SandboxedEnvironment):
    intercepted_binops = frozenset(["*", "**"])

    def call_binop(self, context: Any, operator_name: str, left: Any, right: Any) -> Any:
        if operator_name == "*":
            for seq, times in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(times, int) \
                        and len(seq) * times > MAX_ITEMS:
                    raise SecurityError(f"a repetition of more than {MAX_ITEMS:,} items")
            return operator.mul(left, right)
        if isinstance(left, int) and isinstance(right, int) and right > 0 \
                and abs(left) > 1 and right * max(abs(left).bit_length(), 1) > MAX_POWER_BITS:
            raise SecurityError(f"a power of more than {MAX_POWER_BITS:,} bits")
        return super().call_binop(context, operator_name, left, right)


class RenderTimeout(Exception):
    pass


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """A SIGALRM timer in the main thread (where the reports are rendered); elsewhere none."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expired(signum: int, frame: Any) -> None:
        raise RenderTimeout

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def render_bounded(template: Template, context: dict[str, Any], seconds: float | None = None) -> str:
    """Render; SecurityError for what is unsafe or too large, or took too long."""
    seconds = RENDER_SECONDS if seconds is None else seconds
    try:
        with _deadline(seconds):
            return template.render(**context)
    except RecursionError:
        raise SecurityError("recursion too deep (a macro calling itself without end?)") from None
    except RenderTimeout:
        raise SecurityError(f"rendering took longer than {seconds:g} s") from None
    except MemoryError:
        raise SecurityError("rendering ran out of memory") from None
