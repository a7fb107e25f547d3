"""Recorded runs read one case at a time: replay mode whose memory does not grow with the
whole file (issue 14, "one machine first").

A first pass reads the file in chunks (checker/inputs/jsonscan.py), notes each run's key, keeps
the JSON text of the selected cases' runs only (a shard keeps its own share of the file,
not the file), and checks what ``group_replay`` checks (every run belongs to a selected
eval file, no run recorded twice, every selected case has a run). A case's runs are
decoded and validated (same messages and JSON paths as reading the whole file) when the
case is scored, and dropped with it. Runs of other shards' cases are never validated.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .discover import EvalTarget
from ..errors import InputError
from .jsonscan import Element, Irregular, scan_array_member
from ..models.records import RecordedRun, RecordedRuns
from ..models.setkey import RunKey, set_key
from ..models.usage import usage_left_out
from ..safety.output import clean, say
from .validation import decode_at, read_json, validate

if TYPE_CHECKING:
    from ..models.verdict_rule import VerdictRule

def load_replay(path: Path) -> RecordedRuns:
    display = str(path)
    data = read_json(path, display)
    if isinstance(data, dict) and data.get("version") not in (1, None):
        raise InputError(f"unsupported replay file version {data.get('version')!r}", file=display,
                         path="$.version", fix="this evalcheck reads version 1")
    return validate(RecordedRuns, data, display)


class RecordedKey(NamedTuple):
    """Which run a recorded run is, as the file says."""

    eval_set_id: str
    eval_set_path: str | None  # evalSetPath, written when another eval file has the same id
    eval_id: str
    run: int  # its number, from 1


def match_recorded(targets: list[EvalTarget], runs: Iterable[RecordedKey],
                   display: str) -> dict[RunKey, list[int]]:
    """Recorded runs, in file order, matched to the cases: where in ``$.runs`` each case's
    runs are. A run of an unknown case, a run recorded twice, or a selected case without a
    run is an InputError."""
    existing = {(t.key, c) for t in targets for c in t.loaded.case_ids}
    ambiguous: dict[str, list[str]] = {t.eval_set_id: [] for t in targets if t.key != t.eval_set_id}
    for t in targets:
        if t.eval_set_id in ambiguous:
            ambiguous[t.eval_set_id].append(t.loaded.display_path)
    found: dict[RunKey, list[int]] = {}
    numbers: dict[RunKey, set[int]] = {}
    for i, recorded in enumerate(runs):
        set_id, where, eval_id, number = recorded.eval_set_id, recorded.eval_set_path, recorded.eval_id, recorded.run
        key = (set_key(set_id, where, set(ambiguous)), eval_id)
        if key not in existing and set_id in ambiguous and where is None:
            raise InputError(f"run for eval case '{eval_id}' of eval set '{set_id}', an id used by "
                             f"{' and '.join(ambiguous[set_id])}", file=display, path=f"$.runs[{i}]",
                             fix="add \"evalSetPath\" with the eval file's path, as evalcheck "
                                 "records it (--inference-out)")
        if key not in existing:
            raise InputError(f"run for eval case '{eval_id}' of eval set '{set_id}'"
                             + (f" ({where})" if where else "")
                             + ", which is not in the evaluated eval files", file=display,
                             path=f"$.runs[{i}]", fix="check the ids or the PATH arguments")
        if number in numbers.setdefault(key, set()):
            raise InputError(f"run {number} of '{eval_id}' is recorded twice", file=display,
                             path=f"$.runs[{i}].run")
        numbers[key].add(number)
        found.setdefault(key, []).append(i)
    for target in targets:
        for case_id in target.case_ids:
            if (target.key, case_id) not in found:
                raise InputError(f"no recorded run for eval case '{case_id}' of eval set "
                                 f"'{target.eval_set_id}' ({target.loaded.display_path})",
                                 file=display, path="$.runs",
                                 fix="record the case, or select fewer cases with PATH:case_id")
    return found


def group_replay(targets: list[EvalTarget], records: RecordedRuns, display: str) -> dict[RunKey, list[RecordedRun]]:
    """Match recorded runs to the selected cases; a missing or unknown case is an InputError."""
    found = match_recorded(targets, (RecordedKey(r.eval_set_id, r.eval_set_path, r.eval_id, r.run)
                                     for r in records.runs), display)
    return {key: [records.runs[i] for i in indexes] for key, indexes in found.items()}


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
            runs.append(checked_usage(validate(RecordedRun, data, self._display, ("runs", index))))
        return runs

    def __iter__(self) -> Iterator[RunKey]:
        return iter(self._spans)

    def __len__(self) -> int:
        return len(self._spans)

    def run_counts(self) -> Iterator[int]:
        return (len(spans) for spans in self._spans.values())


def checked_usage(run: RecordedRun) -> RecordedRun:
    """A recorded run whose usage counts are not counts loses its usage, with a warning
    (as a live run does): the file is outside input."""
    if (left_out := usage_left_out(run)) is not None:
        say(f"evalcheck: warning: {clean(left_out, 300)}", err=True)
    return run


def _key_of(data: Any) -> RecordedKey | None:
    if not isinstance(data, dict):
        return None
    set_id = data.get("evalSetId", data.get("eval_set_id"))
    where = data.get("evalSetPath", data.get("eval_set_path"))
    eval_id = data.get("evalId", data.get("eval_id"))
    run = data.get("run")
    if isinstance(set_id, str) and isinstance(eval_id, str) and isinstance(run, int) \
            and not isinstance(run, bool) and run >= 1 and (where is None or isinstance(where, str)):
        return RecordedKey(set_id, where, eval_id, run)
    return None


Scanned = tuple[RecordedKey, str | None]  # a run's key, and its JSON text if its case is selected


def _scan(path: Path, display: str, selected: set[RunKey],
          ambiguous: set[str]) -> tuple[dict[str, Any], list[Scanned]]:
    """Top-level keys other than ``runs``, and every run's key with its JSON text when its
    case is selected (the file is read in chunks: see checker/inputs/jsonscan.py)."""

    def visit(element: Element) -> Scanned:
        found = _key_of(element.value)
        if found is None:  # the model says what is wrong with this run
            validate(RecordedRun, element.value, display, ("runs", element.index))
            raise Irregular
        key = (set_key(found.eval_set_id, found.eval_set_path, ambiguous), found.eval_id)
        return found, element.text() if key in selected else None

    others, _, runs = scan_array_member(path, ("runs",), visit)
    return others, runs


def index_replay(path: Path, targets: list[EvalTarget]) -> Mapping[RunKey, list[RecordedRun]]:
    """The selected cases' recorded runs in ``path``, decoded case by case when scored.
    Bad input is the InputError reading the whole file would give."""
    display = str(path)
    selected = {(t.key, c) for t in targets for c in t.case_ids}
    ambiguous = {t.eval_set_id for t in targets if t.key != t.eval_set_id}
    try:
        others, runs = _scan(path, display, selected, ambiguous)
    except (Irregular, json.JSONDecodeError, RecursionError, OSError, UnicodeDecodeError):
        # Unreadable or irregular: the whole-file reader raises the precise error (or reads it).
        return {key: [checked_usage(run) for run in runs]
                for key, runs in group_replay(targets, load_replay(path), display).items()}
    version = others.get("version")
    if version not in (1, None):
        raise InputError(f"unsupported replay file version {version!r}", file=display,
                         path="$.version", fix="this evalcheck reads version 1")
    validate(RecordedRuns, {**others, "runs": []}, display)
    # group_replay's checks on the index; only the selected cases' runs are kept.
    found = match_recorded(targets, (key for key, _ in runs), display)
    return ReplayRuns(display, {key: [(i, runs[i][1] or "") for i in indexes]
                                for key, indexes in found.items() if key in selected})


def check_replayed_counts(replay: Path, counts: Iterable[int], rule: VerdictRule) -> None:
    """In replay the runs are what was recorded: a rule no case has the runs to pass is bad
    input (as --num-runs below K is live), not a suite of failures."""
    from ..models.verdict_rule import runs_needed
    from ..safety.output import say

    needed = runs_needed(rule)
    counts = list(counts)
    if needed > 1 and counts and max(counts) < needed:
        raise InputError(f"--verdict {rule} needs at least {needed} runs, but the replay file "
                         f"holds at most {max(counts)} for a case", file=str(replay),
                         fix=f"record at least {needed} runs a case, or use a rule they can meet "
                             f"(e.g. k-of-n:{max(counts)})")
    short = sum(1 for n in counts if n < needed)
    if short:
        say(f"evalcheck: warning: {short} case(s) have fewer than {needed} recorded runs and "
            f"cannot pass --verdict {rule}", err=True)
