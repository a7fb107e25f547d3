"""Turning JSON and pydantic failures into one-line InputErrors with file and JSON path."""

from __future__ import annotations

import json
import re
from pathlib import Path
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel, to_snake

from ..errors import InputError, did_you_mean, json_path
from ..safety.limits import MAX_JSON_DEPTH, JsonTooDeep, count_keys
from .ignored import drop_ignored
from ..safety.surrogates import repair

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

M = TypeVar("M", bound=BaseModel)


class _DuplicateKeys(dict):
    """A JSON object in which ``duplicate`` was written more than once."""

    duplicate: str


def _find_duplicate(value: Any, loc: tuple[Any, ...] = ()) -> tuple[tuple[Any, ...], str] | None:
    """JSON location and key of the first object (in document order) with a repeated key."""
    if isinstance(value, _DuplicateKeys):
        return loc, value.duplicate
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _find_duplicate(item, (*loc, key))
        if found:
            return found
    return None


def read_json(path: Path, display: str | None = None) -> Any:
    """Read a JSON file; bad JSON or a duplicate key is an InputError naming the line."""
    display = display or str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError("file not found", file=display) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read file: {exc}", file=display) from None
    return parse_json_text(text, display)


class _DuplicateCheck:
    """An ``object_pairs_hook`` that marks objects with a repeated key (json keeps the last)."""

    def __init__(self) -> None:
        self.repeated = False

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        if len(out) == len(pairs):
            return out
        marked = _DuplicateKeys(out)
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                marked.duplicate = key
                break
            seen.add(key)
        self.repeated = True
        return marked

    def raise_found(self, data: Any, display: str, prefix: tuple[Any, ...] = ()) -> None:
        if self.repeated:
            found = _find_duplicate(data)
            assert found is not None
            loc, key = found
            raise InputError(f"duplicate key '{key}'", file=display, path=json_path((*prefix, *loc)),
                             fix="keep only one of them")


def _invalid_json(exc: json.JSONDecodeError, display: str) -> InputError:
    """Malformed JSON has no JSON path yet: the line, the column and the text there say where."""
    line = exc.doc.splitlines()[exc.lineno - 1] if exc.doc and exc.lineno >= 1 else ""
    start = max(0, exc.colno - 41)
    near = line[start:exc.colno + 40].strip()
    fix = f"correct the JSON syntax near {near[:80]!r}" if near else "correct the JSON syntax there"
    return InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", file=display, line=exc.lineno, fix=fix)


def parse_json_text(text: str, display: str) -> Any:
    if not text.strip():
        raise InputError("file is empty", file=display, fix="write a JSON document into it")
    return _decode(text, None, display, ())[0]


def decode_at(text: str, start: int, display: str, prefix: tuple[Any, ...] = ()) -> tuple[Any, int]:
    """The JSON value starting at ``text[start]`` and where it ends, with parse_json_text's
    checks (JSON paths under ``prefix``): for reading a large file one piece at a time."""
    return _decode(text, start, display, prefix)


_PLAIN = json.JSONDecoder()
# A key ends with its closing quote, JSON whitespace (rarely any) and the colon. A string
# can hold the same characters (an escaped quote, as in embedded JSON), so there are never
# fewer of these than keys written.
_SPACED_KEY_END = re.compile(r'"[ \t\n\r]+:')


def _key_ends(text: str, start: int, end: int) -> int:
    return text.count('":', start, end) + len(_SPACED_KEY_END.findall(text, start, end))


def _decode(text: str, start: int | None, display: str, prefix: tuple[Any, ...]) -> tuple[Any, int]:
    """The whole of ``text`` (``start`` None) or the value at ``start``, and its end; bad JSON,
    nesting deeper than MAX_JSON_DEPTH or a duplicate key is an InputError. Decoded without a
    hook (C speed); decoded again with the duplicate check only when the text has more key
    ends than the value has keys: a key written twice, or a string that looks like one."""
    check = None
    try:
        try:
            if start is None:
                data, end = json.loads(text), len(text)
            else:
                data, end = _PLAIN.raw_decode(text, start)
            try:
                keys = count_keys(data, MAX_JSON_DEPTH - len(prefix))
            except JsonTooDeep as exc:
                raise JsonTooDeep((*prefix, *exc.loc)) from None
            if _key_ends(text, start or 0, end) != keys:
                check = _DuplicateCheck()
                if start is None:
                    data = json.loads(text, object_pairs_hook=check)
                else:
                    data, end = json.JSONDecoder(object_pairs_hook=check).raw_decode(text, start)
        except RecursionError:
            raise JsonTooDeep() from None
        data = repair(data, text, start or 0, end)
    except json.JSONDecodeError as exc:
        raise _invalid_json(exc, display) from None
    except JsonTooDeep as exc:
        raise _too_deep(exc, display) from None
    if check is not None:
        check.raise_found(data, display, prefix)
    return data, end


def _too_deep(exc: JsonTooDeep, display: str) -> InputError:
    return InputError(str(exc), file=display, path=json_path(exc.loc) if exc.loc else None,
                      fix="flatten it: ADK's own files nest fewer than 20 levels")


def _models_in(annotation: Any) -> list[Any]:
    """The model classes and dict/list annotations an annotation can hold, unwrapped."""
    out: list[Any] = []
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = getattr(annotation, "__origin__", None)
    if origin in (dict, list, tuple):
        return [annotation]
    for arg in getattr(annotation, "__args__", ()) or ():
        out.extend(_models_in(arg))
    return out


def _field(model: type[BaseModel], key: str) -> Any:
    for name, field in model.model_fields.items():
        if key in (name, field.alias):
            return field
    return None


def keys_at(model: type[BaseModel], loc: Sequence[Any]) -> set[str]:
    """The keys valid in the object at ``loc`` (a JSON location inside a ``model`` document):
    field names and aliases of the model (or models, for a union) found there."""
    current: list[Any] = [model]
    for part in loc:
        nxt: list[Any] = []
        for ann in current:
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                field = _field(ann, part) if isinstance(part, str) else None
                if field is not None:
                    nxt.extend(_models_in(field.annotation))
            else:
                origin = getattr(ann, "__origin__", None)
                args: tuple[Any, ...] = getattr(ann, "__args__", ())
                if origin is dict and isinstance(part, str) and len(args) == 2:
                    nxt.extend(_models_in(args[1]))
                elif origin in (list, tuple) and isinstance(part, int) and args:
                    if origin is tuple and len(args) > 1 and args[-1] is not Ellipsis:
                        nxt.extend(_models_in(args[part]) if part < len(args) else [])
                    else:
                        nxt.extend(_models_in(args[0]))
        current = nxt
        if not current:
            return set()
    keys: set[str] = set()
    for ann in current:
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            for name, field in ann.model_fields.items():
                keys.add(name)
                if field.alias:
                    keys.add(field.alias)
    return keys


def _describe(err: Any, model: type[BaseModel], prefix: tuple[Any, ...]) -> tuple[str, str, str | None]:
    """(json path, message, fix) of one pydantic error."""
    inner = tuple(p for p in err["loc"] if not _is_union_tag(p))
    loc = prefix + inner
    kind = err["type"]
    if kind == "extra_forbidden":
        key = str(loc[-1])
        # Hints only from the keys valid right there, and never the refused key itself.
        hint = did_you_mean(key, keys_at(model, inner[:-1]) - {key})
        return json_path(loc[:-1]), f"unknown key '{key}'", hint or "remove it or fix its spelling"
    if kind == "missing":
        got = err.get("input")
        key = _spelt_like_siblings(str(loc[-1]), got, camel_files=_writes_camel(model))
        misspelt = _misspelt(model, inner[:-1], got, [key])
        return json_path(loc[:-1]), f"missing required key '{key}'", misspelt or f"add '{key}'"
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    got = err.get("input")
    if kind not in ("value_error", "assertion_error") and not isinstance(got, (dict, list)):
        msg = f"{msg}, got {json.dumps(got)[:60]}"
    return json_path(loc), msg, _misspelt(model, inner, got)


def _misspelt(model: type[BaseModel], inner: tuple[Any, ...], got: Any,
              meant: list[str] | None = None) -> str | None:
    """An object's key that is no field there (ADK ignores it) but is spelt like one of
    ``meant`` (default: the fields valid there): the likely cause of a problem."""
    if not isinstance(got, dict):
        return None
    valid = keys_at(model, inner)
    for key in got:
        if isinstance(key, str) and key not in valid:
            hint = did_you_mean(key, meant if meant is not None else valid)
            if hint:
                return f"'{key}' is not a field here: {hint}"
    return None


def describe_validation_error(exc: ValidationError, model: type[BaseModel],
                              prefix: tuple[Any, ...] = ()) -> tuple[str, str, str | None]:
    """(json path, message, fix) for the first error of a pydantic ValidationError, the
    message naming the others (up to MAX_OTHERS, each with its JSON path)."""
    errors = exc.errors(include_url=False)
    # A misspelt key shows up twice: as unknown, and as the missing key it meant. Report the
    # unknown one first, because its "did you mean" names the fix.
    rank = {"extra_forbidden": 0, "missing": 1}
    err = min(errors, key=lambda e: rank.get(e["type"], 2))
    path, message, fix = _describe(err, model, prefix)
    return path, message + _others(err, [e for e in errors if e is not err], prefix), fix


MAX_OTHERS = 10  # further problems named after the first one


def _others(first: ErrorDetails, others: list[ErrorDetails], prefix: tuple[Any, ...]) -> str:
    """" (and 2 more problems: $.a: unknown key 'x'; $.b: missing required key 'y')": the
    other problems named, so that a file is not fixed one error per run. The key a misspelt
    key meant (missing beside it) is the same problem, not another."""
    loc = tuple(p for p in first["loc"] if not _is_union_tag(p))
    if first["type"] == "extra_forbidden":
        parent, typo = loc[:-1], str(loc[-1])
        others = [e for e in others if not (
            e["type"] == "missing" and tuple(p for p in e["loc"][:-1] if not _is_union_tag(p)) == parent
            and did_you_mean(typo, [str(e["loc"][-1])]))]
    if not others:
        return ""
    named = []
    for e in others[:MAX_OTHERS]:
        where = prefix + tuple(p for p in e["loc"] if not _is_union_tag(p))
        if e["type"] == "extra_forbidden":
            named.append(f"{json_path(where[:-1])}: unknown key '{where[-1]}'")
        elif e["type"] == "missing":
            named.append(f"{json_path(where[:-1])}: missing required key '{where[-1]}'")
        else:
            msg = e["msg"].removeprefix("Value error, ")
            named.append(f"{json_path(where)}: {msg}")
    rest = len(others) - len(named)
    tail = f"; and {rest} more" if rest else ""
    count = len(others)
    return f" (and {count} more problem{'s' if count > 1 else ''}: {'; '.join(named)}{tail})"


def _writes_camel(model: type[BaseModel]) -> bool:
    """Files of this model are ones we write, in camelCase (results, recorded runs)."""
    from ..models.base import OutputModel

    return isinstance(model, type) and issubclass(model, OutputModel)


def _spelt_like_siblings(key: str, siblings: Any, *, camel_files: bool = False) -> str:
    """A missing key in the spelling the object's other keys use (pydantic names the alias).

    When they do not tell (one-word keys), the file's own spelling: camelCase for the files
    we write (``camel_files``), snake_case otherwise (ADK writes snake_case files).
    """
    snake = to_snake(key)
    if to_camel(snake) != key and snake != key:
        return key  # not one of our generated aliases
    keys = [k for k in siblings if isinstance(k, str)] if isinstance(siblings, dict) else []
    if any("_" in k for k in keys):
        camel = False
    elif any(k != k.lower() for k in keys):
        camel = True
    else:
        camel = camel_files
    return to_camel(snake) if camel else snake


def _is_union_tag(part: Any) -> bool:
    # pydantic adds the union member's name to loc ("str", "UserPersona", "function-after[...]").
    return isinstance(part, str) and (
        part[:1].isupper() or "[" in part or part in ("str", "int", "float", "bool", "list", "dict"))


def validate(model: type[M], data: Any, display: str, prefix: tuple[Any, ...] = (),
             notes: list[str] | None = None, keep_extra: bool = False) -> M:
    """``data`` as a ``model``; bad input is an InputError. Keys ADK ignores are dropped,
    with a warning for each appended to ``notes`` (see ignored.py), unless ``keep_extra``
    (a custom metric's criterion: its extra keys are passed to the function, as in ADK)."""
    try:
        value = model.model_validate(data)
    except ValidationError as exc:
        path, message, fix = describe_validation_error(exc, model, prefix)
        raise InputError(message, file=display, path=path, fix=fix) from None
    if keep_extra:
        return value
    warnings = drop_ignored(value, display, prefix)
    if notes is not None:
        notes.extend(w for w in warnings if w not in notes)
    return value
