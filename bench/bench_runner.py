"""Benchmark of the agent runner (prints figures; not a test).

200 cases x 3 runs, one turn each, against a tiny ``sh`` agent that sleeps 50 ms per turn,
at concurrency 1, 4 and 16. For each: wall time against the ideal (total agent time /
concurrency), the overhead per run and per turn, and where it goes:

- spawn: starting and reaping an empty ``/bin/sh -c true`` process group, measured alone;
- turn: a turn's measured duration minus the 50 ms the agent sleeps (protocol round trip,
  plus the agent's own fork of ``sleep``);
- the rest: the checker's own work per run (pipes, readers, exit and group checks).

    python bench/bench_runner.py [--cases 200] [--runs 3] [--sleep 0.05] [--concurrency 1 4 16]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import tempfile
import time
from pathlib import Path

from checker.inputs.discover import discover
from checker.commands.stage_options import agent_options
from checker.options import RunOptions
from checker.agents.process import kill_group, reap, spawn
from checker.agents.schedule import Progress, plan_jobs, run_agent_jobs

AGENT = ("read start; n=0; while read line; do n=$((n+1)); sleep {sleep}; "
         "echo '{{\"type\":\"response\",\"invocationId\":\"inv-'$n'\",\"finalResponse\":\"ok\"}}'; done")


def write_eval_set(folder: Path, cases: int) -> Path:
    import json

    path = folder / "bench.evalset.json"
    path.write_text(json.dumps({"eval_set_id": "bench", "eval_cases": [
        {"eval_id": f"case_{i:03d}",
         "conversation": [{"user_content": {"role": "user", "parts": [{"text": f"question {i}"}]},
                           "final_response": {"role": "model", "parts": [{"text": "ok"}]}}]}
        for i in range(cases)]}))
    return path


async def spawn_cost(samples: int = 100) -> float:
    """Seconds to start, wait for and clean up an empty process group."""
    began = time.perf_counter()
    for _ in range(samples):
        proc = await spawn("true", cwd=None, env={"PATH": "/usr/bin:/bin"})
        await proc.wait()
        await kill_group(proc.pid)
        await reap(proc)
    return (time.perf_counter() - began) / samples


def _cpu() -> tuple[float, float]:
    """CPU seconds (user + system) of the checker itself and of its finished children."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


class Quiet(Progress):
    def run_done(self, job, run):  # the benchmark prints its own figures
        if run.error:
            print("run error:", run.error)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sleep", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = write_eval_set(Path(tmp), args.cases)
        targets = discover([str(path)], root=Path(tmp)).targets
        spawn_s = asyncio.run(spawn_cost())
        total_runs = args.cases * args.runs
        print(f"{args.cases} cases x {args.runs} runs = {total_runs} runs of 1 turn; agent sleeps "
              f"{args.sleep * 1000:.0f} ms per turn; empty process group start+reap: "
              f"{spawn_s * 1000:.1f} ms")
        cores = os.cpu_count() or 1
        print(f"{'K':>3} {'wall s':>8} {'ideal s':>8} {'ratio':>6} {'ovh/run ms':>11} "
              f"{'turn ovh ms (median/p95)':>25} {'peak RSS MiB':>13} "
              f"{'checker CPU ms/run':>19} {'agents CPU ms/run':>18} {'CPU floor s':>12}")
        for k in args.concurrency:
            options = RunOptions(paths=[str(path)], agent_command=AGENT.format(sleep=args.sleep),
                                 num_runs=args.runs, concurrency=k)
            cpu0 = _cpu()
            began = time.perf_counter()
            runs = asyncio.run(run_agent_jobs(targets, agent_options(options),
                                              progress=Quiet(plan_jobs(targets, agent_options(options)))))
            wall = time.perf_counter() - began
            assert len(runs) == total_runs and not any(r.error for r in runs)
            ideal = total_runs * args.sleep / k
            per_run = (wall * k / total_runs - args.sleep) * 1000
            turn = sorted((i.duration - args.sleep) * 1000 for r in runs for i in r.invocations)
            p95 = turn[int(len(turn) * 0.95)]
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            own, children = (after - before for after, before in zip(_cpu(), cpu0))
            # What the CPUs must do at the least: every agent's and the checker's CPU time,
            # spread over all cores (the sleeps cost nothing).
            floor = (own + children) / cores
            print(f"{k:>3} {wall:>8.2f} {ideal:>8.2f} {wall / ideal:>6.2f} {per_run:>11.1f} "
                  f"{statistics.median(turn):>12.1f} / {p95:<10.1f} {rss:>13.1f} "
                  f"{own / total_runs * 1000:>19.2f} {children / total_runs * 1000:>18.2f} "
                  f"{floor:>12.2f}")
        print(f"{cores} CPU cores")


if __name__ == "__main__":
    main()
