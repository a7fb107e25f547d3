"""Short text every layer writes: untrusted text on one line, a count with its word."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x1b]")


def one_line(text: str, limit: int) -> str:
    """Collapse to one printable line of at most ``limit`` characters."""
    flat = " ".join(_CONTROL.sub(" ", text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"


def plural(n: int, one: str, many: str | None = None) -> str:
    """1 case, 3 cases: n and the word for it (``many`` when the plural is irregular)."""
    return f"{n} {one if n == 1 else (many or one + 's')}"
