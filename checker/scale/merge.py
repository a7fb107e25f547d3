"""Merging shards (``evalcheck merge``, commands/merge.py): the results (and recorded runs)
of N shards -> one, as if one machine had run everything: same eval sets and case order, same summary and verdict.

A set that cannot be merged honestly is bad input naming the file at fault: a shard
missing or given twice, a case in two shards, shards of another selection (other files,
cases or score-changing options), of another shard count or of another evalcheck version.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..compare.results_file import load_results_file
from ..errors import InputError
from ..safety.limits import loads_bounded
from ..models.results import CaseResult, ConfirmationFamily, EvalSetResult, Results, ShardInfo
from ..models.setkey import set_key, shown
from ..scoring.pipeline import finish_results
from ..inputs.validation import validate

# Metadata that describes one machine's run, combined over the shards below.
_TIMING = ("startedAt", "finishedAt", "durationSeconds")
# Confirmation counters (compare/confirm.py Confirmation.metadata), added up over the shards.
_CONFIRM_COUNTS = ("confirmExtraRuns", "confirmCases", "confirmCertainEarly", "confirmContested",
                   "confirmContestedRuns")


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _load_json(path: Path) -> Any:
    try:
        return loads_bounded(path.read_bytes())  # depth-bounded, lone surrogates repaired
    except FileNotFoundError:
        raise InputError("file not found", file=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read file: {exc}", file=str(path)) from None
    except ValueError as exc:
        raise InputError(f"not JSON: {exc}", file=str(path)) from None


@dataclass
class ShardFile:
    path: Path
    info: ShardInfo
    version: str | None
    at: str = "$.shard"  # where the file records its shard (a recorded-runs file: $.metadata.shard)


def shard_of(path: Path, info: ShardInfo | None, metadata: dict[str, Any] | None,
              at: str = "$.shard") -> ShardFile:
    if info is None:
        raise InputError("not a shard's file (no shard recorded)", file=str(path), path=at,
                         fix="write it with `evalcheck run --shard I/N`")
    return ShardFile(path, info, (metadata or {}).get("evalcheckVersion"), at)


def check_same_run(f: ShardFile, first: ShardFile, *, versionless_ok: bool = False) -> None:
    """``f`` is a shard of the run ``first`` belongs to: the same selection (files, cases,
    score-changing options), shard count and evalcheck version. ``versionless_ok``: ``f``
    may record no version (a recorded-runs file of an evalcheck that did not write it)."""
    if f.info.selection != first.info.selection:
        raise InputError(f"shard {f.info.index}/{f.info.count} evaluated another selection "
                         f"than {first.path} (eval files, cases or options differ)",
                         file=str(f.path), path=f"{f.at}.selection",
                         fix="run every shard on the same commit with the same options")
    if f.info.count != first.info.count:
        raise InputError(f"shard {f.info.index}/{f.info.count} is one of {f.info.count}, "
                         f"{first.path} one of {first.info.count}", file=str(f.path),
                         path=f"{f.at}.count")
    if f.version != first.version and not (versionless_ok and f.version is None):
        raise InputError(f"written by evalcheck {f.version}, {first.path} by evalcheck "
                         f"{first.version}", file=str(f.path),
                         fix="run every shard with the same evalcheck version")
    mine, theirs = f.info.baseline_durations, first.info.baseline_durations
    if mine != theirs and None not in (mine, theirs):  # a file without it: merged as before
        raise InputError(f"the shards were split with different baselines: shard "
                         f"{f.info.index}/{f.info.count} on {_split_on(mine)}, {first.path} on "
                         f"{_split_on(theirs)}", file=str(f.path), path=f"{f.at}.baselineDurations",
                         fix="give every shard the same --baseline, or give none of them one")


def shards_family(loaded: Sequence[tuple[Path, Results]]) -> ConfirmationFamily | None:
    """The family every shard screened and confirmed against (docs/sharding.md), or None when
    none ran confirmation runs; shards that disagree on it (another baseline, alpha or
    --confirm-runs, or one with and one without) are bad input: their fresh runs were chosen
    by different screenings and cannot make one decision."""
    (first_path, first), *rest = loaded
    mine = first.shard.family if first.shard is not None else None
    for path, results in rest:
        theirs = results.shard.family if results.shard is not None else None
        if theirs == mine:
            continue
        assert results.shard is not None
        where = f"shard {results.shard.index}/{results.shard.count}"
        raise InputError(f"{where} {_confirmed_as(theirs)}, {first_path} {_confirmed_as(mine)}",
                         file=str(path), path="$.shard.family",
                         fix="give every shard the same --baseline files (newest first), --alpha and "
                             "--confirm-runs, and run them all with an agent (or all in replay)")
    return mine


def _confirmed_as(family: ConfirmationFamily | None) -> str:
    if family is None:
        return "ran no confirmation runs (no --baseline, --confirm-runs 0, or replay)"
    files = len(family.baselines)
    digests = ", ".join(d[:15] + "..." for d in family.baselines)
    return (f"confirmed against {files} baseline file{'' if files == 1 else 's'} ({digests}) at "
            f"alpha {family.alpha:g} with --confirm-runs {family.confirm_runs}")


def _split_on(durations: str | None) -> str:
    return "no baseline" if durations == "none" else f"baseline durations {str(durations)[:19]}..."


def check_shards(files: Sequence[ShardFile], what: str) -> int:
    """Refuse an inconsistent or incomplete set of shards; returns the shard count."""
    first = files[0]
    seen: dict[int, Path] = {}
    for f in files:
        check_same_run(f, first)
        if f.info.index in seen:
            raise InputError(f"shard {f.info.index}/{f.info.count} is also {seen[f.info.index]}",
                             file=str(f.path), path="$.shard.index", fix=f"pass each {what} once")
        seen[f.info.index] = f.path
    missing = [i for i in range(1, first.info.count + 1) if i not in seen]
    if missing:
        names = ", ".join(f"{i}/{first.info.count}" for i in missing)
        raise InputError(f"shard {names} missing: got {len(files)} of {first.info.count} {what}s",
                         file=", ".join(str(f.path) for f in files),
                         fix="pass every shard's file (did a shard job fail or its upload?)")
    return first.info.count


def _positions(path: Path, info: ShardInfo, count: int) -> list[int]:
    if info.positions is None or len(info.positions) != count:
        raise InputError(f"the shard lists {len(info.positions or [])} case position(s) for "
                         f"{count} case(s)", file=str(path), path="$.shard.positions")
    return info.positions


def _merged_metadata(shards: Sequence[Results]) -> dict[str, Any]:
    first = shards[0].metadata
    # A shard job's baseline search notes are its own: the merge job records its own search.
    metadata = {k: v for k, v in first.items() if k not in _TIMING and k not in ("judge", "baselineNotes")}
    started = [s.metadata["startedAt"] for s in shards if s.metadata.get("startedAt")]
    finished = [s.metadata["finishedAt"] for s in shards if s.metadata.get("finishedAt")]
    if started:
        metadata["startedAt"] = min(started)
    if finished:
        metadata["finishedAt"] = max(finished)
    durations = [s.metadata["durationSeconds"] for s in shards
                 if isinstance(s.metadata.get("durationSeconds"), (int, float))]
    if durations:
        # Shards run side by side: the suite took as long as the slowest one.
        metadata["durationSeconds"] = max(durations)
    warnings = [w for s in shards for w in s.metadata.get("warnings", [])]
    if warnings:
        metadata["warnings"] = list(dict.fromkeys(warnings))
    judges = [s.metadata["judge"] for s in shards if isinstance(s.metadata.get("judge"), dict)]
    if judges:
        metadata["judge"] = _sum_numbers(judges)
    for key in _CONFIRM_COUNTS:  # every shard's fresh runs, in the suite's counts
        counts = [s.metadata[key] for s in shards if _count(s.metadata.get(key))]
        if counts:
            metadata[key] = sum(counts)
    rounds = [s.metadata["confirmRounds"] for s in shards if _count(s.metadata.get("confirmRounds"))]
    if rounds:  # the shards' rounds ran side by side
        metadata["confirmRounds"] = max(rounds)
    numbers = [n for s in shards if isinstance(n := s.metadata.get("numRuns"), int)]
    if numbers:
        metadata["numRuns"] = max(numbers)
    metadata["shards"] = len(shards)
    return metadata


def _sum_numbers(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counters added over the shards; other values taken from the first shard."""
    out = dict(parts[0])
    for part in parts[1:]:
        for key, value in part.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) \
                    and isinstance(out.get(key), (int, float)) and key != "concurrency":
                out[key] = out[key] + value
            elif isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key] = _sum_numbers([out[key], value])
            else:
                out.setdefault(key, value)
    return out


def merge_results(paths: Sequence[Path], loaded: Sequence[Results] | None = None) -> Results:
    """The shards' results as one unsharded results file (no ``shard`` key)."""
    shards = list(loaded) if loaded is not None else [load_results_file(p) for p in paths]
    files = [shard_of(p, r.shard, r.metadata) for p, r in zip(paths, shards, strict=False)]
    check_shards(files, "results file")
    first = shards[0]
    # Eval sets are told apart by id and path (two files may share an id: models/setkey.py).
    set_ids = [(s.eval_set_id, s.path) for s in first.eval_sets]
    placed: dict[tuple[int, str], Path] = {}
    by_set: dict[int, list[tuple[int, CaseResult]]] = {i: [] for i in range(len(set_ids))}
    for path, shard in zip(paths, shards, strict=False):
        if [(s.eval_set_id, s.path) for s in shard.eval_sets] != set_ids:
            raise InputError(f"lists other eval sets than {paths[0]}", file=str(path), path="$.evalSets")
        if shard.verdict_rule != first.verdict_rule:
            raise InputError(f"verdict rule {shard.verdict_rule!r}, {paths[0]} has "
                             f"{first.verdict_rule!r}", file=str(path), path="$.verdictRule")
        assert shard.shard is not None
        positions = iter(_positions(path, shard.shard, sum(len(s.cases) for s in shard.eval_sets)))
        for s, eval_set in enumerate(shard.eval_sets):
            for c, case in enumerate(eval_set.cases):
                key = (s, case.eval_id)
                if key in placed:
                    raise InputError(f"eval case '{case.eval_id}' of eval set '{eval_set.eval_set_id}' "
                                     f"is also in {placed[key]}", file=str(path),
                                     path=f"$.evalSets[{s}].cases[{c}]",
                                     fix="each case belongs to one shard: were the shards run on "
                                         "the same files?")
                placed[key] = path
                by_set[s].append((next(positions), case))
    total = first.shard.total if first.shard else None
    if total is not None and len(placed) != total:
        raise InputError(f"the shards hold {len(placed)} case(s) of the {total} selected",
                         file=", ".join(map(str, paths)), path="$.shard.total")
    sets = []
    for s, eval_set in enumerate(first.eval_sets):
        cases = [case for _, case in sorted(by_set[s], key=lambda pc: pc[0])]
        sets.append(EvalSetResult(eval_set_id=eval_set.eval_set_id, path=eval_set.path,
                                  config_path=eval_set.config_path, cases=cases,
                                  unselected=eval_set.unselected))
    merged = finish_results(sets, first.verdict_rule)
    merged.metadata = _merged_metadata(shards)
    if first.file_errors:  # every shard found the same unreadable files: said once
        merged.file_errors, merged.passed = first.file_errors, False
    merged.pull_request_files = first.pull_request_files  # the same files, read by every shard
    return merged


def is_recorded_runs(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("runs"), list) and "evalSets" not in data


def _run_key(path: Path, i: int, run: Any) -> tuple[str, str, int]:
    """A recorded run's (eval set key, eval id, run number), checked; the rest is passed
    through untouched (it is validated when the merged file is replayed). The key is the
    eval set id, with the eval file's path when the run carries one (models/setkey.py)."""
    def field(camel: str, snake: str, kind: type) -> Any:
        value = run.get(camel, run.get(snake)) if isinstance(run, dict) else None
        if not isinstance(value, kind) or isinstance(value, bool):
            raise InputError(f"a recorded run needs {camel} ({kind.__name__})", file=str(path),
                             path=f"$.runs[{i}].{camel}")
        return value

    set_id = field("evalSetId", "eval_set_id", str)
    where = run.get("evalSetPath", run.get("eval_set_path"))
    key = set_key(set_id, where, {set_id}) if isinstance(where, str) else set_id
    return key, field("evalId", "eval_id", str), field("run", "run", int)


def merge_recorded_runs(paths: Sequence[Path], documents: Sequence[Any],
                        results: ShardFile | None = None) -> dict[str, Any]:
    """Shards' ``--inference-out`` files -> one recorded-runs document, runs in the
    unsharded order (case by case, then by run number). ``results``: a shard's results
    file of the same merge; the recorded runs must be of that run (the same selection,
    shard count and version), or the merged runs would not be the merged results' runs."""
    files = []
    for path, document in zip(paths, documents, strict=False):
        raw = (document.get("metadata") or {}).get("shard")
        info = validate(ShardInfo, raw, str(path), ("metadata", "shard")) if raw is not None else None
        files.append(shard_of(path, info, document.get("metadata"), "$.metadata.shard"))
    if results is not None:
        for f in files:
            check_same_run(f, results, versionless_ok=True)
    check_shards(files, "recorded-runs file")
    placed: dict[tuple[str, str], Path] = {}
    ordered: list[tuple[int, int, Any]] = []
    for f, document in zip(files, documents, strict=False):
        keyed = [(_run_key(f.path, i, r), r) for i, r in enumerate(document["runs"])]
        keys = list(dict.fromkeys(k[:2] for k, _ in keyed))
        position = dict(zip(keys, _positions(f.path, f.info, len(keys)), strict=False))
        for key in keys:
            if key in placed:
                raise InputError(f"runs of eval case '{key[1]}' of eval set '{shown(key[0])}' are also in "
                                 f"{placed[key]}", file=str(f.path), path="$.runs")
            placed[key] = f.path
        ordered.extend((position[k[:2]], k[2], r) for k, r in keyed)
    ordered.sort(key=lambda item: (item[0], item[1]))
    return {"version": 1, "runs": [r for _, _, r in ordered]}


def _shard_results(path: Path, results: Results) -> Results:
    if results.comparison is not None:
        # A shard compared on its own would label removed cases wrongly: the merge
        # compares the whole suite (--baseline), never shard by shard.
        raise InputError("this shard holds a comparison with a baseline", file=str(path),
                         path="$.comparison", fix="give --baseline to merge, not to the shards")
    from .verify import check_verdicts

    check_verdicts(path, results)  # its verdicts follow from its own scores
    return results


@dataclass
class MergeInputs:
    results: list[tuple[Path, Results]]
    recorded: list[tuple[Path, Any]]


def read_merge_inputs(paths: Sequence[Path]) -> MergeInputs:
    """Sort the given files into results files and recorded-runs files by their content."""
    if not paths:
        raise InputError("no files to merge", fix="pass the shards' results files (a shell glob works)")
    inputs = MergeInputs([], [])
    for path in paths:
        try:  # a results file: parsed and validated in one step by pydantic-core
            raw = path.read_bytes()
            if b'"evalSets"' in raw:  # (a failed attempt on a large other file is slow)
                inputs.results.append((path, _shard_results(path, Results.model_validate_json(raw))))
                continue
        except (OSError, ValueError):
            pass  # read again below, to classify the file and to say what is wrong
        data = _load_json(path)
        if is_recorded_runs(data):
            inputs.recorded.append((path, data))
        elif isinstance(data, dict) and "evalSets" in data:
            inputs.results.append((path, _shard_results(path, validate(Results, data, str(path)))))
        else:
            raise InputError("neither a results file nor a recorded-runs file", file=str(path),
                             fix="pass the files of `evalcheck run --shard I/N --results/--inference-out`")
    if not inputs.results:
        raise InputError("no results file among the files to merge",
                         file=", ".join(map(str, paths)), fix="pass every shard's --results file")
    return inputs
