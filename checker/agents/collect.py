"""The run stage's agent runs, collected by case: every job run to its end (adaptive and
confirmation rounds included), or, on Ctrl-C, what finished written and the run stopped."""

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
    from .limiter import ConcurrencyHistory
    from .scheduler import ScheduledRuns
    from .service_wait import ServiceWaits



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
            adaptive.context.services.pop("judge_semaphore", None)
    except (RunInterrupted, KeyboardInterrupt) as exc:
        # Ctrl-C: the agents are already killed; keep what finished, then stop (no scoring).
        finished = exc.finished if isinstance(exc, RunInterrupted) else []
        message = f"evalcheck: interrupted; {len(finished)} run(s) had finished"
        if options.inference_out and finished and _write_finished(options, finished):
            message += f", written to {options.inference_out}"
        say(message, err=True)
        raise SystemExit(130) from None
    grouped: dict[RunKey, list[RecordedRun]] = {}
    for run in scheduled.runs:
        grouped.setdefault((run.key, run.eval_id), []).append(run)
    return AgentRuns(by_case=grouped, concurrency=scheduled.concurrency)


def _write_finished(options: RunOptions, finished: list[RecordedRun]) -> bool:
    from ..report.records import write_records
    from ..report.writes import OutputFiles, say_error

    assert options.inference_out is not None
    return write_records(options.inference_out, RecordedRuns(runs=finished),
                         Redactor(secret_values(os.environ)), OutputFiles(report=say_error))
