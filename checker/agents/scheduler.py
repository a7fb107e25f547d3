"""The runs of a plan on one runner, as many at once as one AdaptiveLimiter allows.

Workers take slots of the limiter, then the next job of the plan; a run holds its slot through
its attempts and the waits between them: a refused run is still in flight (the slot it freed
would start another run into the refusing service at once, refused in turn), and it gives the
slot up before its next attempt only when the limit was cut under the runs in flight. The default
concurrency starts once the first agent process has said what kind it is (the first run
goes alone until then) and adapts from there (limiter.py; for an agent serving sessions, also
from how busy its process keeps a CPU: agents/cpu_use.py); ``--concurrency N`` fixes
it. Runs come back in input order - eval set, case, run - whatever order they finish in;
with ``more``, rounds of extra runs follow on the same runner. What was decided (the
concurrency over the run) is returned, never written into the options.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..judges.meter import metering
from ..models.records import RecordedRun
from ..models.usage import TokenBudget, agent_tokens, usage_left_out
from ..safety.output import clean, say
from .base import AgentRunner, RunJob
from .concurrency import API_CONCURRENCY, cpus, limit_to_files, settle
from .failfast import StartWatch, server_cannot_start
from ..limiter import AdaptiveLimiter, ConcurrencyHistory, HeldSlot
from .progress import Progress
from .retrying import attempts, not_run
from .service_wait import ServiceWaits

if TYPE_CHECKING:
    from ..inputs.discover import EvalTarget
    from ..judges.service import JudgeService
    from ..simulation.model import SimulatorStats

DEFAULT_MAX_CONCURRENCY = 32  # --max-concurrency: what the default grows to at most
SESSIONS_START = 8  # an agent serving as many sessions as asked starts with this many
LOAD_TICK = 0.25  # how often the CPU use of an agent serving sessions is looked at (limiter.py)

RunKey = tuple[str, str]
# Adaptive runs (``--max-runs``): called with the runs of each finished round, answers which
# cases - (eval set id, eval id) - get one more run in the next round; [] ends the runs.
MoreRuns = Callable[[list[RecordedRun]], Awaitable[list[RunKey]]]


class RunInterrupted(Exception):
    """Ctrl-C: the runs that finished before it, in input order, and how many were planned
    by then (the first runs, and the extra rounds asked for so far)."""

    def __init__(self, finished: list[RecordedRun], planned: int = 0):
        super().__init__("interrupted")
        self.finished = finished
        self.planned = max(planned, len(finished))


@dataclass(frozen=True)
class ScheduleOptions:
    """What scheduling takes of a run's options."""

    concurrency: int | None = None  # --concurrency: fixed; None adapts
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    retries: int = 1
    judge_concurrency: int = 8  # the simulated users' model calls share the judges' limit
    agent_url: bool = False  # an ADK API server: its default start is ADK's own eval's

    def sessions(self) -> int:
        """The most runs ever in flight (an agent serving concurrent sessions is told it)."""
        return self.concurrency or self.max_concurrency


@dataclass(frozen=True)
class ScheduledRuns:
    """Every run, in input order, and what the concurrency did."""

    runs: list[RecordedRun]
    concurrency: ConcurrencyHistory


class Scheduler:
    """Runs ``jobs`` (a RunPlan or a list of RunJob) on ``runner``; ``run()`` once."""

    def __init__(self, jobs: Any, runner: AgentRunner, options: ScheduleOptions,
                 service: ServiceWaits, *,
                 progress: Progress | None = None, simulator_stats: SimulatorStats | None = None,
                 more: MoreRuns | None = None, budget: TokenBudget | None = None,
                 targets: list[EvalTarget] | None = None):
        self.jobs = jobs
        self.runner = runner
        self.options = options
        self.progress = progress if progress is not None else Progress(jobs)
        self.simulator_stats = simulator_stats
        self.more = more
        self.budget = budget
        self.targets = targets or []
        self.finished: list[RecordedRun] = []
        self.planned = len(jobs)  # runs planned so far: the first runs, then each round asked for
        self.limiter = self._limiter()
        self.progress.watch(self.limiter)
        self.service = service  # the waits on a refusing model service, which cut the limit
        if service.limiter is None:
            service.limiter = self.limiter
        if hasattr(runner, "on_refusal"):  # an agent retrying a refused call itself tells it
            runner.on_refusal = service.told
        self.settled = options.concurrency is not None or options.agent_url
        self.watch = StartWatch(len(jobs), self.limiter.limit if self.settled else cpus())
        self.notes: list[str] = []  # the default concurrency, said once the run goes on
        self.simulation = self._simulated_users()
        self.order: dict[RunKey, int] = {}
        self.template: dict[RunKey, RunJob] = {}  # each case's job, to copy for an extra run
        for job in self.jobs.templates if hasattr(self.jobs, "templates") else self.jobs:
            self.order.setdefault((job.key, job.eval_id), len(self.order))
            self.template.setdefault((job.key, job.eval_id), job)
        self.tasks: list[asyncio.Future[Any]] = []
        self.load_watch: asyncio.Future[None] | None = None  # _watch_agent_load

    def _limiter(self) -> AdaptiveLimiter:
        fixed = self.options.concurrency
        if fixed is not None:
            n = limit_to_files(fixed)
            return AdaptiveLimiter(n, n, fixed=True)
        cap = limit_to_files(self.options.max_concurrency)
        # An API server's default is ADK's own eval's; otherwise the first run goes alone
        # until its agent has said what kind it is (settle).
        return AdaptiveLimiter(API_CONCURRENCY if self.options.agent_url else 1, cap)

    def _simulated_users(self) -> JudgeService | None:
        """Simulated users call Gemini as judges do, under the same --judge-concurrency
        limit, uncached: a service of this event loop (scoring runs in another one)."""
        templates = getattr(self.jobs, "templates", None)
        if templates is None or all(job.case.conversation_scenario is None for job in templates):
            return None
        from ..judges.limits import JudgeLimits
        from ..judges.service import JudgeService
        from ..simulation.model import JudgeServiceModel

        service = JudgeService(concurrency=self.options.judge_concurrency,
                               limits=JudgeLimits.from_env(os.environ))
        model = JudgeServiceModel(service, self.simulator_stats)
        self.jobs.templates = [replace(job, user_model=model) if job.case.conversation_scenario
                               is not None else job for job in templates]
        return service

    async def run(self) -> ScheduledRuns:
        """Every run, then the rounds ``more`` asks for. Raises RunInterrupted on Ctrl-C,
        AgentCannotStart when the agent cannot start."""
        try:
            await self._start_runner()
            round_jobs: Iterable[RunJob] = self.jobs
            runs_of = {key: 0 for key in self.order}
            while True:
                done_before = len(self.finished)
                await self._run_round(round_jobs)
                if self.watch.verdict is not None:  # the agent cannot start: stop, one message
                    raise self.watch.verdict
                self._say_notes()
                planned = getattr(round_jobs, "runs_per_case", None)
                if planned is not None:  # a RunPlan: without making its jobs again
                    runs_of.update(planned())
                else:
                    for job in round_jobs:
                        key = (job.key, job.eval_id)
                        runs_of[key] = max(runs_of[key], job.run)
                if self.service.given_up is not None:
                    break  # no confirmation run against a service that keeps refusing
                round_jobs = await self._next_round(self.finished[done_before:], runs_of)
                if not round_jobs:
                    break
        except (asyncio.CancelledError, KeyboardInterrupt):
            await self._cancel()
            raise RunInterrupted(self._in_order(), self.planned) from None
        finally:
            await self._close()
        return ScheduledRuns(self._in_order(), self.limiter.report())

    async def _start_runner(self) -> None:
        """An ADK API server: started (or found), and checked to serve every app."""
        start = getattr(self.runner, "start", None)
        if start is None:
            return
        from .api_server import ServerStartError

        try:
            await start()
        except ServerStartError as exc:
            raise server_cannot_start(exc) from None
        apps = getattr(self.runner, "apps", None)
        if apps is not None:  # an ADK API server listed its apps
            from .apps import check_served

            failures = getattr(self.runner, "load_failures", None)
            check_served(apps, self.jobs.templates, self.targets, getattr(self.runner, "url", ""),
                         failures() if callable(failures) else None)

    async def _run_round(self, round_jobs: Iterable[RunJob]) -> None:
        feed = iter(round_jobs)
        workers = min(self.limiter.cap, len(round_jobs))  # type: ignore[arg-type]
        # A worker per run that may be in flight (they wait for slots), not per run: memory
        # does not grow with the runs.
        self.tasks = [asyncio.ensure_future(self._worker(feed)) for _ in range(workers)]
        # No run, no agent to say what kind it is: settling would wait for it for ever.
        if not self.settled and workers:
            self.tasks.append(asyncio.ensure_future(self._settle()))
        try:
            await asyncio.gather(*self.tasks)
        finally:
            if self.load_watch is not None:  # the first round's runs are what it helps start
                self.load_watch.cancel()

    async def _settle(self) -> None:
        """The default start, once the first agent process has said what kind it is."""
        workers = [task for task in self.tasks if task is not asyncio.current_task()]
        start = await settle(self.runner, workers, self.options.sessions())
        self.settled = True
        # An agent serving as many sessions as asked starts lower, and adapts.
        self.limiter.begin_at(min(start.runs, SESSIONS_START) if start.as_asked else start.runs)
        self.watch.resize(self.limiter.limit)
        serving = getattr(self.runner, "serving_processes", None)
        if start.as_asked and serving is not None and self.limiter.grows_when_idle():
            self.load_watch = asyncio.ensure_future(self._watch_agent_load(serving))
        if start.why is not None:
            self.notes.append(f"evalcheck: concurrency {self.limiter.limit}, adapting up to "
                              f"{self.limiter.cap} ({start.why}; --concurrency N fixes it)")

    async def _watch_agent_load(self, serving: Callable[[], list[int]]) -> None:
        """While the limit may grow for an idle agent: how busy the processes serving its
        sessions keep a CPU, told to the limiter every LOAD_TICK (none where the kernel
        does not tell)."""
        from .cpu_use import BusyShare

        look = BusyShare()
        look.share(serving())
        while self.limiter.grows_when_idle():
            began = time.monotonic()
            await asyncio.sleep(LOAD_TICK)
            share = look.share(serving())
            if share is not None:
                self.limiter.note_agent_busy(share, time.monotonic() - began)

    def _say_notes(self) -> None:
        while self.notes:
            say(self.notes.pop(0), err=True)

    async def _worker(self, feed: Iterator[RunJob]) -> None:
        """Takes a slot, then the next job, until there is none."""
        while True:
            await self.limiter.acquire()
            job = next(feed, None)
            if job is None:
                self.limiter.release()
                return
            await self._run_one(job)

    async def _run_one(self, job: RunJob) -> None:
        """One job, entered with a slot for its first attempt."""
        if self.watch.stopped:
            self.limiter.release()
            return
        budget = self.budget
        if budget is not None and budget.spent():  # --max-agent-tokens: no further run starts
            self.limiter.release()
            budget.refused += 1
            budget.skipped.append((job.key, job.eval_id, job.run))
            self.progress.run_done(job, job.record())
            return
        if self.service.given_up is not None:  # the model service kept refusing: no run starts
            self.limiter.release()
            run = not_run(job, self.service)
            self.finished.append(run)
            self.progress.run_done(job, run)
            return
        # The simulated user's model calls are metered per run (judges/meter.py), every
        # attempt's: they were spent whether or not the attempt counts.
        with metering() as meter:
            run = await self._attempts(job)
        if (left_out := usage_left_out(run)) is not None:
            say(f"evalcheck: warning: {clean(left_out, 300)}", err=True)
        run.simulator_usage = meter.tokens
        if budget is not None:  # running a case costs the agent's and its simulated user's tokens
            budget.charge(getattr(agent_tokens(run.invocations), "total", 0)
                          + getattr(meter.tokens, "total", 0))
        self._done(job, run)

    async def _attempts(self, job: RunJob) -> RecordedRun:
        """The run, again if its agent errored once it had started (--retries: one crash
        must not decide a comparison), or after a wait when the model service refused it
        (agents/retrying.py); in the slot its worker took, held until the run ends."""
        slot = HeldSlot(self.limiter, held=True)

        async def attempt() -> RecordedRun:
            await slot.again()
            return await self._attempt(job)

        try:
            return await attempts(attempt, self.options.retries, self.service,
                                  lambda: self.watch.stopped)
        finally:
            slot.release()

    async def _attempt(self, job: RunJob) -> RecordedRun:
        """One attempt, in the run's slot of the limiter, which learns how long it took when
        it went through."""
        try:
            run = await self.runner.run(job)
        except Exception as exc:  # a runner bug fails this run, not the others
            run = job.record(error=f"internal error: {type(exc).__name__}: {exc}")
        # A run whose agent waited out refused calls itself is slow by those waits, not by
        # the load: the refusals were told to the limiter already.
        if run.error is None and run.unavailable is None and not run.refusals \
                and run.duration_seconds is not None:
            self.limiter.note_latency(run.duration_seconds, len(run.invocations))
        return run

    def _done(self, job: RunJob, run: RecordedRun) -> None:
        self.finished.append(run)
        if self.simulation is not None:  # its credential headers are known once it has called
            self.progress.hide(self.simulation.credentials)
        for done_job, done_run in self.watch.observe(job, run):
            self._say_notes()
            self.progress.run_done(done_job, done_run)

    async def _next_round(self, finished: list[RecordedRun], runs_of: dict[RunKey, int]) -> list[RunJob]:
        """The extra runs ``more`` asks for after a round: a key given k times gets k."""
        if self.more is None:
            return []
        wanted = await self.more(finished)
        jobs = []
        for key in wanted:
            runs_of[key] += 1
            jobs.append(replace(self.template[key], run=runs_of[key]))
        self.progress.add_jobs(jobs)
        self.planned += len(jobs)
        return jobs

    async def _cancel(self) -> None:
        for task in self.tasks:
            # Once each: a run the cancelled gather has already cancelled is killing its
            # agent in its finally block, and a second cancel would stop that half-way.
            if not task.done() and not (isinstance(task, asyncio.Task) and task.cancelling()):
                task.cancel()
        # Each cancelled run kills its own agent in its finally block: wait for that.
        await asyncio.gather(*self.tasks, return_exceptions=True)

    async def _close(self) -> None:
        await self.runner.aclose()
        if self.simulation is not None:
            await self.simulation.aclose()
            if self.simulator_stats is not None:
                self.simulator_stats.credentials |= self.simulation.credentials
        self.progress.close()

    def _in_order(self) -> list[RecordedRun]:
        return sorted(self.finished, key=lambda r: (self.order[(r.key, r.eval_id)], r.run))
