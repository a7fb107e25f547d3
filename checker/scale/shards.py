"""``--shard I/N``: one deterministic N-th of the selected cases (docs/sharding.md).

Every machine of a job array computes the same split from the same files and options:
cases are dealt longest-expected-first to the least loaded shard (LPT), ties broken by
position, so the split covers every case exactly once, keeps all runs of a case together,
and balances the expected cost. The cost of a case is its duration in a baseline results
file when one is given (the sum of its runs' seconds), else turns x runs; cases missing
from the baseline are priced at the baseline's mean seconds per turn-run.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..inputs.discover import EvalTarget
from ..errors import InputError
from ..inputs.evalfile import CaseOutline
from ..models.results import Results, ShardInfo

CaseKey = tuple[str, str]  # (eval set id, eval id)
SIMULATED_TURNS = 5  # a conversation_scenario case's expected turns when nothing says more
_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclass(frozen=True)
class ShardOptions:
    """What sharding takes of a run's options: the shard, and what changes scores or verdicts
    (part of the selection fingerprint, so machines that disagree on it are found). Built by
    checker/commands/stage_options.py."""

    shard: str | None = None  # --shard "I/N"
    num_runs: int = 2
    mode: str = "stdio"  # "stdio", "api" or "replay"
    agent_command: str | None = None
    app_name: str | None = None
    max_runs: int | None = None
    verdict: str = "mean"


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str, *, source: str = "--shard") -> Shard:
    """``"2/4"`` -> Shard(2, 4); anything else is an InputError saying what is expected."""
    match = _SHARD.fullmatch(text or "")
    if match is None:
        raise InputError(f"{source} {text!r} is not I/N", fix="e.g. 2/4: the second of 4 shards (1-based)")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1:  # "use 1/1 to 1/1" would not say what is wrong
        raise InputError(f"{source} {text!r}: the shard count (N of I/N) must be at least 1",
                         fix="e.g. 2/4: the second of 4 shards; 1/1 is the whole suite")
    if not 1 <= index <= count:
        raise InputError(f"{source} {text!r}: the index must be between 1 and the count",
                         fix=f"use 1/{count} to {count}/{count}")
    return Shard(index, count)


def case_turns(case: CaseOutline, target: EvalTarget) -> int:
    if case.turns is not None:
        return max(1, case.turns)
    simulator = target.config.user_simulator
    limit = simulator.max_allowed_invocations if simulator is not None else SIMULATED_TURNS
    return max(1, min(limit, SIMULATED_TURNS))


def baseline_durations(results: Results) -> dict[CaseKey, tuple[float, int]]:
    """(eval set id, eval id) -> (seconds over its runs, runs with a duration)."""
    found: dict[CaseKey, tuple[float, int]] = {}
    for key, eval_set in zip(results.set_keys(), results.eval_sets, strict=False):
        for case in eval_set.cases:
            timed = [r.duration_seconds for r in case.runs if r.duration_seconds is not None]
            if timed:
                found[(key, case.eval_id)] = (sum(timed), len(timed))
    return found


def expected_costs(targets: Sequence[EvalTarget], num_runs: int,
                   durations: Mapping[CaseKey, tuple[float, int]] | None = None) -> list[tuple[CaseKey, float]]:
    """Every selected case in run order with its expected cost.

    With baseline durations the unit is seconds for ``num_runs`` runs; a case the baseline
    did not time is priced at the baseline's mean seconds per turn-run (1 without any).
    """
    cases: list[tuple[CaseKey, int]] = []
    for target in targets:
        by_id = {c.eval_id: c for c in target.loaded.case_outlines()}
        for case_id in target.case_ids:
            cases.append(((target.key, case_id), case_turns(by_id[case_id], target)))
    durations = durations or {}
    per_turn_run = 1.0
    known = [(durations[key], turns) for key, turns in cases if key in durations]
    if known:
        seconds = sum(s for (s, _), _ in known)
        turn_runs = sum(turns * n for (_, n), turns in known)
        per_turn_run = seconds / turn_runs if seconds > 0 and turn_runs else 1.0
    costs = []
    for key, turns in cases:
        if key in durations and durations[key][0] > 0:
            seconds, runs = durations[key]
            costs.append((key, seconds / runs * num_runs))
        else:
            costs.append((key, per_turn_run * turns * num_runs))
    return costs


def assign(costs: Sequence[tuple[CaseKey, float]], count: int) -> list[int]:
    """The 0-based shard of every case (LPT): longest first, to the least loaded shard."""
    order = sorted(range(len(costs)), key=lambda i: (-costs[i][1], i))
    loads = [(0.0, shard) for shard in range(count)]  # a heap: (load, shard index)
    shard_of = [0] * len(costs)
    for i in order:
        load, shard = heapq.heappop(loads)
        shard_of[i] = shard
        heapq.heappush(loads, (load + costs[i][1], shard))
    return shard_of


def shard_loads(costs: Sequence[tuple[CaseKey, float]], count: int) -> list[float]:
    loads = [0.0] * count
    for (_, cost), shard in zip(costs, assign(costs, count), strict=False):
        loads[shard] += cost
    return loads


def _file_digest(path: Path | None) -> str | None:
    if path is None:
        return None
    with path.open("rb") as file:  # in chunks: a large eval file is not held whole
        return hashlib.file_digest(file, "sha256").hexdigest()


def selection_fingerprint(targets: Sequence[EvalTarget], options: Mapping[str, Any]) -> str:
    """``sha256:`` over the eval files (path and bytes), their criteria files, the selected
    case ids in order, and the options that change scores: machines that disagree on any
    of these evaluated different suites, and their shards must not be merged."""
    document = {
        "files": [{"path": t.loaded.display_path, "sha256": _file_digest(t.loaded.path),
                   "config": t.config.display_path, "configSha256": _file_digest(t.config.path),
                   "cases": t.case_ids} for t in targets],
        "options": dict(sorted(options.items())),
    }
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def durations_fingerprint(costs: Sequence[tuple[CaseKey, float]],
                          durations: Mapping[CaseKey, tuple[float, int]] | None) -> str:
    """What priced the split, for ``ShardInfo.baseline_durations``: ``sha256:`` over the
    baseline durations of the selected cases (all the split depends on), or ``none`` when
    the baseline timed none of them (the split is then the one without a baseline).
    Shards split on other durations hold other cases: the merge must refuse them by this,
    not stumble on a case found in two shards."""
    used = [[key[0], key[1], *durations[key]] for key, _ in costs if durations and key in durations]
    if not used:
        return "none"
    text = json.dumps(used, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class ShardPlan:
    """This machine's targets (every eval set kept, possibly with no cases, so that every
    shard lists the eval sets in the same order) and what its results record."""

    targets: list[EvalTarget]
    info: ShardInfo


def plan_shard(targets: Sequence[EvalTarget], shard: Shard, costs: Sequence[tuple[CaseKey, float]],
               selection: str, baseline_durations: str = "none") -> ShardPlan:
    shard_of = assign(costs, shard.count)
    mine = {key: position for position, ((key, _), s) in enumerate(zip(costs, shard_of, strict=False))
            if s == shard.index - 1}
    chosen: list[EvalTarget] = []
    positions: list[int] = []
    for target in targets:
        ids = [c for c in target.case_ids if (target.key, c) in mine]
        positions.extend(mine[(target.key, c)] for c in ids)
        chosen.append(replace(target, case_ids=ids))
    info = ShardInfo(index=shard.index, count=shard.count, selection=selection,
                     total=len(costs), positions=positions, baseline_durations=baseline_durations)
    return ShardPlan(chosen, info)


def score_options(options: ShardOptions) -> dict[str, Any]:
    """The run options that change scores or verdicts (part of the selection fingerprint)."""
    mode = options.mode
    chosen: dict[str, Any] = {"mode": mode, "agentCommand": options.agent_command,
                              "appName": options.app_name}
    if mode != "replay":  # replay scores whatever runs were recorded
        chosen["numRuns"] = options.num_runs
        chosen["maxRuns"] = options.max_runs
    chosen["verdict"] = options.verdict
    return chosen


def shard_targets(targets: list[EvalTarget], options: ShardOptions,
                  baseline: Results | None = None) -> tuple[list[EvalTarget], ShardInfo]:
    """Apply ``options.shard`` ("I/N"): this machine's targets and the ShardInfo to record.
    A baseline's run durations, when given, price the cases."""
    assert options.shard is not None, "shard_targets is for a sharded run"
    shard = parse_shard(options.shard)
    durations = baseline_durations(baseline) if baseline is not None else None
    costs = expected_costs(targets, options.num_runs, durations)
    plan = plan_shard(targets, shard, costs, selection_fingerprint(targets, score_options(options)),
                      durations_fingerprint(costs, durations))
    return plan.targets, plan.info


def load_shard(targets: list[EvalTarget], options: ShardOptions,
               baseline: Results | None = None) -> tuple[list[EvalTarget], ShardInfo]:
    """``shard_targets``, then this shard's cases loaded, only them (the targets were outlined)."""
    targets, info = shard_targets(targets, options, baseline)
    for target in targets:
        target.loaded.keep_cases(target.case_ids)
    return targets, info


def empty_shard_line(info: ShardInfo) -> str | None:
    """The line saying a shard holds no cases (fewer cases than shards, or cheap ones dealt
    elsewhere), None when it holds some. Such a shard passes: nothing in it failed, and
    its (empty) results file is still one the merge needs; the suite's verdict is the merge's."""
    if info.positions:
        return None
    cases = f"{info.total} case{'' if info.total == 1 else 's'}"
    return (f"shard {info.index}/{info.count} holds no cases ({cases} over {info.count} shards); "
            "its results file still goes to `evalcheck merge`")


def recorded_runs_shard(info: ShardInfo, targets: Sequence[EvalTarget],
                        keys: Sequence[CaseKey]) -> dict[str, Any]:
    """``metadata.shard`` of a shard's recorded-runs file: ``positions`` align with the
    distinct cases of ``keys`` (the file's runs, in order)."""
    where = dict(zip(((t.key, c) for t in targets for c in t.case_ids), info.positions or [], strict=False))
    distinct = list(dict.fromkeys(keys))
    shard = info.model_copy(update={"positions": [where[k] for k in distinct]})
    return shard.model_dump(mode="json", by_alias=True, exclude_none=True)
