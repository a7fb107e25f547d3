"""Which baseline cases a run lacks are *removed* (gone from their eval files) and which are
only *outside* it: a run of part of the suite (a case filter, some eval files) does not call
the rest removed (docs/comparing.md, change labels). Pure."""

from __future__ import annotations

from ..models.results import Results
from .pooling import BaselinePool, CaseKey


def _under(path: str, scope: list[str]) -> bool:
    return any(s == "." or path == s or path.startswith(s.rstrip("/") + "/") for s in scope)


def outside_run(missing: list[CaseKey], head: Results, pool: BaselinePool) -> set[CaseKey]:
    """The baseline cases ``head`` lacks that were not its to run - a case its eval file still
    holds but the case filter left out (``unselected``), or one of an eval file outside the
    paths it was given (``metadata.evalPaths``) - rather than removed since the baseline. A
    results file that records neither (an older evalcheck) calls every one removed."""
    sets = dict(zip(head.set_keys(pool.ambiguous), head.eval_sets, strict=False))
    scope = head.metadata.get("evalPaths")
    scope = [s for s in scope if isinstance(s, str)] if isinstance(scope, list) else None
    out = set()
    for key in missing:
        found = sets.get(key[0])
        if found is not None:
            if key[1] in (found.unselected or []):
                out.add(key)
            continue
        path = pool.set_path(key[0])
        if scope is not None and path is not None and not _under(path, scope):
            out.add(key)
    return out
