"""Everything evalcheck prints goes through here: one sanitiser, one output function.

The Actions runner reads a step's stdout *and* stderr line by line and acts on workflow
commands in them: ``::name args::data`` at the start of a line (after leading whitespace)
and the legacy ``##[name args]data`` anywhere in a line (actions/runner ActionCommand.cs).
A line is ended by ``\\n`` or ``\\r``. The runner compares with .NET's culture-sensitive
string search, for which control, format and other "ignorable" characters may vanish.
Agent output, eval ids, judge and server messages reach our log lines, so:

- ``clean(text)`` makes untrusted text one safe line: line breaks and invisible characters
  become visible escapes (``\\n``, ``\\u200b``), and ``::`` / ``##[`` are broken up.
- ``guarded()`` replaces ``sys.stdout`` / ``sys.stderr`` for the life of a command (CLI and
  Action) by streams that pass every physical line through ``neutralise``: whatever is
  printed - progress, failure lines, click errors, tracebacks, a library's warning -
  cannot start a workflow command, and known secret values are replaced by ``***``.
  This holds by construction, not because every caller remembered to escape.
- ``Commands`` writes the only lines allowed to be workflow commands: the ones evalcheck
  authors (``::warning::``, ``::add-mask::`` ...), their data neutralised the same way.
- ``say(text)`` is the output function: one or more authored lines on stdout/stderr.

tests/core/test_output.py fuzzes all of it against a model of the runner's parser.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TextIO

from .logtext import ignorable, neutralise  # noqa: F401  (re-exported: the one sanitiser)
from .redact import Redactor


def clean(text: object, limit: int | None = None) -> str:
    """Untrusted text as one safe log line: newlines shown as ``\\n``, at most ``limit``
    characters (cut with a note). Use it where agent, eval-file or server text is put
    into a line evalcheck prints."""
    line = neutralise(str(text))
    if limit is not None and len(line) > limit:
        line = line[: max(0, limit - 1)] + "\u2026"
    return line


# --- streams --------------------------------------------------------------------------

_LINE_BREAKS = re.compile(r"\r\n|\n")


class GuardedStream(io.TextIOBase):
    """A text stream whose every physical line is neutralised and redacted.

    A partial line is held until its end (or ``close``): emitting it early would let the
    next write complete a command the check never saw whole. No ``buffer`` attribute, so
    click cannot go around it to the bytes underneath.
    """

    def __init__(self, raw: TextIO, redactor: Redactor):
        super().__init__()
        self.raw = raw
        self.redactor = redactor
        self._pending = ""
        # Threads share it (setup-command's output echo): a held partial line is one state.
        self._lock = threading.RLock()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.raw, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.raw, "errors", None)

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        try:
            return bool(self.raw.isatty())
        except (AttributeError, ValueError, OSError):
            return False

    def fileno(self) -> int:  # what asks for it (a terminal check) gets the real stream
        return self.raw.fileno()

    def safe(self, line: str) -> str:
        return neutralise(self.redactor.text(line))

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        with self._lock:
            parts = _LINE_BREAKS.split(self._pending + text)
            self._pending = parts.pop()
            if parts:
                self.raw.write("".join(self.safe(p) + "\n" for p in parts))
        return len(text)

    def end_line(self) -> None:
        """Finish a held partial line (before an authored command, or at the end)."""
        with self._lock:
            if self._pending:
                self.raw.write(self.safe(self._pending) + "\n")
                self._pending = ""

    def authored(self, line: str) -> None:
        """A line evalcheck wrote whole (a workflow command): after anything held."""
        with self._lock:
            self.end_line()
            self.raw.write(line + "\n")
            self.raw.flush()

    def redraw(self, status: str, lines: Iterable[str] = (), *, clear: bool = True) -> None:
        """A terminal's in-place status line: clear the one drawn before (``clear``), print
        ``lines``, draw ``status``. Only the ``\\r`` and the erase sequence are raw; a
        Progress uses this on a terminal only, which no runner reads."""
        with self._lock:
            self.end_line()
            body = "".join(self.safe(line) + "\n" for line in lines)
            self.raw.write(("\r\x1b[K" if clear else "") + body + self.safe(status))
            self.raw.flush()

    def flush(self) -> None:
        try:
            self.raw.flush()
        except (OSError, ValueError):
            pass

    def close(self) -> None:  # never closes the process's real stream
        self.end_line()
        self.flush()


@contextlib.contextmanager
def guarded(secrets: Iterable[str] = ()) -> Iterator[Redactor]:
    """Route ``sys.stdout`` and ``sys.stderr`` through GuardedStream while the block runs
    (nested, it only adds ``secrets`` to the guard in place). Yields the redactor, whose
    ``add`` hides more values from then on."""
    old_out, old_err = sys.stdout, sys.stderr
    if isinstance(old_out, GuardedStream):
        old_out.redactor.add(*secrets)
        yield old_out.redactor
        return
    redactor = Redactor(secrets)
    out, err = GuardedStream(old_out, redactor), GuardedStream(old_err, redactor)
    sys.stdout, sys.stderr = out, err
    try:
        yield redactor
    finally:
        out.close()
        err.close()
        sys.stdout, sys.stderr = old_out, old_err


def say(text: str = "", *, err: bool = False) -> None:
    """The output function: authored text (may span lines) to stdout, or stderr with
    ``err``. Untrusted pieces inside it should be ``clean``-ed; the stream neutralises
    every line regardless."""
    stream = sys.stderr if err else sys.stdout
    try:
        stream.write(text + "\n")
        stream.flush()
    except (OSError, ValueError):  # a closed or full log must not fail the evaluation
        pass


# --- workflow commands ------------------------------------------------------------------

def escape_data(value: str) -> str:
    # Same escaping as @actions/core: the runner unescapes these.
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def command_data(message: str) -> str:
    """A command's data: each of its lines neutralised (annotations may span lines, the
    runner shows ``%0A`` as a line break), then escaped."""
    return escape_data("\n".join(neutralise(line) for line in _LINE_BREAKS.split(message)))


@dataclass
class Commands:
    """Workflow commands (``::warning::`` ...): the only lines that may be commands."""

    stream: TextIO = field(default_factory=lambda: sys.stdout)

    def _write(self, line: str) -> None:
        if isinstance(self.stream, GuardedStream):
            line = self.stream.redactor.text(line)
            self.stream.authored(line)
        else:
            self.stream.write(line + "\n")
            self.stream.flush()

    def issue(self, command: str, message: str = "", **props: str | int | None) -> None:
        params = ",".join(f"{k}={escape_property(neutralise(str(v)))}"
                          for k, v in props.items() if v is not None)
        self._write(f"::{command}{' ' + params if params else ''}::{command_data(message)}")

    def warning(self, message: str, **props: str | int | None) -> None:
        self.issue("warning", message, **props)

    def error(self, message: str, **props: str | int | None) -> None:
        self.issue("error", message, **props)

    def notice(self, message: str, **props: str | int | None) -> None:
        self.issue("notice", message, **props)

    def add_mask(self, secret: str) -> None:
        if secret:
            # Unredacted on purpose: the runner must learn the value to mask it.
            line = f"::add-mask::{escape_data(secret)}"
            if isinstance(self.stream, GuardedStream):
                self.stream.authored(line)
            else:
                self.stream.write(line + "\n")
                self.stream.flush()

    def group(self, title: str) -> None:
        self.issue("group", title)

    def endgroup(self) -> None:
        self.issue("endgroup")
