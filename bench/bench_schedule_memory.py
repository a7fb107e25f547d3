"""Benchmark: memory of scheduling many runs (prints figures; not a test).

``run_agent_jobs`` keeps one task per run in flight (``--concurrency`` workers pulling from
the planned runs, each run's job made when taken), where it used to create one task and one
job per run up front. Both schedule the
same planned runs on an agent that answers at once, side by side; the figure is the peak
of Python allocations (tracemalloc) over the whole scheduling, results included (those are
the output and grow with the runs either way). A shared machine makes times noisy.

    python bench/bench_schedule_memory.py [--cases 2000,10000] [--runs 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import tracemalloc
from pathlib import Path

from checker.inputs.criteria import default_config
from checker.inputs.discover import EvalTarget
from checker.inputs.evalfile import LoadedEvalSet
from checker.models.evalset import EvalSet
from checker.models.records import RecordedRun
from checker.commands.stage_options import agent_options
from checker.options import RunOptions
from checker.agents.schedule import Progress, plan_jobs, run_agent_jobs


class Instant:
    """An agent runner that answers every run at once (what is measured is the scheduling)."""

    async def run(self, job):
        await asyncio.sleep(0)
        return RecordedRun(eval_set_id=job.eval_set_id, eval_id=job.eval_id, run=job.run, invocations=[])

    async def aclose(self):
        return None


def target(cases: int) -> EvalTarget:
    eval_set = EvalSet.model_validate({"eval_set_id": "s", "eval_cases": [
        {"eval_id": f"c{i}", "conversation": []} for i in range(cases)]})
    return EvalTarget(LoadedEvalSet(eval_set, Path("s.evalset.json"), "s"), default_config(),
                      [c.eval_id for c in eval_set.eval_cases])


async def previous_way(targets, options):
    """One task per run and every run's job, all created up front (the scheduling before
    issue 11)."""
    runner, limit = Instant(), asyncio.Semaphore(options.concurrency)
    jobs = list(plan_jobs(targets, agent_options(options)))
    results = [None] * len(jobs)

    async def one(i, job):
        async with limit:
            results[i] = await runner.run(job)

    await asyncio.gather(*[asyncio.ensure_future(one(i, j)) for i, j in enumerate(jobs)])
    return results


def measure(make) -> tuple[float, float, int]:
    tracemalloc.start()
    t0 = time.perf_counter()
    runs = asyncio.run(make())
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 1e6, seconds, len(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="2000,10000")
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    os.environ["CI"] = "true"  # progress as lines, which go to /dev/null below
    sys.stderr = open(os.devnull, "w")
    print(f"{'runs':>8} {'previous MB':>12} {'current MB':>11} {'previous s':>11} {'current s':>10}")
    for cases in (int(c) for c in args.cases.split(",")):
        targets = [target(cases)]
        options = RunOptions(num_runs=args.runs, concurrency=4)
        old_mb, old_s, n = measure(lambda: previous_way(targets, options))
        new_mb, new_s, m = measure(lambda: run_agent_jobs(targets, agent_options(options), runner=Instant(),
                                                          progress=Progress(plan_jobs(targets, agent_options(options)))))
        assert n == m == cases * args.runs
        print(f"{n:>8} {old_mb:12.1f} {new_mb:11.1f} {old_s:11.1f} {new_s:10.1f}")


if __name__ == "__main__":
    main()
