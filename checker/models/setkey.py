"""Which eval set a case belongs to, when two eval files share an eval set id (a monorepo of
agents: agent-starter-pack's templates all use ``basic_eval``).

An eval set is its id; where two files of one run (or one results file, or a baseline and the
run compared with it) share an id, each of them is its id *and* its file's path relative to
the repository root. ``set_key`` gives the key every table of runs, results, fingerprints,
baselines, shards and merges is indexed by: the plain id when it is unambiguous (so results
of earlier runs still match), else the id qualified by the path. Ids cannot hold a NUL
(checker/inputs/evalfile.py refuses one), so a qualified key never equals a plain id.
"""

from __future__ import annotations

from collections.abc import Iterable

SEPARATOR = "\x00"
RunKey = tuple[str, str]  # (eval set key, eval id): one case, the key of its runs


def ambiguous_ids(sets: Iterable[tuple[str, str | None]]) -> set[str]:
    """The ids given by more than one path among (eval set id, path) pairs."""
    paths: dict[str, set[str | None]] = {}
    for set_id, path in sets:
        paths.setdefault(set_id, set()).add(path)
    return {set_id for set_id, found in paths.items() if len(found) > 1}


def set_key(eval_set_id: str, path: str | None, ambiguous: set[str] | frozenset[str]) -> str:
    """The key of an eval set: its id, qualified by its path when the id is ambiguous."""
    if eval_set_id in ambiguous:
        return f"{eval_set_id}{SEPARATOR}{path}"
    return eval_set_id


def shown(key: str) -> str:
    """A key as people read it: ``basic_eval`` or ``basic_eval (agents/a/x.evalset.json)``."""
    set_id, sep, path = key.partition(SEPARATOR)
    return f"{set_id} ({path})" if sep else set_id
