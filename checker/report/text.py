"""Making untrusted text (agent output, eval files) safe for logs and markdown."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x1b]")


def one_line(text: str, limit: int) -> str:
    """Collapse to one printable line of at most ``limit`` characters."""
    flat = " ".join(_CONTROL.sub(" ", text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"


def log_safe(text: str) -> str:
    """Neutralise workflow commands (``::error::``) and terminal escapes in logged text."""
    text = _CONTROL.sub("?", text)
    return text.replace("::", ":\u200b:")
