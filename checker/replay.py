"""Recorded runs read one case at a time: replay mode whose memory does not grow with the
whole file (issue 14, "one machine first").

A first pass over the file finds where each run is and checks what ``group_replay``
checks (every run belongs to a selected eval file, no run recorded twice, every selected
case has a run), then keeps only the JSON text of the selected cases' runs (a shard keeps
its own share of the file, not the file). A case's runs are decoded and validated (same
messages and JSON paths as reading the whole file) when the case is scored, and dropped
with it. Runs of cases outside the selection (another shard's) are never decoded.
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
from .pipeline import RunKey, group_replay, load_replay, match_recorded
from .validation import decode_at, validate

_FAST = json.JSONDecoder()
Span = tuple[int, str]  # (index in $.runs, the run's JSON text)


class ReplayRuns(Mapping[RunKey, list[RecordedRun]]):
    """(eval set id, eval id) -> its recorded runs, decoded on access."""

    def __init__(self, display: str, spans: dict[RunKey, list[Span]]):
        self._display = display
        self._spans = spans

    def __getitem__(self, key: RunKey) -> list[RecordedRun]:
        runs = []
        for index, text in self._spans[key]:
            data, _ = decode_at(text, 0, self._display, ("runs", index))
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


def _scan(text: str, display: str) -> tuple[dict[str, Any], list[tuple[tuple[str, str, int], slice]]]:
    """Top-level keys other than ``runs``, and every run's (key, where it is in ``text``)."""
    others: dict[str, Any] = {}
    runs: list[tuple[tuple[str, str, int], slice]] = []
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
                    runs.append((found, slice(start, i)))
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


def _group(targets: list[EvalTarget], runs: list[tuple[tuple[str, str, int], slice]], text: str,
           display: str) -> ReplayRuns:
    """group_replay's checks on the index; only the selected cases' runs are kept."""
    found = match_recorded(targets, (key for key, _ in runs), display)
    selected = {(t.eval_set_id, c) for t in targets for c in t.case_ids}
    return ReplayRuns(display, {key: [(i, text[runs[i][1]]) for i in indexes]
                                for key, indexes in found.items() if key in selected})
