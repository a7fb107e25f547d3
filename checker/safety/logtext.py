"""The text of one log line made safe: ``neutralise``, the rule of checker/safety/output.py.

A pure function on strings, apart from the streams, so that the redactor can hide a secret
in the form a log line shows it (checker/safety/redact.py) without importing the streams.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Characters .NET/ICU may treat as absent when it searches for "::" or "##[" (Unicode's
# Default_Ignorable_Code_Point), on top of the control/format/separator categories.
_IGNORABLE_RANGES = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160),
    (0x17B4, 0x17B5), (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E),
    (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_COMMAND_CHARS = frozenset(":#[]")
_NEEDS_CARE = re.compile(r"[^\t\x20-\x7e]")  # anything but tab and printable ASCII
_BREAK = re.compile(r":(?=:)|#(?=#\[)")      # "::" -> ": :", "##[" -> "# #["


def ignorable(ch: str) -> bool:
    code = ord(ch)
    return any(lo <= code <= hi for lo, hi in _IGNORABLE_RANGES)


@lru_cache(maxsize=8192)
def _always_escaped(ch: str) -> bool:
    """Invisible, a line break, or a look-alike of ``:``, ``#``, ``[``, ``]`` (fullwidth ...)."""
    if ch == "\t":
        return False
    if ch < "\x80":
        return not ("\x20" <= ch <= "\x7e")
    if unicodedata.category(ch) in _INVISIBLE_CATEGORIES or ignorable(ch):
        return True
    return any(c in _COMMAND_CHARS for c in unicodedata.normalize("NFKD", ch))


@lru_cache(maxsize=8192)
def _transparent(ch: str) -> bool:
    """A combining mark (or a character made only of them): escaped after ``:`` or ``#``,
    where a comparison that ignores it would see ``::`` or ``##[``."""
    return all(unicodedata.category(c).startswith("M") or ignorable(c)
               for c in unicodedata.normalize("NFKD", ch))


def escape_char(ch: str) -> str:
    """``ch`` as a visible escape: ``\\n``, ``\\x1b``, ``\\u200b``."""
    if ch == "\n":
        return "\\n"
    if ch == "\r":
        return "\\r"
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def neutralise(line: str) -> str:
    """One physical line that cannot be (or start) a workflow command: invisible characters,
    line breaks and look-alikes escaped, ``::`` and ``##[`` broken up. Idempotent."""
    if _NEEDS_CARE.search(line):
        out: list[str] = []
        after_marker = False  # the last kept character was ":" or "#" (or marks after them)
        for ch in line:
            if ch.isascii() or not (after_marker and _transparent(ch)):
                if _always_escaped(ch):
                    out.append(escape_char(ch))
                    after_marker = False
                    continue
                out.append(ch)
                after_marker = ch in ":#"
            else:
                out.append(escape_char(ch))  # keeps after_marker: a run of marks stays escaped
        line = "".join(out)
    return _BREAK.sub(lambda m: m.group(0) + " ", line)
