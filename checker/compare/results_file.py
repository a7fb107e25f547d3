"""Reading a results file back (a baseline, or either side of ``evalcheck compare``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from ..errors import InputError
from ..models.results import PullRequestFile, Results
from ..inputs.validation import parse_json_text, read_json, validate
from ..inputs.bulk import paused_gc


@dataclass(frozen=True)
class BaselineOptions:
    """What reading the baselines takes of a run's options."""

    paths: tuple[Path, ...] = ()  # --baseline, newest first
    base_ref: str | None = None  # the commit the checkout is a change of (--base)
    automatic: bool = False  # the Action's automatic history (older results of another suite left out)


@dataclass(frozen=True)
class ReadBaselines:
    """The baselines read, and what reading them decided."""

    files: list[Results] = field(default_factory=list)
    claims: list[PullRequestFile] = field(default_factory=list)  # what the pull request did to them
    paths: list[Path] = field(default_factory=list)  # the files read: those left out are not in it


def load_suite_results(path: Path, what: str, data: bytes | None = None, display: str | None = None) -> Results:
    """A results file of a whole suite (a baseline, a side of ``compare``): one shard's file
    would show every other shard's case as removed or new, so it is refused. ``data``: the
    file's content, read elsewhere (a baseline at the base commit), shown as ``display``."""
    results = load_results_file(path, what, data, display)
    if results.shard is not None:
        raise InputError(f"the {what} is one shard's results (shard {results.shard.index}/"
                         f"{results.shard.count}), not the whole suite's", file=display or str(path),
                         path="$.shard", fix="merge the shards first: evalcheck merge SHARD_FILES "
                         "--results merged.json, and give merged.json")
    return results


def load_baselines(paths: list[Path], skip_foreign: list[Path] | None = None,
                   at_base: Mapping[Path, tuple[bytes, str]] | None = None) -> list[Results]:
    """Main's results files, newest first. An older file whose cases share ids with the
    newest's but none of their fingerprints is another suite: bad input, not history - or,
    with ``skip_foreign`` (the Action's automatic history), left out with a note there.
    ``at_base``: the content to read instead of a file's own, and how to name it (a
    baseline file the pull request changed, as the base commit has it)."""
    at_base = at_base or {}
    files = [load_suite_results(path, "baseline", *at_base.get(path, (None, None))) for path in paths]
    if not files:
        return files
    kept = [files[0]]
    ambiguous = set().union(*(f.ambiguous_ids() for f in files))  # models/setkey.py
    newest = {(k, c.eval_id): c.fingerprint
              for k, s in zip(files[0].set_keys(ambiguous), files[0].eval_sets, strict=False) for c in s.cases}
    for path, older in zip(paths[1:], files[1:], strict=False):
        shared = [(key, fp) for key, fp in (((k, c.eval_id), c.fingerprint)
                                            for k, s in zip(older.set_keys(ambiguous), older.eval_sets, strict=False)
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


def load_results_file(path: Path, what: str = "results file", content: bytes | None = None,
                      display: str | None = None) -> Results:
    """The Results in ``path`` (or in ``content``, shown as ``display``); anything else is an
    InputError naming the file, the JSON path and the fix. A well-formed file takes the fast
    path (pydantic's JSON parser); only a bad one is re-read to say exactly where it is wrong."""
    display = display or str(path)
    try:
        text = path.read_bytes() if content is None else content
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
    data = read_json(path, display) if content is None else parse_json_text(
        content.decode("utf-8-sig", "replace"), display)
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


def read_baselines(chosen: BaselineOptions, root: Path) -> ReadBaselines:
    """``--baseline``'s files, read before any agent runs, and what the pull request did to
    those the repository tracks. In the Action's automatic history an older result of
    another suite is left out and said. With a base (``chosen.base_ref``), a baseline file the
    pull request changed is read as the base commit has it, and one it added is left out:
    neither is the pull request's to decide (checker/inputs/pr_files.py); what it did is
    returned, to be said in every report, with the paths of the files read."""
    if not chosen.paths:
        return ReadBaselines()
    from ..safety.output import say

    paths = list(chosen.paths)
    at_base, claims = ({}, []) if chosen.automatic else _baselines_at_base(chosen, root, paths)
    skipped: list[Path] | None = [] if chosen.automatic else None
    files = load_baselines(list(paths), skipped, at_base)
    if skipped:
        say(f"evalcheck: note: {len(skipped)} older result(s) of main evaluated other eval data "
            "for every shared case (another suite): not pooled", err=True)
        paths = [p for p in paths if p not in skipped]
    return ReadBaselines(files, claims, paths)


def _baselines_at_base(chosen: BaselineOptions, root: Path, paths: list[Path]
                       ) -> tuple[dict[Path, tuple[bytes, str]], list[PullRequestFile]]:
    """The base commit's content of each baseline file the pull request changed (to read
    instead), and the claims; a file it added leaves ``paths``."""
    from ..inputs.pr_files import tracked_file
    from .baseline_change import baseline_added, baseline_change

    at_base: dict[Path, tuple[bytes, str]] = {}
    claims: list[PullRequestFile] = []
    for path in list(paths):
        tracked = tracked_file(path, root, chosen.base_ref, "the baseline file")
        if tracked is None or tracked.change == "unchanged":
            continue
        commit = tracked.base.commit
        if tracked.change == "added":
            paths[:] = [p for p in paths if p != path]
            claims.append(baseline_added(tracked.shown, commit, tracked.via))
            continue
        assert tracked.base.data is not None
        display = f"{tracked.shown} at the base commit {commit[:12]}"
        at_base[path] = (tracked.base.data, display)
        base = load_suite_results(path, "baseline", tracked.base.data, display)
        try:
            mine: Results | str = load_results_file(path, "baseline")
        except InputError as exc:
            mine = exc.message
        claims.append(baseline_change(tracked.shown, commit, base, mine, tracked.via))
    return at_base, claims
