"""What made replaying 10,000 cases slow stays gone (bench/bench_replay.py, issue 25): the
cyclic collector's full passes, and a task per (run, metric)."""

from __future__ import annotations

import asyncio
import gc

import checker.aio
import checker.commands.run
from checker.inputs.bulk import RUN_GC_THRESHOLD
from corehelpers import case, evalset, invocation, replay, run_cli, write_json

CASES = 6


def _suite(repo):
    write_json(repo / "e/s.evalset.json", evalset("s", *(case(f"c{n}") for n in range(CASES))))
    write_json(repo / "runs.json", replay(*((("s", f"c{n}", r, [invocation()])
                                            for n in range(CASES) for r in (1, 2)))))


def test_the_collector_runs_less_often_during_a_run_only(repo, monkeypatch):
    seen = []
    for stage in ("read_inputs", "score", "write"):
        real = getattr(checker.commands.run, stage)

        def spy(*args, real=real, **kwargs):
            seen.append(gc.get_threshold()[0])
            return real(*args, **kwargs)

        monkeypatch.setattr(checker.commands.run, stage, spy)
    before = gc.get_threshold()
    _suite(repo)
    out = run_cli(["run", "e", "--replay", "runs.json", "--results", "r.json"], repo)
    assert out.code == 0, out.output
    assert seen == [RUN_GC_THRESHOLD] * 3 and RUN_GC_THRESHOLD > before[0]
    assert gc.get_threshold() == before


def test_deterministic_metrics_are_no_tasks(repo, monkeypatch):
    """One task per case (they are scored in a window); none per run and metric: the
    metrics that await a judge are the ones that need tasks to overlap."""
    created = []
    real_run = checker.aio.run

    def counting(coro):
        async def main():
            loop = asyncio.get_running_loop()
            loop.set_task_factory(lambda loop, c, **kw: created.append(c) or asyncio.Task(c, loop=loop, **kw))
            return await coro

        return real_run(main())

    monkeypatch.setattr(checker.aio, "run", counting)
    _suite(repo)
    out = run_cli(["run", "e", "--replay", "runs.json", "--results", "r.json"], repo)
    assert out.code == 0, out.output
    assert CASES <= len(created) <= CASES + 2, [getattr(c, "__qualname__", c) for c in created]
