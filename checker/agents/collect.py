"""The run stage's agent runs, collected by case: every job run to its end (adaptive and
confirmation rounds included), or, on Ctrl-C or SIGTERM, what finished written
(--inference-out) and handed on as ``RunsInterrupted``: the run scores and reports those runs,
marked interrupted, and exits 130 (143 for SIGTERM)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import aio
from ..models.records import RecordedRun, RecordedRuns
from ..safety.output import say
from ..safety.redact import Redactor, secret_values
from ..models.setkey import RunKey

if TYPE_CHECKING:
    from ..compare.adaptive import AdaptiveRuns
    from ..inputs.discover import EvalTarget
    from ..models.usage import TokenBudget
    from ..options import RunOptions
    from ..simulation.model import SimulatorStats
    from ..limiter import ConcurrencyHistory
    from .scheduler import ScheduledRuns
    from .service_wait import ServiceWaits


class RunsInterrupted(Exception):
    """Ctrl-C or SIGTERM stopped the agent runs: the runs that had finished, by case, and how
    many were planned by then. Every agent is already stopped."""

    def __init__(self, runs: dict[RunKey, list[RecordedRun]], finished: int, planned: int):
        super().__init__("interrupted")
        self.runs, self.finished, self.planned = runs, finished, planned


@dataclass(frozen=True)
class AgentRuns:
    """The agents' runs by case, and what the concurrency did over them."""

    by_case: Mapping[RunKey, list[RecordedRun]]
    concurrency: ConcurrencyHistory


def collect_runs(targets: list[EvalTarget], options: RunOptions,
                 simulator_stats: SimulatorStats | None = None,
                 adaptive: AdaptiveRuns | None = None,
                 budget: TokenBudget | None = None,
                 service: ServiceWaits | None = None) -> AgentRuns:
    """Every agent run of ``targets`` (not in replay mode: the plan reads the replay)."""
    from .process import pidfd_child_watcher
    from .schedule import RunInterrupted, schedule_runs

    async def jobs() -> ScheduledRuns:
        runs = schedule_runs(targets, options, simulator_stats=simulator_stats,
                             more=adaptive.more if adaptive else None, budget=budget,
                             service=service)
        # Adaptive runs score in this event loop: their judge clients and custom metric worker
        # are closed here, while the child watcher that saw the worker start still watches it.
        with pidfd_child_watcher():
            return await (adaptive.context.scoring(runs) if adaptive is not None else runs)

    try:
        scheduled = aio.run(jobs())
        # A limit bound to that event loop must not be reused by the scoring loop.
        if adaptive is not None:
            adaptive.context.services.judge_semaphore = None
    except (RunInterrupted, KeyboardInterrupt) as exc:
        # Ctrl-C: the agents are already killed; keep what finished (written first, before
        # anything else can go wrong), then score and report it as interrupted.
        finished = exc.finished if isinstance(exc, RunInterrupted) else []
        planned = exc.planned if isinstance(exc, RunInterrupted) else len(finished)
        message = f"evalcheck: interrupted; {len(finished)} run(s) had finished"
        if options.inference_out and finished and _write_finished(options, finished):
            message += f", written to {options.inference_out}"
        say(message + f"; scoring them (interrupted: {len(finished)} of {planned} runs)", err=True)
        raise RunsInterrupted(_grouped(finished), len(finished), planned) from None
    return AgentRuns(by_case=_grouped(scheduled.runs), concurrency=scheduled.concurrency)


def _grouped(runs: list[RecordedRun]) -> dict[RunKey, list[RecordedRun]]:
    grouped: dict[RunKey, list[RecordedRun]] = {}
    for run in runs:
        grouped.setdefault((run.key, run.eval_id), []).append(run)
    return grouped


def _write_finished(options: RunOptions, finished: list[RecordedRun]) -> bool:
    from ..report.records import write_records
    from ..report.writes import OutputFiles, say_error

    assert options.inference_out is not None
    return write_records(options.inference_out, RecordedRuns(runs=finished),
                         Redactor(secret_values(os.environ)), OutputFiles(report=say_error))
