"""Recorded runs read one case at a time: replay mode whose memory does not grow with the
whole file (issue 14, "one machine first").

A first pass over the file finds where each run is and checks what ``group_replay``
checks (every run belongs to a selected eval file, no run recorded twice, every selected
case has a run), holding only the file's text and, per case, the offsets of its runs. A
case's runs are decoded and validated (same messages and JSON paths as reading the whole
file) when the case is scored, and dropped with it. Runs of cases outside the selection
(another shard's) are never decoded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from json.decoder import WHITESPACE  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any

from .discover import EvalTarget
from .errors import InputError
from .models.records import RecordedRun, RecordedRuns
from .pipeline import RunKey, group_replay, load_replay
from .validation import decode_at, validate

_FAST = json.JSONDecoder()
Span = tuple[int, int]  # (index in $.runs, offset of the run's JSON object)


class ReplayRuns(Mapping[RunKey, list[RecordedRun]]):
    """(eval set id, eval id) -> its recorded runs, decoded on access."""

    def __init__(self, text: str, display: str, spans: dict[RunKey, list[Span]]):
        self._text = text
        self._display = display
        self._spans = spans

    def __getitem__(self, key: RunKey) -> list[RecordedRun]:
        runs = []
        for index, start in self._spans[key]:
            data, _ = decode_at(self._text, start, self._display, ("runs", index))
            runs.append(validate(RecordedRun, data, self._display, ("runs", index)))
        return runs

    def __iter__(self) -> Iterator[RunKey]:
        return iter(self._spans)

    def __len__(self) -> int:
        return len(self._spans)

    def run_counts(self) -> Iterator[int]:
        return (len(spans) for spans in self._spans.values())


def _skip(text: str, i: int) -> int:
    return WHITESPACE.match(text, i).end()


def _expect(text: str, i: int, char: str) -> int:
    if text[i:i + 1] != char:
        # Not the shape we scan: the full reader says exactly what is wrong.
        raise _Irregular
    return i + 1


class _Irregular(Exception):
    """Not a plain JSON object with a runs array: read it the ordinary way for the message."""


def _key_of(data: Any) -> tuple[str, str, int] | None:
    if not isinstance(data, dict):
        return None
    set_id = data.get("evalSetId", data.get("eval_set_id"))
    eval_id = data.get("evalId", data.get("eval_id"))
    run = data.get("run")
    if isinstance(set_id, str) and isinstance(eval_id, str) and isinstance(run, int) \
            and not isinstance(run, bool) and run >= 1:
        return set_id, eval_id, run
    return None


def _scan(text: str, display: str) -> tuple[dict[str, Any], list[tuple[tuple[str, str, int], int]]]:
    """Top-level keys other than ``runs``, and every run's (key, offset)."""
    others: dict[str, Any] = {}
    runs: list[tuple[tuple[str, str, int], int]] = []
    i = _expect(text, _skip(text, 0), "{")
    seen: set[str] = set()
    i = _skip(text, i)
    if text[i:i + 1] == "}":
        return others, runs
    while True:
        key, i = _FAST.raw_decode(text, i)
        if not isinstance(key, str) or key in seen:
            raise _Irregular
        seen.add(key)
        i = _expect(text, _skip(text, i), ":")
        i = _skip(text, i)
        if key == "runs" and text[i:i + 1] == "[":
            i = _skip(text, i + 1)
            if text[i:i + 1] == "]":
                i += 1
            else:
                while True:
                    start = i
                    data, i = _FAST.raw_decode(text, i)
                    found = _key_of(data)
                    if found is None:  # the model says what is wrong with this run
                        validate(RecordedRun, data, display, ("runs", len(runs)))
                        raise _Irregular
                    runs.append((found, start))
                    i = _skip(text, i)
                    if text[i:i + 1] == "]":
                        i += 1
                        break
                    i = _skip(text, _expect(text, i, ","))
        else:
            others[key], i = _FAST.raw_decode(text, i)
        i = _skip(text, i)
        if text[i:i + 1] == "}":
            break
        i = _skip(text, _expect(text, i, ","))
    if _skip(text, i + 1) != len(text):
        raise _Irregular
    return others, runs


def index_replay(path: Path, targets: list[EvalTarget]) -> Mapping[RunKey, list[RecordedRun]]:
    """The selected cases' recorded runs in ``path``, decoded case by case when scored.
    Bad input is the InputError reading the whole file would give."""
    display = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        text = None
    if text is not None:
        try:
            others, runs = _scan(text, display)
        except (_Irregular, json.JSONDecodeError, RecursionError):
            pass
        else:
            version = others.get("version")
            if version not in (1, None):
                raise InputError(f"unsupported replay file version {version!r}", file=display,
                                 path="$.version", fix="this evalcheck reads version 1")
            validate(RecordedRuns, {**others, "runs": []}, display)
            return _group(targets, runs, text, display)
    # Unreadable or irregular: the whole-file reader raises the precise error (or reads it).
    return group_replay(targets, load_replay(path), display)


def _group(targets: list[EvalTarget], runs: list[tuple[tuple[str, str, int], int]], text: str,
           display: str) -> ReplayRuns:
    """group_replay's checks on the index; only selected cases are kept."""
    existing = {(t.eval_set_id, c.eval_id) for t in targets for c in t.loaded.eval_set.eval_cases}
    selected = {(t.eval_set_id, c) for t in targets for c in t.case_ids}
    numbers: dict[RunKey, set[int]] = {}
    spans: dict[RunKey, list[Span]] = {}
    for index, ((set_id, eval_id, number), start) in enumerate(runs):
        key = (set_id, eval_id)
        if key not in existing:
            raise InputError(f"run for eval case '{eval_id}' of eval set '{set_id}', "
                             "which is not in the evaluated eval files", file=display,
                             path=f"$.runs[{index}]", fix="check the ids or the PATH arguments")
        if number in numbers.setdefault(key, set()):
            raise InputError(f"run {number} of '{eval_id}' is recorded twice", file=display,
                             path=f"$.runs[{index}].run")
        numbers[key].add(number)
        if key in selected:
            spans.setdefault(key, []).append((index, start))
    for target in targets:
        for case_id in target.case_ids:
            if (target.eval_set_id, case_id) not in spans:
                raise InputError(f"no recorded run for eval case '{case_id}' of eval set "
                                 f"'{target.eval_set_id}' ({target.loaded.display_path})",
                                 file=display, path="$.runs",
                                 fix="record the case, or select fewer cases with PATH:case_id")
    return ReplayRuns(text, display, spans)
