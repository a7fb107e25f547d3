"""The results file's bytes, made a case at a time as they are written.

``results.model_dump_json(indent=2)`` in one piece holds the whole text twice at its peak
(pydantic's growing buffer, then its copy as bytes): 110 MB above the run's results for
10,000 cases, the peak of a replay's memory (bench/bench_replay.py). Here the document
is dumped with its lists of eval sets and cases empty, and each eval set and case alone,
each indented as it sits in the whole: the same bytes, a case's worth of memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from pydantic import BaseModel

from ..compare.reliability import case_reliability, suite_k, suite_reliability
from ..models.results import EvalSetResult, Results

STEP = 2  # spaces per level, as written (indent=2)


def results_json(results: Results) -> Iterator[bytes]:
    """``results.model_dump_json(indent=2)`` and a newline, as UTF-8 pieces; each case's
    ``reliability`` and the summary's computed from the runs as they are now (a merge or a
    compare writes its own, never a shard's or a baseline's)."""
    cases = [c for s in results.eval_sets for c in s.cases]
    k = suite_k(cases)
    summary = results.summary.model_copy(update={"reliability": suite_reliability(cases, k)})
    top = _dump(results.model_copy(update={"eval_sets": [], "summary": summary}))
    yield from _spliced(top, "evalSets", (_eval_set(s, k) for s in results.eval_sets), 1,
                        bool(results.eval_sets))
    yield b"\n"


def _eval_set(eval_set: EvalSetResult, k: int | None) -> Iterator[bytes]:
    outline = _dump(eval_set.model_copy(update={"cases": []}))
    yield from _spliced(outline, "cases", ([_dump(c.model_copy(update={"reliability": case_reliability(c, k)}))]
                                           for c in eval_set.cases), 1, bool(eval_set.cases))


def _dump(model: BaseModel) -> bytes:
    # What model_dump_json uses, without decoding its bytes into one more copy.
    return model.__pydantic_serializer__.to_json(model, indent=STEP)


def _spliced(outline: bytes, key: str, items: Iterable[Iterable[bytes]], level: int,
             any_items: bool) -> Iterator[bytes]:
    """``outline`` (an object's JSON with the list ``key``, at ``level``, dumped empty) with
    each item's pieces (an item's JSON as if alone) in that list, as the formatter writes a
    list: ``[``, each item on its own line one level deeper, ``,`` between, ``]``."""
    empty = b"\n" + b" " * (STEP * level) + f'"{key}": []'.encode()
    # A newline and the indent of that level start only its keys: strings hold no newline.
    before, found, after = outline.partition(empty)
    assert found and empty not in after, f"'{key}' is not one key of the outline"
    yield before
    if not any_items:
        yield empty
    else:
        yield empty[:-1]
        for n, pieces in enumerate(items):
            yield (b",\n" if n else b"\n") + b" " * (STEP * (level + 1))
            yield from _indented(pieces, level + 1)
        yield b"\n" + b" " * (STEP * level) + b"]"
    yield after


def _indented(pieces: Iterable[bytes], levels: int) -> Iterator[bytes]:
    """Pieces of JSON placed ``levels`` deeper: every line after the first indented."""
    pad = b"\n" + b" " * (STEP * levels)
    for piece in pieces:
        yield piece.replace(b"\n", pad)
