"""Every selected case, ``num_runs`` times, up to ``concurrency`` runs in flight.

Runs are independent (a fresh process or session each) and come back in input order -
eval set, case, run - whatever order they finish in. Ctrl-C cancels the runs in flight
(each kills its own agent) and raises RunInterrupted with the runs that had finished.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from functools import partial
from dataclasses import replace
from pathlib import Path
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import IO, TYPE_CHECKING

from ..errors import InputError
from ..models.evalset import EvalCase
from ..models.records import RecordedRun
from ..judges.meter import metering
from ..models.setkey import shown
from ..models.usage import TokenBudget, agent_tokens, usage_left_out
from ..safety.output import GuardedStream, clean, say
from ..safety.redact import Redactor
from .base import AgentRunner, RunJob
from .concurrency import API_CONCURRENCY, cpus, limit_to_files as _limit, settle as _settle
from .failfast import StartWatch, server_cannot_start
from .retrying import attempts, not_run
from .service_wait import ServiceWaits

if TYPE_CHECKING:
    from ..inputs.discover import EvalTarget
    from ..options import RunOptions
    from ..simulation.model import SimulatorStats


class RunInterrupted(Exception):
    """Ctrl-C: the runs that finished before it, in input order."""

    def __init__(self, finished: list[RecordedRun]):
        super().__init__("interrupted")
        self.finished = finished


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


def plan_jobs(targets: list[EvalTarget], options: RunOptions) -> RunPlan:
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


def make_runner(options: RunOptions) -> AgentRunner:
    if options.agent_command:
        from .stdio import StdioRunner

        return StdioRunner(options.agent_command, cwd=Path.cwd(), sandbox=options.sandbox)
    if options.agent_url:
        from .api_server import ApiServerRunner

        return ApiServerRunner(options.agent_url, server_command=options.agent_server_command,
                               cwd=Path.cwd(), concurrency=options.concurrency or API_CONCURRENCY,
                               sandbox=options.sandbox)
    raise ValueError("no agent to run: give --agent-command or --agent-url")


class Progress:
    """Cases done / total on stderr: one \\r-updated line on a terminal, and in CI logs
    (not a TTY, or CI=true) one line per finished case instead."""

    def __init__(self, jobs: RunPlan | list[RunJob], stream: IO[str] | None = None,
                 interactive: bool | None = None):
        self.stream = stream if stream is not None else sys.stderr
        if interactive is None:
            ci = os.environ.get("CI", "").lower() in ("true", "1", "yes")
            interactive = not ci and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.interactive = interactive
        self.remaining: dict[tuple[str, str], int] = {}
        self.errors: dict[tuple[str, str], list[RecordedRun]] = {}
        if isinstance(jobs, RunPlan):
            self.remaining = jobs.runs_per_case()
        else:
            for job in jobs:
                key = (job.key, job.eval_id)
                self.remaining[key] = self.remaining.get(key, 0) + 1
        self.runs_per_case = dict(self.remaining)
        self.total_cases = len(self.remaining)
        self.cases_done = 0
        self.failed_runs = 0
        self._drawn = False
        self._last_draw = 0.0
        self._hidden = Redactor()  # credentials learnt while running (hide)

    def _line(self) -> str:
        return (f"evalcheck: {self.cases_done}/{self.total_cases} cases done, "
                f"{self.failed_runs} failed run{'s' if self.failed_runs != 1 else ''}")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed stderr must not fail the runs
            pass

    def run_done(self, job: RunJob, run: RecordedRun) -> None:
        key = (job.key, job.eval_id)
        if run.error is not None and run.unavailable is None:  # a refusal is not a failed run
            self.failed_runs += 1
            self.errors.setdefault(key, []).append(run)
        self.remaining[key] -= 1
        case_done = self.remaining[key] == 0
        if case_done:
            self.cases_done += 1
        lines = []
        errored = sorted(self.errors.get(key, []), key=lambda r: r.run)
        if case_done and (errored or not self.interactive):
            lines.append(self._case_line(key, errored, self.runs_per_case[key]))
        if self.interactive and isinstance(self.stream, GuardedStream):
            now = time.monotonic()
            if lines or case_done or now - self._last_draw > 0.1:
                try:
                    self.stream.redraw(self._line(), lines, clear=self._drawn)
                except (OSError, ValueError):
                    pass
                self._drawn = True
                self._last_draw = now
        else:
            for line in lines:
                self._write(line + "\n")

    def hide(self, secrets: Iterable[str]) -> None:
        """Values no later line may show: credentials that became known while running (a
        simulated user's credential headers; the environment's are hidden by the guard)."""
        self._hidden.add(*secrets)

    def _case_line(self, key: tuple[str, str], errored: list[RecordedRun], runs: int) -> str:
        return self._hidden.text(self._case_text(key, errored, runs))

    def _case_text(self, key: tuple[str, str], errored: list[RecordedRun], runs: int) -> str:
        prefix = f"evalcheck: [{self.cases_done}/{self.total_cases}] {clean(shown(key[0]))}/{clean(key[1])}:"
        if not errored:
            return f"{prefix} {runs} run{'s' if runs != 1 else ''} done"
        parts = [f"run {r.run}: {clean(r.error or '', 300)}" for r in errored]
        text = f"{prefix} {len(errored)} of {runs} runs errored - " + "; ".join(parts)
        tail = errored[-1].stderr_tail
        if tail:  # the last lines of the agent's log, where its own error usually is
            text += f"\n    last agent output (run {errored[-1].run}):"
            text += "".join("\n    | " + clean(line, 200) for line in tail.splitlines()[-5:])
        return text

    def add_jobs(self, jobs: list[RunJob]) -> None:
        """Extra runs (adaptive runs): their cases are open again until these finish."""
        for job in jobs:
            key = (job.key, job.eval_id)
            if self.remaining.get(key, 0) == 0 and key in self.remaining:
                self.cases_done -= 1
            self.remaining[key] = self.remaining.get(key, 0) + 1
            self.runs_per_case[key] = self.runs_per_case.get(key, 0) + 1

    def close(self) -> None:
        if self.interactive and self._drawn:
            self._write("\n")


# Adaptive runs (``--max-runs``): called with the runs of each finished round, answers which
# cases - (eval set id, eval id) - get one more run in the next round; [] ends the runs.
MoreRuns = Callable[[list[RecordedRun]], Awaitable[list[tuple[str, str]]]]


async def run_agent_jobs(targets: list[EvalTarget], options: RunOptions, *,
                         runner: AgentRunner | None = None,
                         progress: Progress | None = None,
                         simulator_stats: SimulatorStats | None = None,
                         more: MoreRuns | None = None,
                         budget: TokenBudget | None = None,
                         service: ServiceWaits | None = None) -> list[RecordedRun]:
    """Every run of every selected case, at most ``options.concurrency`` at once, in the
    input's order whatever order they finish in. With ``more``, rounds of extra runs follow
    (one run per case a round) on the same runner until ``more`` answers none.

    ``options.concurrency`` None is the default that fits the agent (docs/agent-protocol.md):
    it is decided here, printed, and set in ``options`` (the results' metadata shows it)."""
    from .process import pidfd_child_watcher

    if options.concurrency is None and options.agent_url:
        options.concurrency = API_CONCURRENCY  # as before: the server's own concern
    if options.concurrency is not None:
        options.concurrency = _limit(options.concurrency)
    with pidfd_child_watcher():
        return await _run_jobs(targets, options, runner, progress, simulator_stats, more, budget,
                               service if service is not None
                               else ServiceWaits(options.max_service_wait))


async def _attempt(runner: AgentRunner, job: RunJob) -> RecordedRun:
    try:
        return await runner.run(job)
    except Exception as exc:  # a runner bug fails this run, not the others
        return job.record(error=f"internal error: {type(exc).__name__}: {exc}")


async def _drain(feed: Iterator[RunJob], one: Callable[[RunJob], Awaitable[None]]) -> None:
    """One worker: runs the jobs it takes from ``feed`` (shared by all workers), one by one."""
    for job in feed:
        await one(job)


async def _run_jobs(targets: list[EvalTarget], options: RunOptions, runner: AgentRunner | None,  # noqa: C901 -- issue 42 splits it
                    progress: Progress | None,
                    simulator_stats: SimulatorStats | None,
                    more: MoreRuns | None = None,
                    budget: TokenBudget | None = None,
                    service: ServiceWaits | None = None) -> list[RecordedRun]:
    jobs = plan_jobs(targets, options)
    service = service if service is not None else ServiceWaits(options.max_service_wait)
    runner = runner if runner is not None else make_runner(options)
    progress = progress if progress is not None else Progress(jobs)
    finished: list[RecordedRun] = []
    # None: the default, decided once the first process has said what kind of agent it is.
    concurrency = options.concurrency
    simulation = None
    if any(job.case.conversation_scenario is not None for job in jobs.templates):
        # Simulated users call Gemini like judges do, under the same --judge-concurrency
        # limit, uncached. A service of this event loop (scoring runs in another one).
        from ..judges.service import JudgeService
        from ..simulation.model import JudgeServiceModel

        from ..judges.limits import JudgeLimits

        simulation = JudgeService(concurrency=options.judge_concurrency, shared={},
                                  limits=JudgeLimits.from_env(os.environ))
        model = JudgeServiceModel(simulation, simulator_stats)
        jobs.templates = [replace(job, user_model=model) if job.case.conversation_scenario
                          is not None else job for job in jobs.templates]
    # Input order of the cases, and each case's job to copy for an extra run.
    order: dict[tuple[str, str], int] = {}
    template: dict[tuple[str, str], RunJob] = {}
    for job in jobs.templates:
        key = (job.key, job.eval_id)
        order.setdefault(key, len(order))
        template.setdefault(key, job)

    watch = StartWatch(len(jobs), concurrency or cpus())
    # The default concurrency, said once the run goes on (not before a fail-fast stop,
    # which is one message alone).
    note: list[str] = []

    def say_note() -> None:
        if note:
            say(note.pop(), err=True)

    async def one(job: RunJob) -> None:
        # At most one run at a time per worker task: the tasks are the concurrency limit.
        if watch.stopped:
            return
        if budget is not None and budget.spent():  # --max-agent-tokens: no further run starts
            budget.refused += 1
            budget.skipped.append((job.key, job.eval_id, job.run))
            progress.run_done(job, job.record())
            return
        # The simulated user's model calls are metered per run (judges/meter.py), every
        # attempt's: they were spent whether or not the attempt counts.
        if service.given_up is not None:  # the model service kept refusing: no run starts
            run = not_run(job, service)
            finished.append(run)
            progress.run_done(job, run)
            return
        with metering() as meter:
            run = await attempts(partial(_attempt, runner, job), options.retries, service,
                                 lambda: watch.stopped)
        if (left_out := usage_left_out(run)) is not None:
            say(f"evalcheck: warning: {clean(left_out, 300)}", err=True)
        run.simulator_usage = meter.tokens
        if budget is not None:  # running a case costs the agent's and its simulated user's tokens
            budget.charge(getattr(agent_tokens(run.invocations), "total", 0)
                          + getattr(meter.tokens, "total", 0))
        finished.append(run)
        if simulation is not None:  # its credential headers are known once it has called
            progress.hide(simulation.credentials)
        for done_job, done_run in watch.observe(job, run):
            say_note()
            progress.run_done(done_job, done_run)

    tasks: list[asyncio.Task] = []
    try:
        start = getattr(runner, "start", None)
        if start is not None:
            from .api_server import ServerStartError

            try:
                await start()
            except ServerStartError as exc:
                raise server_cannot_start(exc) from None
            apps = getattr(runner, "apps", None)
            if apps is not None:  # an ADK API server listed its apps
                from .apps import check_served

                check_served(apps, jobs.templates, targets, getattr(runner, "url", ""))
        round_jobs: RunPlan | list[RunJob] = jobs
        runs_of = {key: 0 for key in order}
        while len(round_jobs):
            done_before = len(finished)
            # A task per run in flight, not per run: memory does not grow with the runs.
            feed = iter(round_jobs)
            tasks = [asyncio.ensure_future(_drain(feed, one))
                     for _ in range(min(concurrency or 1, len(round_jobs)))]
            if concurrency is None:
                concurrency, why = await _settle(runner, tasks)
                concurrency = options.concurrency = _limit(concurrency)
                if why is not None:
                    note.append(f"evalcheck: concurrency {concurrency} ({why}; --concurrency "
                                "to change)")
                watch.resize(concurrency)
                tasks += [asyncio.ensure_future(_drain(feed, one))
                          for _ in range(min(concurrency, len(round_jobs)) - 1)]
            await asyncio.gather(*tasks)
            if watch.verdict is not None:  # the agent cannot start: stop, one message
                raise watch.verdict
            say_note()
            if isinstance(round_jobs, RunPlan):
                runs_of = round_jobs.runs_per_case()
            else:
                for job in round_jobs:
                    key = (job.key, job.eval_id)
                    runs_of[key] = max(runs_of[key], job.run)
            if more is None or service.given_up is not None:
                break  # (no confirmation run against a service that keeps refusing)
            wanted = await more(finished[done_before:])
            round_jobs = []
            for key in wanted:  # a key given k times gets k more runs
                runs_of[key] += 1
                round_jobs.append(replace(template[key], run=runs_of[key]))
            progress.add_jobs(round_jobs)
    except (asyncio.CancelledError, KeyboardInterrupt):
        for task in tasks:
            task.cancel()
        # Each cancelled run kills its own agent in its finally block: wait for that.
        await asyncio.gather(*tasks, return_exceptions=True)
        raise RunInterrupted(_in_order(finished, order)) from None
    finally:
        await runner.aclose()
        if simulation is not None:
            await simulation.aclose()
            if simulator_stats is not None:
                simulator_stats.credentials |= simulation.credentials
        progress.close()
    return _in_order(finished, order)


def _in_order(runs: list[RecordedRun], order: dict[tuple[str, str], int]) -> list[RecordedRun]:
    return sorted(runs, key=lambda r: (order[(r.key, r.eval_id)], r.run))
