"""Keys ADK ignores: a warning naming the key and the file, never an error.

ADK's EvalSet ignores unknown keys, its EvalCase, SessionInput and criteria keep them unread,
its InvocationEvent, EvalConfig and user simulator config ignore them, and its legacy
readers take only the keys they know. A file with such a key runs in ADK with the key
having no effect, so evalcheck runs it too: the models that stand for those places are
LenientModels (extra="allow"), and after validation ``drop_ignored`` reports every such key
and removes it, so that it changes no score, fingerprint or file written.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from pydantic import BaseModel

from ..errors import did_you_mean, json_path


@cache
def _reaching(model: type[BaseModel]) -> tuple[str, ...]:
    """The fields of ``model`` through which a model with extras allowed can be reached."""
    return tuple(name for name, field in model.model_fields.items()
                 if any(_can_hold_extras(m) for m in _models_in(field.annotation)))


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    out: list[type[BaseModel]] = []
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        out.append(annotation)
    for arg in getattr(annotation, "__args__", ()) or ():
        out.extend(_models_in(arg))
    return out


@cache
def _can_hold_extras(model: type[BaseModel], _seen: frozenset[type] = frozenset()) -> bool:
    if model.model_config.get("extra") == "allow":
        return True
    seen = _seen | {model}
    return any(_can_hold_extras(sub, seen) for field in model.model_fields.values()
               for sub in _models_in(field.annotation) if sub not in seen)


def _field_names(model: type[BaseModel]) -> set[str]:
    names: set[str] = set()
    for name, field in model.model_fields.items():
        names.add(name)
        if field.alias:
            names.add(field.alias)
    return names


def _walk(value: Any, loc: tuple[Any, ...], found: list[tuple[tuple[Any, ...], str, str]]) -> None:
    if isinstance(value, BaseModel):
        extra = value.__pydantic_extra__
        if extra:
            known = _field_names(type(value))
            for key in extra:
                found.append((loc, key, did_you_mean(key, known - {key})))
            extra.clear()
        for name in _reaching(type(value)):
            _walk(getattr(value, name), (*loc, name), found)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _walk(item, (*loc, i), found)
    elif isinstance(value, dict):
        for key, item in value.items():
            _walk(item, (*loc, key), found)


def drop_ignored(value: Any, display: str, prefix: tuple[Any, ...] = (),
                 what: str = "ADK ignores it") -> list[str]:
    """Remove the unknown keys of ``value``'s lenient models; one warning per key and place
    (the same key in many cases of one file is one warning, counting them)."""
    found: list[tuple[tuple[Any, ...], str, str]] = []
    _walk(value, prefix, found)
    grouped: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for loc, key, hint in found:
        path = json_path(loc)
        shape = re.sub(r"\[\d+\]", "[*]", path)
        grouped.setdefault((shape, key), []).append((path, hint))
    notes = []
    for (_, key), places in grouped.items():
        path, hint = places[0]
        where = path if len(places) == 1 else f"{path} (and {len(places) - 1} more like it)"
        note = f"{display}: {where}: unknown key '{key}' ignored, as {what}"
        notes.append(note + (f" ({hint})" if hint else ""))
    return notes


def merge_notes(notes: list[str]) -> list[str]:
    """Warnings made piece by piece (case by case, turn by turn) for the same key at the
    same place in each piece: one warning, counting them."""
    firsts: dict[str, list[str]] = {}
    for note in notes:
        key = re.sub(r"\[\d+\]", "[*]", note.split(" (and ")[0])
        firsts.setdefault(key, []).append(note)
    out = []
    for group in firsts.values():
        if len(group) == 1:
            out.append(group[0])
        else:
            head, _, rest = group[0].partition(": unknown key ")
            out.append(f"{head} (and {len(group) - 1} more like it): unknown key {rest}")
    return out
