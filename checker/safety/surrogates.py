"""Lone UTF-16 surrogates out of JSON from outside, where it is read.

JSON may escape one half of a surrogate pair alone (``"\\ud800"``), and Python's json
decodes that to a str with no UTF-8 form. Nothing fails until a report is written, and
then the whole run fails with no results, markdown or JUnit file at all. So every reader
of untrusted JSON (agent replies, API server answers, eval, replay and results files)
passes what it decoded through ``repair``: each lone surrogate becomes U+FFFD, as a UTF-8
decoder does with a bad byte. A correctly paired escape (``"\\ud83d\\ude00"``) was decoded
into its one character and is not touched.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

REPLACEMENT = "\ufffd"
# A surrogate escape, \uD800-\uDFFF in either case: only JSON text with one can decode to a
# lone surrogate. A str here was decoded strictly or with "replace" and holds no raw
# surrogate; json.loads decodes bytes with "surrogatepass", so in UTF-8 bytes a raw one
# (ED A0-BF ..) is looked for too. Separate patterns: each starts with a literal the regex
# engine skips to, about 20 times faster than one alternation on large text.
_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_RAW_UTF8 = re.compile(rb"\xed[\xa0-\xbf]")
_LONE = re.compile("[\ud800-\udfff]")


def repair(value: Any, text: str | bytes, start: int = 0, end: int = sys.maxsize) -> Any:
    """``value``, decoded from ``text[start:end]``, with every lone surrogate replaced.

    The value is walked only when the text has a surrogate escape (a correct pair too):
    most text costs one regex search, and a large file is not walked for nothing.
    """
    return replace_lone(value) if _suspect(text, start, end) else value


def _suspect(text: str | bytes, start: int, end: int) -> bool:
    if isinstance(text, str):
        return _ESCAPE.search(text, start, end) is not None
    if json.detect_encoding(text) not in ("utf-8", "utf-8-sig"):
        return True  # UTF-16 or UTF-32 JSON: rare enough to walk without looking
    return any(pattern.search(text, start, end) for pattern in (_ESCAPE_BYTES, _RAW_UTF8))


def replace_lone(value: Any) -> Any:
    """A decoded JSON value with lone surrogates replaced in every string, keys included.

    Objects and arrays are changed in place, so their type (a dict subclass that marks a
    duplicate key) is kept; a string value is returned anew. Iterative: no recursion,
    however deep the value.
    """
    if isinstance(value, str):
        return _LONE.sub(REPLACEMENT, value)
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            _repair_keys(node)
            items: Any = list(node.items())
        elif isinstance(node, list):
            items = enumerate(node)
        else:
            continue
        for key, item in items:
            if isinstance(item, str):
                node[key] = _LONE.sub(REPLACEMENT, item)
            elif isinstance(item, (dict, list)):
                stack.append(item)
    return value


def _repair_keys(node: dict) -> None:
    """Keys with a lone surrogate replaced, in their order (two that become equal: the
    later one wins, as json does with a repeated key)."""
    if any(_LONE.search(key) for key in node if isinstance(key, str)):
        items = [(_LONE.sub(REPLACEMENT, k) if isinstance(k, str) else k, v) for k, v in node.items()]
        node.clear()
        node.update(items)
