"""Making untrusted text (agent output, eval files) safe for logs and markdown."""

from __future__ import annotations

import json
import re
from typing import Any

def log_safe(text: str) -> str:
    """Untrusted text for a log line: see checker/safety/output.py ``clean`` (the one sanitiser)."""
    from ..safety.output import clean

    return clean(text)


# --- markdown-safe rendering of untrusted text (agent output, eval files) -------------

# Control characters, and the bidi embeddings, overrides and isolates (U+202A-E, U+2066-9):
# in a rendered comment one of them would turn the rest of a cell or line around, ours too.
_CONTROL_KEEP_NL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
_BACKTICKS = re.compile(r"`+")


def printable(text: str) -> str:
    """Drop control characters (terminal escapes, NUL) and bidi overrides, but keep
    newlines and tabs."""
    return _CONTROL_KEEP_NL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def clip(text: str, limit: int) -> str:
    """At most ``limit`` characters, saying how many were cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\u2026 [{len(text) - limit:,} more characters]"


def clip_tail(text: str, max_lines: int, max_chars: int) -> str:
    """The end of a log (stderr tail): the last lines are the ones that explain a crash."""
    lines = text.rstrip("\n").split("\n")
    cut = len(lines) > max_lines
    out = "\n".join(lines[-max_lines:])
    if len(out) > max_chars:
        out, cut = out[-max_chars:], True
    return ("[\u2026 earlier output cut]\n" if cut else "") + out


def md_code(text: str, *, in_table: bool = True) -> str:
    """An inline code span that untrusted text cannot close.

    The fence is one backtick longer than the longest run inside, so the text cannot end the
    span; code spans are not parsed for HTML, links or @mentions. Newlines are flattened (a
    span cannot hold one in a table row). In a table cell ``|`` must still be escaped: GFM
    splits cells before it parses code spans.
    """
    s = " ".join(printable(text).split())
    if in_table:
        s = s.replace("|", "\\|")
    if not s:
        return ""
    longest = max((len(m) for m in _BACKTICKS.findall(s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s[0] in "` " or s[-1] in "` " else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def md_fence(text: str, info: str = "text") -> str:
    """A fenced code block that untrusted text cannot close: the fence is longer than any
    backtick run in the text, so neither its content nor a later line can end it early."""
    s = printable(text).rstrip("\n")
    longest = max((len(m) for m in _BACKTICKS.findall(s)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{s}\n{fence}"


def utf16_len(text: str) -> int:
    """Length as GitHub counts a comment body (JavaScript string length, UTF-16 units)."""
    return len(text.encode("utf-16-le")) // 2


def fmt_duration(seconds: float) -> str:
    """``12.3 s``, ``10 min 12 s``, ``1 h 4 min``: the run's duration in every report."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


MAX_CALL_TEXT = 200  # characters of one rendered tool call


def fmt_call(call: Any) -> str:
    """``name(arg="value", n=2)`` from a call's JSON; clipped so one call stays one line."""
    if not isinstance(call, dict):
        return clip(str(call), MAX_CALL_TEXT)
    args = call.get("args") or {}
    if isinstance(args, dict):
        inner = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, sort_keys=True)}"
                          for k, v in args.items())
    else:
        inner = json.dumps(args, ensure_ascii=False)
    return clip(f"{call.get('name', '?')}({inner})", MAX_CALL_TEXT)
