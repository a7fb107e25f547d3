"""Benchmark of sharding and merging (prints figures; not a test).

1. Balance: a suite of --cases cases (1 to 8 turns each, --runs runs) split in --shards
   shards by turns x runs, and again by a baseline's durations (log-normal seconds per
   turn, as LLM agents have): the most expensive shard's estimated cost against the mean.
   Target: within 10% of the mean.
2. Merge: the suite is run for real in replay mode, one `run --shard I/N` per shard, and
   `evalcheck merge` of the N results files (plus their recorded runs) is timed, best of
   --repeat. Target: 8 files of 375 cases x 3 runs in under 1 s.

    python bench/bench_shards.py [--cases 3000] [--shards 8] [--runs 3] [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import tempfile
import time
from pathlib import Path

from checker.inputs.discover import discover
from checker.commands.run import RunOptions, execute
from checker.commands.merge import MergeRequest, merge_files
from checker.scale.shards import expected_costs, shard_loads


def write_suite(root: Path, cases: int, runs: int, rnd: random.Random) -> dict[tuple[str, str], int]:
    turns_of: dict[tuple[str, str], int] = {}
    per_set = 500
    recorded = []
    for s in range((cases + per_set - 1) // per_set):
        set_id = f"set{s}"
        eval_cases = []
        for n in range(min(per_set, cases - s * per_set)):
            eval_id = f"case{n:04d}"
            turns = rnd.randint(1, 8)
            turns_of[(set_id, eval_id)] = turns
            conversation = [{"invocation_id": f"i{t}",
                             "user_content": {"role": "user", "parts": [{"text": f"question {t}"}]},
                             "final_response": {"role": "model", "parts": [{"text": "sunny in Paris"}]},
                             "intermediate_data": {"tool_uses": [{"name": "weather", "args": {"city": "Paris"}}]}}
                            for t in range(turns)]
            eval_cases.append({"eval_id": eval_id, "conversation": conversation})
            for run in range(1, runs + 1):
                recorded.append({"evalSetId": set_id, "evalId": eval_id, "run": run,
                                 "invocations": conversation})
        (root / "evals").mkdir(parents=True, exist_ok=True)
        (root / f"evals/{set_id}.evalset.json").write_text(
            json.dumps({"eval_set_id": set_id, "eval_cases": eval_cases}))
    (root / "evals/test_config.json").write_text(json.dumps(
        {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}))
    (root / "recorded.json").write_text(json.dumps({"version": 1, "runs": recorded}))
    return turns_of


def spread(loads: list[float]) -> str:
    mean = sum(loads) / len(loads)
    return (f"max {max(loads):,.1f}  mean {mean:,.1f}  min {min(loads):,.1f}  "
            f"max/mean {max(loads) / mean:.4f} ({(max(loads) / mean - 1) * 100:+.2f}%)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=3000)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rnd = random.Random(14)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / ".git").mkdir()
        turns_of = write_suite(root, args.cases, args.runs, rnd)
        os.chdir(root)
        targets = discover(["evals"], root=root).targets

        print(f"1. balance: {args.cases} cases (1-8 turns), {args.runs} runs, {args.shards} shards")
        by_turns = shard_loads(expected_costs(targets, args.runs), args.shards)
        print(f"   turns x runs:       {spread(by_turns)}")
        durations = {key: (sum(rnd.lognormvariate(1.5, 0.8) for _ in range(turns * args.runs)), args.runs)
                     for key, turns in turns_of.items()}
        by_time = shard_loads(expected_costs(targets, args.runs, durations), args.shards)
        print(f"   baseline durations: {spread(by_time)} (seconds)")

        files = []
        started = time.perf_counter()
        for index in range(1, args.shards + 1):
            options = RunOptions(paths=["evals"], replay=root / "recorded.json",
                                 shard=f"{index}/{args.shards}", results=root / f"shard{index}.json",
                                 inference_out=root / f"runs{index}.json")
            with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
                execute(options)
            files += [root / f"shard{index}.json", root / f"runs{index}.json"]
        print(f"2. merge: {args.shards} shards run in replay mode in {time.perf_counter() - started:.1f} s")
        sizes = [sum(len(s["cases"]) for s in json.loads((root / f"shard{i}.json").read_text())["evalSets"])
                 for i in range(1, args.shards + 1)]
        print(f"   cases per shard: {sizes}; results file {(root / 'shard1.json').stat().st_size / 1e6:.1f} MB, "
              f"recorded runs {(root / 'runs1.json').stat().st_size / 1e6:.1f} MB (shard 1)")
        for label, inputs, extra in (("results files", files[::2], {}),
                                     ("results + recorded runs", files, {"inference_out": root / "m-runs.json"})):
            times, cpu = [], []
            for _ in range(args.repeat):
                clock, cpu_clock = time.perf_counter(), time.process_time()
                merged = merge_files(MergeRequest(files=inputs, results=root / "merged.json", **extra))
                times.append(time.perf_counter() - clock)
                cpu.append(time.process_time() - cpu_clock)
            print(f"   merge {label}: best {min(times):.3f} s wall, {min(cpu):.3f} s CPU of {args.repeat} "
                  f"({merged.summary.cases} cases, written)  target < 1 s")


if __name__ == "__main__":
    main()
