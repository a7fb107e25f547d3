"""Reading one large JSON file an array element at a time: the top-level object's members,
and each element of its one big array handed to a visitor as it is reached. The file is
read in chunks, so neither its text nor a decoded copy of the array is ever held whole
(recorded runs, a shard's first look at the eval sets).

Only the plain shape is scanned: a JSON object whose keys are unique and whose array
member is an array. Anything else raises Irregular (or the JSONDecodeError,
RecursionError or UnicodeDecodeError met), and the caller reads the file the ordinary
way, whose error message is then the one the user sees.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Iterable, Iterator
from json.decoder import WHITESPACE  # type: ignore[attr-defined]
from pathlib import Path
from typing import IO, Any, TypeVar

from ..safety.surrogates import repair

T = TypeVar("T")
CHUNK = 1 << 20  # characters read at a time
_FAST = json.JSONDecoder()
_BOM = b"\xef\xbb\xbf"
_NUMBER_TAIL = re.compile(r"[0-9.eE+\-]*")


class Irregular(Exception):
    """Not the shape scanned: read the file whole for the precise message."""


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise Irregular  # a repeated key: the whole-file reader names it
    return out


_UNIQUE = json.JSONDecoder(object_pairs_hook=_unique)


class Element:
    """One element of the array: decoded (without duplicate-key or depth checks), with
    its index, its text, its first line and where its bytes are in the file."""

    __slots__ = ("value", "index", "line", "byte_start", "byte_end", "_stream", "_start", "_end")

    def __init__(self, value: Any, index: int, stream: _Stream, start: int, end: int):
        self.value, self.index = value, index
        self._stream, self._start, self._end = stream, start, end
        self.line, self.byte_start = stream.position(start)
        _, self.byte_end = stream.position(end)

    def text(self) -> str:
        return self._stream.buf[self._start:self._end]


class _Stream:
    """A UTF-8 text file in chunks, with the line and byte offset of any position reached."""

    def __init__(self, file: IO[str], first_byte: int, chunk: int):
        self.file, self.chunk = file, chunk
        self.buf, self.pos, self.eof = "", 0, False
        # buf[:counted] is counted: it ends on line ``lines`` at byte offset ``bytes``
        self.counted, self.lines, self.bytes = 0, 1, first_byte

    def position(self, at: int) -> tuple[int, int]:
        """(line, byte offset) of ``buf[at]``; ``at`` never goes back."""
        part = self.buf[self.counted:at]
        self.lines += part.count("\n")
        self.bytes += len(part) if part.isascii() else len(part.encode("utf-8"))
        self.counted = at
        return self.lines, self.bytes

    def fill(self) -> bool:
        """Read more (at least as much again as is pending: a long value is not decoded
        over and over); False at the end of the file."""
        if self.eof:
            return False
        more = self.file.read(max(self.chunk, len(self.buf) - self.pos))
        if not more:
            self.eof = True
            return False
        self.position(self.pos)
        self.buf, self.counted, self.pos = self.buf[self.pos:] + more, 0, 0
        return True

    def peek(self) -> str:
        while True:
            self.pos = WHITESPACE.match(self.buf, self.pos).end()
            if self.pos < len(self.buf) or not self.fill():
                return self.buf[self.pos:self.pos + 1]

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise Irregular
        self.pos += 1

    def value(self, decoder: json.JSONDecoder) -> tuple[Any, int, int]:
        """The next JSON value (lone surrogates replaced, as the whole-file reader does) and
        its (start, end) in ``buf`` (valid until the next read)."""
        self.peek()
        while True:
            try:
                value, end = decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError:
                if self.fill():
                    continue
                raise
            tail = _NUMBER_TAIL.match(self.buf, end)
            assert tail is not None  # the pattern matches the empty string too
            if isinstance(value, (int, float)) and tail.end() == len(self.buf) \
                    and self.fill():
                continue  # a number cut at the chunk's end ("0." of "0.5") goes on
            start, self.pos = self.pos, end
            return repair(value, self.buf, start, end), start, end


def scan_array_member(path: Path, names: Collection[str], visit: Callable[[Element], T],
                      chunk: int = CHUNK) -> tuple[dict[str, Any], str | None, list[T]]:
    """The top-level members not in ``names`` (decoded, keys unique), the name under which
    the array was found (None: no such member), and ``visit(element)`` of each element.

    Raises Irregular for another shape (a top-level non-object, a repeated key, two of
    ``names``, a non-array under one of them, text after the object), and lets a
    JSONDecodeError, RecursionError, UnicodeDecodeError or OSError through.
    """
    with path.open("rb") as raw:
        first_byte = len(_BOM) if raw.read(len(_BOM)) == _BOM else 0
    # newline="": no newline translation, so that byte offsets stay true
    with path.open(encoding="utf-8-sig", newline="") as file:
        return _scan(_Stream(file, first_byte, chunk), names, visit)


def _each(stream: _Stream, close: str, read_one: Callable[[], None]) -> None:
    """Comma-separated items up to ``close`` (the opening bracket already read)."""
    if stream.peek() != close:
        read_one()
        while stream.peek() != close:
            stream.expect(",")
            read_one()
    stream.pos += 1


def _scan(stream: _Stream, names: Collection[str],
          visit: Callable[[Element], T]) -> tuple[dict[str, Any], str | None, list[T]]:
    others: dict[str, Any] = {}
    found: list[str] = []  # the array's name, once met
    items: list[T] = []

    def element() -> None:
        value, start, end = stream.value(_FAST)
        items.append(visit(Element(value, len(items), stream, start, end)))

    def member() -> None:
        key, _, _ = stream.value(_FAST)
        if not isinstance(key, str) or key in others or key in found:
            raise Irregular
        stream.expect(":")
        if key not in names:
            others[key], _, _ = stream.value(_UNIQUE)
            return
        if found:
            raise Irregular
        found.append(key)
        stream.expect("[")
        _each(stream, "]", element)

    stream.expect("{")
    _each(stream, "}", member)
    if stream.peek() != "":
        raise Irregular  # text after the object
    return others, found[0] if found else None, items


def read_spans(path: Path, spans: Iterable[tuple[int, int]]) -> Iterator[str]:
    """The texts of elements found by scan_array_member, from their byte offsets."""
    with path.open("rb") as file:
        for start, end in spans:
            file.seek(start)
            yield file.read(end - start).decode("utf-8")
