"""``Results.metadata`` of one ``evalcheck run``: what describes the run (CONTRACT section 4),
added once every case is scored."""

from __future__ import annotations

import platform
from pathlib import Path
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, UTC
from typing import TYPE_CHECKING, Any

from ..models.records import RecordedRun
from ..models.results import Results
from ..version import evalcheck_version
from ..models.setkey import RunKey
from .pipeline import run_counts

if TYPE_CHECKING:
    from ..limiter import ConcurrencyHistory
    from ..judges.service import JudgeService
    from ..simulation.model import SimulatorStats


@dataclass(frozen=True)
class MetadataOptions:
    """What the run's metadata takes of its options (built by checker/commands/stage_options.py)."""

    mode: str = "stdio"  # "stdio", "api" or "replay"
    paths: tuple[str, ...] = ()  # the eval files and folders given
    num_runs: int = 2
    concurrency: int | None = None  # --concurrency (None: adapted, the highest reached is said)


def _utc(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def run_metadata(options: MetadataOptions, runs: Mapping[RunKey, list[RecordedRun]], started: datetime,
                 finished: datetime, seconds: float,
                 concurrency: ConcurrencyHistory | None = None) -> dict[str, Any]:
    """``Results.metadata`` of this run (extra information, CONTRACT section 4).

    ``concurrency`` is the most runs allowed in flight at once (a fixed ``--concurrency``,
    or the highest the adaptive limit reached, which ``adaptiveConcurrency`` follows over
    the run). In replay mode no agent ran: ``numRuns`` is the most runs recorded for a case
    and ``concurrency`` is null (nothing ran concurrently).
    """
    mode = options.mode
    replayed = max(run_counts(runs), default=0)
    used = options.concurrency if concurrency is None else concurrency.highest
    meta: dict[str, Any] = {"evalcheckVersion": evalcheck_version(), "mode": mode,
                            "evalPaths": eval_paths(list(options.paths)),
                            "numRuns": replayed if mode == "replay" else options.num_runs,
                            "concurrency": None if mode == "replay" else used,
                            "startedAt": _utc(started), "finishedAt": _utc(finished),
                            "durationSeconds": round(seconds, 3),
                            "pythonVersion": platform.python_version()}
    if concurrency is not None and concurrency.adaptive and mode != "replay":
        meta["adaptiveConcurrency"] = concurrency.metadata()
    return meta


def eval_paths(paths: list[str]) -> list[str]:
    """The eval files and folders the run was given, relative to the repository root (a case
    filter left off): a baseline eval file outside them is not the run's to call removed."""
    from ..inputs.discover import display_path, find_repo_root, split_selector

    root = find_repo_root(Path.cwd())
    out = []
    for arg in paths or ["."]:
        shown = display_path(Path(split_selector(arg)[0]), root)
        out.append("." if shown in ("", ".") else shown.rstrip("/"))
    return list(dict.fromkeys(out))


def describe_run(results: Results, options: MetadataOptions, runs: Mapping[RunKey, list[RecordedRun]], *,
                 started_at: datetime, started_clock: float, judge: JudgeService,
                 simulated: SimulatorStats, warnings: list[str], adaptive: Mapping[str, int] | None,
                 concurrency: ConcurrencyHistory | None = None) -> None:
    """The judge's, the simulated users', the warnings' and the extra runs' metadata
    (``adaptive``: compare/adaptive.py's), then the run's (``run_metadata``;
    ``started_clock``: ``time.monotonic()`` at the start)."""
    if judge.stats.used():
        results.metadata["judge"] = judge.metadata()
    if simulated.used():
        results.metadata["userSimulator"] = simulated.as_metadata()
    if warnings:
        results.metadata["warnings"] = warnings
    if adaptive is not None:
        results.metadata.update(adaptive)
    # Keys already there (e.g. "judge") win: this only adds what describes the run.
    results.metadata = {**run_metadata(options, runs, started_at, datetime.now(UTC),
                                       time.monotonic() - started_clock, concurrency),
                        **results.metadata}
