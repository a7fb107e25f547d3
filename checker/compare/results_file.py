"""Reading a results file back (a baseline, or either side of ``evalcheck compare``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from ..errors import InputError
from ..models.results import Results
from ..inputs.validation import read_json, validate
from ..inputs.bulk import paused_gc

if TYPE_CHECKING:
    from ..options import RunOptions


def load_suite_results(path: Path, what: str) -> Results:
    """A results file of a whole suite (a baseline, a side of ``compare``): one shard's file
    would show every other shard's case as removed or new, so it is refused."""
    results = load_results_file(path, what)
    if results.shard is not None:
        raise InputError(f"the {what} is one shard's results (shard {results.shard.index}/"
                         f"{results.shard.count}), not the whole suite's", file=str(path),
                         path="$.shard", fix="merge the shards first: evalcheck merge SHARD_FILES "
                         "--results merged.json, and give merged.json")
    return results


def load_baselines(paths: list[Path], skip_foreign: list[Path] | None = None) -> list[Results]:
    """Main's results files, newest first. An older file whose cases share ids with the
    newest's but none of their fingerprints is another suite: bad input, not history - or,
    with ``skip_foreign`` (the Action's automatic history), left out with a note there."""
    files = [load_suite_results(path, "baseline") for path in paths]
    if not files:
        return files
    kept = [files[0]]
    ambiguous = set().union(*(f.ambiguous_ids() for f in files))  # models/setkey.py
    newest = {(k, c.eval_id): c.fingerprint for k, s in zip(files[0].set_keys(ambiguous), files[0].eval_sets)
              for c in s.cases}
    for path, older in zip(paths[1:], files[1:]):
        shared = [(key, fp) for key, fp in (((k, c.eval_id), c.fingerprint)
                                            for k, s in zip(older.set_keys(ambiguous), older.eval_sets)
                                            for c in s.cases)
                  if key in newest and fp and newest[key]]
        if shared and not any(newest[key] == fp for key, fp in shared):
            if skip_foreign is not None:
                skip_foreign.append(path)
                continue
            raise InputError(f"this baseline shares {len(shared)} case id(s) with the newest "
                             f"baseline ({paths[0]}) but not one of their fingerprints: it is the "
                             "results of another suite, not of main's history", file=str(path),
                             path="$.evalSets", fix="give --baseline files of one suite, newest "
                             "first; if main's eval data changed everywhere, give only the files "
                             "written since")
        kept.append(older)
    return kept


def load_results_file(path: Path, what: str = "results file") -> Results:
    """The Results in ``path``; anything else is an InputError naming the file, the JSON
    path and the fix. A well-formed file takes the fast path (pydantic's JSON parser); only
    a bad one is re-read to say exactly where it is wrong."""
    display = str(path)
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{what} not found", file=display,
                         fix="give the results.json written by `evalcheck run --results`") from None
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror or exc}", file=display) from None
    try:
        with paused_gc():
            return Results.model_validate_json(text)
    except ValidationError:
        pass
    data = read_json(path, display)
    fix = f"give the results.json written by `evalcheck run --results` as the {what}"
    if not isinstance(data, dict):
        raise InputError(f"not a {what}: expected a JSON object", file=display, path="$", fix=fix)
    if data.get("version") != 1:
        raise InputError(f"not a {what}: unsupported version {data.get('version')!r}",
                         file=display, path="$.version",
                         fix="this evalcheck reads version 1 results files; " + fix)
    missing = [k for k in ("passed", "summary") if k not in data]
    if missing and isinstance(data.get("runs"), list):  # what --inference-out writes
        raise InputError(f"this is a recorded-runs file (--inference-out), not a {what}",
                         file=display, path="$.runs",
                         fix=f"score it with evalcheck run --replay {display}, and give the "
                             "results.json that run writes with --results")
    if missing:
        raise InputError(f"not a {what}: no '{missing[0]}' key, so not a results file",
                         file=display, path="$", fix=fix)
    try:
        return validate(Results, data, display)
    except InputError as exc:
        raise InputError(f"not a {what}: {exc.message}", file=display, path=exc.path,
                         fix=exc.fix or fix) from None


def read_baselines(options: RunOptions) -> list[Results]:
    """``--baseline``'s files, read before any agent runs. In the Action's automatic history
    an older result of another suite is left out, said, and dropped from ``options.baselines``."""
    if not options.baselines:
        return []
    from ..safety.output import say

    skipped: list[Path] | None = [] if options.baselines_found else None
    files = load_baselines(list(options.baselines), skipped)
    if skipped:
        say(f"evalcheck: note: {len(skipped)} older result(s) of main evaluated other eval data "
            "for every shared case (another suite): not pooled", err=True)
        options.baselines = [p for p in options.baselines if p not in skipped]
    return files
