"""Loading one eval file - the EvalSet format or either legacy format (legacy_evalfile.py)
- into an EvalSet; with ``outline_only``, a shard's first look that holds no case whole."""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..models.evalset import EvalCase, EvalSet
from .ignored import merge_notes
from .jsonscan import Element, Irregular, read_spans, scan_array_member
from .legacy_evalfile import convert_legacy, legacy_session
from ..safety.surrogates import repair
from .validation import decode_at, parse_json_text, read_json, validate


@dataclass(frozen=True)
class CaseOutline:
    """What choosing a shard, and the agent of several, needs to know of a case, without the case."""

    eval_id: str
    turns: int | None  # len(conversation); None: a conversation_scenario (simulated) case
    app_name: str | None = None  # session_input.app_name (which agent of several it runs on)

    @classmethod
    def of(cls, case: EvalCase) -> CaseOutline:
        given = case.session_input
        return cls(case.eval_id, None if case.conversation is None else len(case.conversation),
                   given.app_name if given is not None and given.app_name else None)


@dataclass
class LoadedEvalSet:
    """An eval set plus where it came from: what reports and annotations point at.

    Loaded with ``outline_only`` (a shard's first look at the suite), ``eval_set`` holds no
    cases yet and ``outlines`` describes them; ``keep_cases`` then loads the shard's share.
    """

    eval_set: EvalSet
    path: Path
    display_path: str  # relative to the repository root, as in results files
    case_lines: dict[str, int] = field(default_factory=dict)
    legacy: bool = False
    # Said to the user, not errors: e.g. what a session dump had that was not read.
    notes: list[str] = field(default_factory=list)
    outlines: list[CaseOutline] | None = None
    # eval id -> (first byte, end byte, index in $.eval_cases) of its JSON text, with ``outlines``
    spans: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    # every case of the file in file order, whichever of them are held
    case_ids: list[str] = field(default_factory=list)
    signature: tuple[int, int] | None = None  # (size, mtime) when outlined

    def __post_init__(self) -> None:
        if not self.case_ids and self.outlines is None:
            self.case_ids = [c.eval_id for c in self.eval_set.eval_cases]

    def case_outlines(self) -> list[CaseOutline]:
        if self.outlines is not None:
            return self.outlines
        return [CaseOutline.of(c) for c in self.eval_set.eval_cases]

    def keep_cases(self, ids: Collection[str]) -> None:
        """Hold only these cases: the others are let go, and with ``outlines`` these are
        read from the file now, each from its bytes (checked when it was outlined)."""
        wanted = set(ids)
        if self.outlines is None:
            self.eval_set.eval_cases[:] = [c for c in self.eval_set.eval_cases if c.eval_id in wanted]
            return
        changed = InputError("the eval file changed while evalcheck was reading it",
                             file=self.display_path, fix="run again")
        chosen = [i for i in self.case_ids if i in wanted]
        try:
            if _signature(self.path) != self.signature:
                raise changed
            cases = []
            texts = read_spans(self.path, (self.spans[i][:2] for i in chosen))
            for eval_id, text in zip(chosen, texts, strict=False):
                where = ("eval_cases", self.spans[eval_id][2])
                # checked when outlined: only a changed file fails here
                data, _ = decode_at(text, 0, self.display_path, where)
                case = validate(EvalCase, data, self.display_path, where)
                if case.eval_id != eval_id:
                    raise changed
                cases.append(case)
        except (InputError, OSError, UnicodeDecodeError):
            raise changed from None
        self.eval_set.eval_cases[:] = cases
        self.outlines, self.spans = None, {}


_JSON_STRING = r'"(?:[^"\\\n]|\\.)*"'


def find_case_lines(text: str, keys: tuple[str, ...], ids: list[str]) -> dict[str, int]:
    """Line (1-based) of each id's occurrence as the value of one of ``keys``, in file order.

    One pass over the text, whatever the number of cases (a search per id from the start
    of the file took minutes for 60,000 cases): every ``"key": "string"`` is found once, its
    value decoded (so any escaping matches), and each id takes the first occurrence after
    the previous id's, else the first anywhere; an id not found points at line 1.
    """
    key_alt = "|".join(re.escape(json.dumps(k)) for k in keys)
    pattern = re.compile(rf"(?:{key_alt})\s*:\s*({_JSON_STRING})")
    wanted = set(ids)
    found: dict[str, list[tuple[int, int]]] = {}  # id -> [(offset, line)] in file order
    line, last = 1, 0
    for match in pattern.finditer(text):
        try:
            value = repair(json.loads(match.group(1)), match.group(1))  # as the ids were read
        except ValueError:
            continue
        if value not in wanted:
            continue
        line += text.count("\n", last, match.start())
        last = match.start()
        found.setdefault(value, []).append((match.start(), line))
    lines: dict[str, int] = {}
    pos = 0
    for case_id in ids:
        places = found.get(case_id)
        if not places:
            lines[case_id] = 1
            continue
        at = bisect.bisect_left(places, (pos, 0))
        offset, lines[case_id] = places[at] if at < len(places) else places[0]
        pos = max(pos, offset + 1)
    return lines


def _foreign(data: Any) -> str | None:
    """Why a JSON document is no ADK eval file at all (not a broken one), or None."""
    if isinstance(data, dict):
        if _single_query(data):
            return None
        if not {"eval_set_id", "evalSetId", "eval_cases", "evalCases"} & data.keys():
            keys = ", ".join(list(data)[:6]) + (", ..." if len(data) > 6 else "")
            return (f"not an ADK eval set: it has neither eval_set_id nor eval_cases "
                    f"(its keys: {keys or 'none'})")
        return None
    if isinstance(data, list):
        if data and not any(isinstance(item, dict) and {"query", "data"} & item.keys()
                            for item in data):
            return ("not an ADK eval file: a legacy file is a list of query turns "
                    '({"query": ...}) or of cases ({"name": ..., "data": [...]})')
        return None
    return f"not an ADK eval file: expected a JSON object (an eval set), got {type(data).__name__}"


def _single_query(data: Any) -> bool:
    """A file of one query turn, not in a list (ADK-TS reads it as a one-turn case)."""
    return isinstance(data, dict) and "query" in data and not (
        {"eval_set_id", "evalSetId", "eval_cases", "evalCases"} & data.keys())


def _check_ids(eval_set: EvalSet, display: str, legacy: bool) -> None:
    """Ids name files, annotations and report lines: a NUL in one is bad input (C
    strings, paths and terminals stop or misbehave at it)."""
    where = [("eval_set_id", eval_set.eval_set_id, "$.eval_set_id")]
    where += [("eval_id", case.eval_id, f"$[{i}].name" if legacy else f"$.eval_cases[{i}].eval_id")
              for i, case in enumerate(eval_set.eval_cases)]
    for what, value, at in where:
        if "\x00" in value:
            if what == "eval_set_id" and legacy:
                raise InputError("the file name contains a NUL character", file=display)
            raise InputError(f"{what} contains a NUL character (\\u0000)", file=display, path=at,
                             fix="remove it")


def _check_rubric_ids(case: EvalCase, i: int, display: str) -> None:
    for k, inv in enumerate(case.conversation or []):
        ids = [r.rubric_id for r in (case.rubrics or [])] + [r.rubric_id for r in (inv.rubrics or [])]
        dup = {x for x in ids if ids.count(x) > 1}
        if dup:
            raise InputError(f"rubric_id '{sorted(dup)[0]}' is used twice for this invocation",
                             file=display, path=f"$.eval_cases[{i}].conversation[{k}].rubrics",
                             fix="rubric ids must be unique across a case and its invocations")


def final_state_note(display: str, cases: list[int]) -> list[str]:
    """The warning for cases that give ``final_session_state`` (at these indices): kept in the
    file, never compared - ADK 2.13 reads the key into its EvalCase and no metric checks it -
    so a run whose agent ends in another state is not caught by it."""
    if not cases:
        return []
    more = f" (and {len(cases) - 1} more like it)" if len(cases) > 1 else ""
    return [f"{display}: $.eval_cases[{cases[0]}].final_session_state{more}: not compared: "
            "like adk eval, evalcheck does not check the session state a run ends with; a "
            "metric on the conversation (e.g. tool_trajectory_avg_score, rubrics) can"]


def _read_text(path: Path, display: str) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError("eval file not found", file=display) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read eval file: {exc}", file=display) from None


def _signature(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


def _outline(path: Path, display: str) -> LoadedEvalSet:
    """An EvalSet file read in chunks, checked case by case and kept as outlines: memory
    for one case at a time, not the suite. Raises (Irregular, InputError, ...) on anything
    but a valid plain eval set, and the whole-file reader then gives the message."""
    signature = _signature(path)
    notes: list[str] = []
    final_states: list[int] = []  # cases giving final_session_state

    def visit(element: Element) -> tuple[CaseOutline, int, tuple[int, int, int]]:
        text, where = element.text(), ("eval_cases", element.index)
        data, _ = decode_at(text, 0, display, where)
        case = validate(EvalCase, data, display, where, notes)
        if "\x00" in case.eval_id:
            raise Irregular
        _check_rubric_ids(case, element.index, display)
        if case.final_session_state:
            final_states.append(element.index)
        line = element.line + find_case_lines(text, ("eval_id", "evalId"), [case.eval_id])[case.eval_id] - 1
        return CaseOutline.of(case), line, (element.byte_start, element.byte_end, element.index)

    others, key, items = scan_array_member(path, ("eval_cases", "evalCases"), visit)
    if key is None or not items:
        raise Irregular  # no cases at all: the whole-file reader says what that means
    eval_set = validate(EvalSet, {**others, key: []}, display, notes=notes)
    ids = [outline.eval_id for outline, _, _ in items]
    if "\x00" in eval_set.eval_set_id or len(set(ids)) != len(ids):
        raise Irregular
    return LoadedEvalSet(eval_set, path, display, {o.eval_id: line for o, line, _ in items},
                         outlines=[o for o, _, _ in items], spans={o.eval_id: span for o, _, span in items},
                         case_ids=ids, signature=signature,
                         notes=[*merge_notes(notes), *final_state_note(display, final_states)])


def load_eval_file(path: Path, display: str | None = None,
                   initial_session_file: Path | None = None,
                   confine: Path | None = None, outline_only: bool = False) -> LoadedEvalSet:
    """One eval file. ``initial_session_file`` is for a legacy file (an EvalSet file carries
    ``session_input`` in each case): ADK's ``initial_session_file``. ``confine``: see
    checker/safety/confine.py (an initial session file beside it must not lead out of it).

    ``outline_only``: an EvalSet file is checked exactly as otherwise, but its cases are
    kept as outlines (``LoadedEvalSet.keep_cases`` loads the ones wanted)."""
    display = display or str(path)
    if outline_only:
        try:
            return _outline(path, display)
        except (Irregular, InputError, json.JSONDecodeError, RecursionError, OSError, UnicodeDecodeError):
            pass  # read whole below: the same file, the same message
    text = _read_text(path, display)
    data = parse_json_text(text, display)
    foreign = _foreign(data)
    if foreign:
        raise InputError(foreign, file=display, path="$",
                         fix="evalcheck reads every *.evalset.json and *.test.json file: rename "
                             "this one, or pass only your eval files or folders")

    if isinstance(data, list) or _single_query(data):
        session = legacy_session(path, display, initial_session_file, confine)
        notes = list(session.notes) if session else []
        eval_set = convert_legacy(data, path, display, session.session if session else None, notes)
        _check_ids(eval_set, display, legacy=True)
        if isinstance(data, list) and all(isinstance(item, dict) and "data" in item for item in data):
            lines = find_case_lines(text, ("name",), [c.eval_id for c in eval_set.eval_cases])
        else:
            lines = {eval_set.eval_cases[0].eval_id: 1}
        return LoadedEvalSet(eval_set, path, display, lines, legacy=True, notes=notes)

    notes = []
    eval_set = validate(EvalSet, data, display, notes=notes)
    _check_ids(eval_set, display, legacy=False)
    if not eval_set.eval_cases:  # ADK accepts it (Google ships one): nothing to run, say so
        return LoadedEvalSet(eval_set, path, display, notes=[
            *notes, f"{display}: $.eval_cases: the eval set has no eval cases; skipped"])
    seen: dict[str, int] = {}
    for i, case in enumerate(eval_set.eval_cases):
        if case.eval_id in seen:
            raise InputError(f"duplicate eval_id '{case.eval_id}' (also at $.eval_cases[{seen[case.eval_id]}])",
                             file=display, path=f"$.eval_cases[{i}].eval_id",
                             fix="give every eval case a unique eval_id")
        seen[case.eval_id] = i
        _check_rubric_ids(case, i, display)
    notes += final_state_note(display, [i for i, c in enumerate(eval_set.eval_cases) if c.final_session_state])
    lines = find_case_lines(text, ("eval_id", "evalId"), [c.eval_id for c in eval_set.eval_cases])
    return LoadedEvalSet(eval_set, path, display, lines, notes=notes)


def migrate(old: Path, new: Path, initial_session_file: Path | None = None,
            notes: list[str] | None = None) -> EvalSet:
    """Convert a legacy file to the EvalSet format and write it (snake_case, as ADK writes).

    Without ``initial_session_file``, an initial session file beside the legacy file is used,
    as when the legacy file is evaluated, so the migrated file runs the same way. What the
    user should know (a session dump's ignored keys) is appended to ``notes``.
    """
    data = read_json(old)
    if not isinstance(data, list) and not _single_query(data):
        raise InputError("not a legacy eval file: expected a JSON list of query turns or cases",
                         file=str(old), path="$", fix="it may already be in the EvalSet format")
    foreign = _foreign(data)
    if foreign:
        raise InputError(foreign, file=str(old), path="$")
    session = legacy_session(old, str(old), initial_session_file)
    said = list(session.notes) if session else []
    eval_set = convert_legacy(data, old, str(old), session.session if session else None, said)
    if notes is not None:
        notes.extend(said)
    try:
        new.parent.mkdir(parents=True, exist_ok=True)
        new.write_text(eval_set.model_dump_json(indent=2, by_alias=False, exclude_none=True,
                                                exclude_defaults=True) + "\n", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the migrated file: {exc.strerror or exc}", file=str(new)) from None
    return eval_set
