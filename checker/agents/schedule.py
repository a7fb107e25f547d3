"""Every selected case, ``num_runs`` times: the plan of runs, the runner that runs them,
and the entry point of the run stage's agent runs (agents/scheduler.py schedules them).

Runs are independent (a fresh process or session each) and come back in input order -
eval set, case, run - whatever order they finish in. Ctrl-C cancels the runs in flight
(each kills its own agent) and raises RunInterrupted with the runs that had finished.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..errors import InputError
from ..models.evalset import EvalCase
from ..models.records import RecordedRun
from .base import AgentRunner, RunJob
from .progress import Progress
from .scheduler import MoreRuns, RunInterrupted, ScheduledRuns, ScheduleOptions, Scheduler
from .service_wait import ServiceWaits

if TYPE_CHECKING:
    from ..inputs.discover import EvalTarget
    from ..models.usage import TokenBudget
    from ..simulation.model import SimulatorStats
    from .early_start import EarlyAgent
    from .sandbox import AgentSandbox

__all__ = ["AgentOptions", "MoreRuns", "Progress", "RunInterrupted", "RunPlan", "ScheduledRuns",
           "make_runner", "plan_jobs", "run_agent_jobs", "schedule_runs"]


@dataclass(frozen=True)
class AgentOptions:
    """What the run stage takes of a run's options: the agent, its runs, how they are scheduled
    (built by checker/commands/stage_options.py)."""

    agent_command: str | None = None
    agent_url: str | None = None
    agent_server_command: str | None = None
    app_name: str | None = None
    num_runs: int = 2
    turn_timeout: float = 300.0
    max_service_wait: float = 600.0  # seconds of a model-service outage before giving up runs
    sandbox: AgentSandbox | None = None  # who agents run as (None: the caller)
    early: EarlyAgent | None = None  # the agent started while the inputs were read (early_start.py)
    schedule: ScheduleOptions = field(default_factory=ScheduleOptions)


def _check_persona_template(target: EvalTarget, case: EvalCase) -> None:
    """A custom simulator template must use {{ persona }} for a case with a persona (ADK)."""
    config = target.config.user_simulator
    scenario = case.conversation_scenario
    if config is None or config.custom_instructions is None or scenario is None \
            or scenario.user_persona is None:
        return
    from ..simulation.prompts import TEMPLATE_FIX, TemplateProblem, check_template

    try:
        check_template(config.custom_instructions, with_persona=True)
    except TemplateProblem as exc:
        raise InputError(f"{exc}, but eval case '{case.eval_id}' of "
                         f"{target.loaded.display_path} has a user_persona",
                         file=target.config.display_path,
                         path="$.user_simulator_config.custom_instructions",
                         fix=TEMPLATE_FIX) from None


class RunPlan:
    """Every (case, run) to run, made on demand: one template job per case is kept, each
    run's job is made when a worker takes it, so memory does not grow with the runs
    (``--num-runs`` x cases). Iterates in input order: eval set, case, run."""

    def __init__(self, templates: list[RunJob], num_runs: int):
        self.templates = templates  # run 1 of each case
        self.num_runs = num_runs

    def __len__(self) -> int:
        return len(self.templates) * self.num_runs

    def __iter__(self) -> Iterator[RunJob]:
        for template in self.templates:
            for run in range(1, self.num_runs + 1):
                yield template if run == 1 else replace(template, run=run)

    def runs_per_case(self) -> dict[tuple[str, str], int]:
        return {(t.key, t.eval_id): self.num_runs for t in self.templates}


def plan_jobs(targets: list[EvalTarget], options: AgentOptions) -> RunPlan:
    """Every (case, run) to run. Raises InputError for a scenario the simulator cannot play."""
    templates = []
    here = os.getcwd()  # the agent's working directory
    for target in targets:
        cases = {c.eval_id: c for c in target.loaded.eval_set.eval_cases}
        eval_file = Path(os.path.relpath(os.path.abspath(target.loaded.path), here)).as_posix()
        for case_id in target.case_ids:
            case = cases[case_id]
            _check_persona_template(target, case)
            simulator = target.config.user_simulator if case.conversation_scenario else None
            templates.append(RunJob(eval_set_id=target.eval_set_id, eval_set_path=target.path,
                                    case=case, run=1,
                                    turn_timeout=options.turn_timeout,
                                    app_name=options.app_name if options.agent_url else None,
                                    user_simulator=simulator, eval_file=eval_file))
    return RunPlan(templates, options.num_runs)


def make_runner(options: AgentOptions) -> AgentRunner:
    """The runner of ``options``' agent; an agent serving concurrent sessions is told it may
    get up to ``options.schedule.sessions()`` runs at once (an API server: connections for them)."""
    sessions = options.schedule.sessions()
    if options.agent_command:
        from .stdio import StdioRunner

        return StdioRunner(options.agent_command, cwd=Path.cwd(), sandbox=options.sandbox,
                           sessions=sessions, early=options.early)
    if options.agent_url:
        from .api_server import ApiServerRunner

        return ApiServerRunner(options.agent_url, server_command=options.agent_server_command,
                               cwd=Path.cwd(), concurrency=sessions, sandbox=options.sandbox)
    raise ValueError("no agent to run: give --agent-command or --agent-url")


async def run_agent_jobs(targets: list[EvalTarget], options: AgentOptions, *,
                         runner: AgentRunner | None = None,
                         progress: Progress | None = None,
                         simulator_stats: SimulatorStats | None = None,
                         more: MoreRuns | None = None,
                         budget: TokenBudget | None = None,
                         service: ServiceWaits | None = None) -> list[RecordedRun]:
    """Every run of every selected case, in the input's order (``schedule_runs``' runs)."""
    scheduled = await schedule_runs(targets, options, runner=runner, progress=progress,
                                    simulator_stats=simulator_stats, more=more, budget=budget,
                                    service=service)
    return scheduled.runs


async def schedule_runs(targets: list[EvalTarget], options: AgentOptions, *,
                        runner: AgentRunner | None = None,
                        progress: Progress | None = None,
                        simulator_stats: SimulatorStats | None = None,
                        more: MoreRuns | None = None,
                        budget: TokenBudget | None = None,
                        service: ServiceWaits | None = None) -> ScheduledRuns:
    """Every run of every selected case, as many at once as the concurrency allows (fixed by
    ``options.schedule.concurrency``, else adapting up to its ``max_concurrency``), in the input's
    order whatever order they finish in, and what the concurrency did. A run the model
    service refused waits on ``service`` and is run again (agents/retrying.py). With
    ``more``, rounds of extra runs follow (one run per case a round) on the same runner
    until ``more`` answers none."""
    from .process import pidfd_child_watcher

    jobs = plan_jobs(targets, options)
    scheduler = Scheduler(jobs, runner if runner is not None else make_runner(options),
                          options.schedule, service if service is not None
                          else ServiceWaits(options.max_service_wait),
                          progress=progress, simulator_stats=simulator_stats, more=more,
                          budget=budget, targets=targets)
    with pidfd_child_watcher():
        return await scheduler.run()

