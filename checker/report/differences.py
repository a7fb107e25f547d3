"""Saying *why* two things differ when a reader cannot see it, for markdown and terminal.

- two texts that differ only in Unicode normalisation (NFC vs NFD), whitespace or invisible
  characters (zero-width space, BOM, soft hyphen ...) look identical on screen: show the
  difference with the code points escaped (``caf\\u00e9`` vs ``cafe\\u0301``);
- an empty reference text scores 0 with ROUGE-1 (as in ADK): say so instead of showing an
  empty block;
- tool_parameter_match: which expected call lost credit, and for which arguments.

Everything returned is plain, untrusted text: the caller escapes it for its medium.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import Any

from .text import fmt_call

WINDOW = 24            # characters shown either side of the first difference
MAX_NOTES = 5          # notes per failing turn

# Characters that render as nothing: format controls (ZWSP, ZWJ, BOM, LRM, soft hyphen ...),
# variation selectors and the combining grapheme joiner.
_INVISIBLE_EXTRA = {0x034F, *range(0xFE00, 0xFE10)}


def _is_invisible(char: str) -> bool:
    return unicodedata.category(char) == "Cf" or ord(char) in _INVISIBLE_EXTRA


def _without_invisible(text: str) -> str:
    return "".join(c for c in text if not _is_invisible(c))


def _normalised(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _collapsed(text: str) -> str:
    return " ".join(text.split())


_FOLDS = (("Unicode normalisation", _normalised), ("whitespace", _collapsed),
          ("invisible characters", _without_invisible))


def _fold(text: str, skip: str | None = None) -> str:
    for name, fold in _FOLDS:
        if name != skip:
            text = fold(text)
    return text


def invisible_difference(expected: str, actual: str) -> list[str] | None:
    """What two different texts differ in, when only normalisation, whitespace or invisible
    characters separate them (each reason listed is needed to explain the difference);
    None when they are equal or differ visibly."""
    if expected == actual or _fold(expected) != _fold(actual):
        return None
    needed = [name for name, _ in _FOLDS if _fold(expected, skip=name) != _fold(actual, skip=name)]
    if needed:
        return needed
    # Each of several folds alone explains it (a no-break space is whitespace and NFKC-folds
    # to a space): name the plainest one that does.
    for name, fold in sorted(_FOLDS, key=lambda f: ("whitespace", "invisible characters",
                                                    "Unicode normalisation").index(f[0])):
        if fold(expected) == fold(actual):
            return [name]
    return [name for name, fold in _FOLDS if fold(expected) != expected or fold(actual) != actual]


def escape_code_points(text: str) -> str:
    """Printable ASCII as is; every other character (and a space that could go unseen: at an
    end, or next to other whitespace) as an escape: ``\\t``, ``\\n``, ``\\u00e9``."""
    out = []
    for i, char in enumerate(text):
        code = ord(char)
        if char == " ":
            lone = 0 < i < len(text) - 1 and not text[i - 1].isspace() and not text[i + 1].isspace()
            out.append(" " if lone else "\\u0020")
        elif char == "\\":
            out.append("\\\\")
        elif 0x21 <= code <= 0x7E:
            out.append(char)
        elif char in "\t\n\r":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r"}[char])
        else:
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
    return "".join(out)


def _window(text: str, start: int) -> str:
    lo, hi = max(0, start - WINDOW), start + WINDOW
    return ("\u2026" if lo else "") + escape_code_points(text[lo:hi]) + ("\u2026" if hi < len(text) else "")


def difference_note(expected: str, actual: str, what: str = "the texts") -> str | None:
    """One line showing an unseen difference, or None if there is none to show."""
    reasons = invisible_difference(expected, actual)
    if reasons is None:
        return None
    first = next((i for i, (a, b) in enumerate(zip(expected, actual, strict=False)) if a != b),
                 min(len(expected), len(actual)))
    return (f"{what} differ only in {', '.join(reasons)}: expected \"{_window(expected, first)}\", "
            f"got \"{_window(actual, first)}\"")


def response_notes(metric_name: str, expected: str, actual: str) -> list[str]:
    """What a reader cannot see in the two text blocks of a response metric."""
    notes = []
    if not expected.strip():
        notes.append("no reference text: ROUGE-1 is 0, as in ADK" if metric_name == "response_match_score"
                     else "no reference text")
    note = difference_note(expected, actual)
    if note:
        notes.append(note)
    return notes


# --- tool_parameter_match -----------------------------------------------------------------


@dataclass
class TurnNotes:
    turn: int  # 1-based
    score: float | None
    notes: list[str] = field(default_factory=list)
    hidden: int = 0


def _argument_note(name: str, expected: Any, actual: Any) -> str:
    if not isinstance(actual, dict) or name not in (actual.get("args") or {}):
        return f"{name} missing"
    want, got = (expected.get("args") or {}).get(name), actual["args"][name]
    if isinstance(want, str) and isinstance(got, str):
        unseen = difference_note(want, got, what="the values")
        if unseen:
            return f"{name}: {unseen}"
    return f"{name} differs"


def parameter_mismatch_lines(inv: dict[str, Any]) -> tuple[list[str], int]:
    """One line per expected call that lost credit, from the metric's per-turn details."""
    items = inv.get("parameterMismatches")
    items = [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []
    lines = []
    for item in items[:MAX_NOTES]:
        expected = item.get("expected")
        head = f"expected call {item.get('call', '?')} {fmt_call(expected)}"
        if item.get("actual") is None:
            lines.append(f"{head}: no matching call by name, scored 0")
            continue
        unmatched = item.get("unmatchedArgs") if isinstance(item.get("unmatchedArgs"), list) else []
        reasons = "; ".join(_argument_note(str(n), expected, item["actual"]) for n in unmatched)
        lines.append(f"{head}: got {fmt_call(item['actual'])} (call {item.get('actualIndex', '?')}); "
                     + reasons)
    count = inv.get("parameterMismatchCount")
    total = count if isinstance(count, int) and not isinstance(count, bool) else len(items)
    return lines, max(0, total - len(lines))


def trajectory_note(inv: dict[str, Any]) -> str | None:
    """At a trajectory's first divergence, the unseen difference between the two calls."""
    div, start = inv.get("firstDivergence"), inv.get("listedFrom", 0)
    expected, actual = inv.get("expected"), inv.get("actual")
    if not (isinstance(div, int) and isinstance(start, int) and isinstance(expected, list)
            and isinstance(actual, list)) or not (0 <= div - start < min(len(expected), len(actual))):
        return None
    return difference_note(fmt_call(expected[div - start]), fmt_call(actual[div - start]),
                           what=f"the calls at position {div + 1}")


def divergence(inv: dict[str, Any]) -> str | None:
    """A failing trajectory's first divergence in words, e.g. ``expected
    get_weather(city="Oslo") at call 2, got no call`` (or, when the two calls look the same,
    their unseen difference); None when the details do not say where the calls diverge."""
    div, start = inv.get("firstDivergence"), inv.get("listedFrom", 0)
    expected, actual = inv.get("expected"), inv.get("actual")
    if not (isinstance(div, int) and isinstance(start, int) and isinstance(expected, list)
            and isinstance(actual, list)):
        return None
    k = div - start
    want = fmt_call(expected[k]) if 0 <= k < len(expected) else None
    got = fmt_call(actual[k]) if 0 <= k < len(actual) else None
    if want is None and got is None:
        return None
    return trajectory_note(inv) or (
        f"expected {want or 'no further call'} at call {div + 1}, got {got or 'no call'}")


def _listed(inv: dict[str, Any], key: str) -> list[Any]:
    found = inv.get(key)
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def _count(inv: dict[str, Any], key: str) -> int:
    count = inv.get(key + "Count")
    return count if isinstance(count, int) and not isinstance(count, bool) else len(_listed(inv, key))


def unmatched_notes(inv: dict[str, Any]) -> list[str]:
    """A missing call and an extra call of one name that look the same: their unseen
    difference (IN_ORDER / ANY_ORDER details)."""
    notes = []
    extra = _listed(inv, "extra")
    for want in _listed(inv, "missing"):
        for got in extra:
            if got.get("name") == want.get("name"):
                note = difference_note(fmt_call(want), fmt_call(got), what="the missing and the extra call")
                if note:
                    notes.append(note)
                    break
    return notes[:MAX_NOTES]


def unmatched_words(inv: dict[str, Any], limit: int = 2) -> str | None:
    """An IN_ORDER or ANY_ORDER mismatch in words, as that match type counts it:
    ``missing get_forecast(city="Lisbon"); extra find_hotels(city="Lisbon")`` (at most
    ``limit`` calls of each kind named); None when the details do not say."""
    if not (isinstance(inv.get("missing"), list) and isinstance(inv.get("extra"), list)):
        return None
    parts = []
    for key, word in (("missing", "missing"), ("outOfOrder", "out of order"), ("extra", "extra")):
        calls, count = _listed(inv, key), _count(inv, key)
        if count:
            named = ", ".join(fmt_call(c) for c in calls[:limit])
            more = count - min(len(calls), limit)
            parts.append(f"{word} {named}" + (f" and {more} more" if more > 0 else ""))
    return "; ".join(parts + unmatched_notes(inv)[:1]) or None


def failing_turns(invocations: list[dict[str, Any]], threshold: float | None) -> list[tuple[int, dict[str, Any]]]:
    """(1-based turn, details) of the turns scored below the threshold (all scored turns
    below 1.0 when there is no threshold)."""
    bar = threshold if isinstance(threshold, (int, float)) else 1.0
    return [(n, inv) for n, inv in enumerate(invocations, 1)
            if isinstance(inv.get("score"), (int, float)) and inv["score"] < bar]


def parameter_notes(invocations: list[dict[str, Any]], threshold: float | None) -> list[TurnNotes]:
    out = []
    for turn, inv in failing_turns(invocations, threshold):
        lines, hidden = parameter_mismatch_lines(inv)
        out.append(TurnNotes(turn, inv.get("score"), lines, hidden))
    return out


# --- terminal -------------------------------------------------------------------------------

MAX_TERMINAL_LINES = 3  # per metric: the log stays scannable with hundreds of cases


def terminal_notes(metric_name: str, invocations: list[dict[str, Any]],
                   threshold: float | None) -> list[str]:
    """``turn N: note`` for the failing turns of a deterministic metric (none for others)."""
    items: list[str] = []
    for turn, inv in failing_turns(invocations, threshold):
        if "parameterMismatches" in inv:
            items += [f"turn {turn}: {line}" for line in parameter_mismatch_lines(inv)[0]]
        elif "extra" in inv and "missing" in inv:  # IN_ORDER / ANY_ORDER: by what is missing
            note = unmatched_words(inv)
            items += [f"turn {turn}: {note}"] if note else []
        elif "firstDivergence" in inv:
            note = divergence(inv)
            items += [f"turn {turn}: {note}"] if note else []
        elif isinstance(inv.get("expected"), str) and isinstance(inv.get("actual"), str):
            items += [f"turn {turn}: {note}"
                      for note in response_notes(metric_name, inv["expected"], inv["actual"])]
    return items
