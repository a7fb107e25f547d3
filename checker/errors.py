"""Errors that reach the user as one clear line (exit status 2), never as a traceback."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Any


def json_path(loc: Sequence[Any]) -> str:
    """Render a pydantic/JSON location tuple as a JSONPath: ``$.eval_cases[0].conversation``."""
    out = "$"
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}"
    return out


class InputError(Exception):
    """Bad input or usage: names the file, the JSON path at fault and how to fix it."""

    def __init__(self, message: str, *, file: str | None = None, path: str | None = None,
                 fix: str | None = None, line: int | None = None):
        self.message = message
        self.file = file
        self.path = path
        self.fix = fix
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = self.file + (f":{self.line}" if self.line else "")
        if self.path:
            where = f"{where} at {self.path}" if where else self.path
        text = f"{where}: {self.message}" if where else self.message
        if self.fix:
            text += f" ({self.fix})"
        return text


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=5, cutoff=0.6)
    if not close:
        return ""
    # A truncated name ("response_match") means the name it starts, even when another
    # name happens to score a hair higher.
    best = next((c for c in close if c.startswith(word)), close[0])
    return f"did you mean '{best}'?"
