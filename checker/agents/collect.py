"""The run stage's agent runs, collected by case: every job run to its end (adaptive and
confirmation rounds included), or, on Ctrl-C or SIGTERM, what finished handed on as
``RunsInterrupted``: the run writes them (--inference-out), scores and reports them, marked
interrupted, and exits 130 (143 for SIGTERM)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import aio
from ..models.records import RecordedRun
from ..models.setkey import RunKey

if TYPE_CHECKING:
    from ..inputs.discover import EvalTarget
    from ..metrics.base import ScoringContext
    from ..models.usage import TokenBudget
    from ..simulation.model import SimulatorStats
    from ..limiter import ConcurrencyHistory
    from .schedule import AgentOptions
    from .scheduler import MoreRuns, ScheduledRuns
    from .service_wait import ServiceWaits


class RunsInterrupted(Exception):
    """Ctrl-C or SIGTERM stopped the agent runs: the runs that had finished (``recorded``, in
    input order; ``runs``, by case), and how many were planned by then. Every agent is
    already stopped."""

    def __init__(self, recorded: list[RecordedRun], planned: int):
        super().__init__("interrupted")
        self.recorded, self.runs = recorded, _grouped(recorded)
        self.finished, self.planned = len(recorded), planned


@dataclass(frozen=True)
class AgentRuns:
    """The agents' runs by case, and what the concurrency did over them."""

    by_case: Mapping[RunKey, list[RecordedRun]]
    concurrency: ConcurrencyHistory


def collect_runs(targets: list[EvalTarget], options: AgentOptions,
                 simulator_stats: SimulatorStats | None = None,
                 more: MoreRuns | None = None,
                 scoring: ScoringContext | None = None,
                 budget: TokenBudget | None = None,
                 service: ServiceWaits | None = None) -> AgentRuns:
    """Every agent run of ``targets`` (not in replay mode: the plan reads the replay). ``more``:
    the rounds of extra runs (compare/adaptive.py), which score in ``scoring``'s services."""
    from .process import pidfd_child_watcher
    from .schedule import RunInterrupted, schedule_runs

    async def jobs() -> ScheduledRuns:
        runs = schedule_runs(targets, options, simulator_stats=simulator_stats, more=more,
                             budget=budget, service=service)
        # Adaptive runs score in this event loop: their judge clients and custom metric worker
        # are closed here, while the child watcher that saw the worker start still watches it.
        with pidfd_child_watcher():
            return await (scoring.scoring(runs) if scoring is not None else runs)

    try:
        # (on the event loop of the agent started early, when there is one: its pipes are there)
        scheduled = aio.run(jobs(), options.early.runner if options.early is not None else None)
        # A limit bound to that event loop must not be reused by the scoring loop.
        if scoring is not None:
            scoring.services.judge_semaphore = None
    except (RunInterrupted, KeyboardInterrupt) as exc:
        # Ctrl-C: the agents are already killed; what finished is handed on, to be written,
        # scored and reported as interrupted.
        finished = exc.finished if isinstance(exc, RunInterrupted) else []
        planned = exc.planned if isinstance(exc, RunInterrupted) else len(finished)
        raise RunsInterrupted(finished, planned) from None
    return AgentRuns(by_case=_grouped(scheduled.runs), concurrency=scheduled.concurrency)


def _grouped(runs: list[RecordedRun]) -> dict[RunKey, list[RecordedRun]]:
    grouped: dict[RunKey, list[RecordedRun]] = {}
    for run in runs:
        grouped.setdefault((run.key, run.eval_id), []).append(run)
    return grouped

