"""Benchmark: ``evalcheck merge`` of a hostile shard set beside its honest control (prints
figures; not a test).

A suite of --cases cases (one turn, --runs runs, two deterministic metrics) is run in replay
mode as --shards shards (``run --shard I/N``), and the shards merged once into main's
baseline. The control is those shards as a run whose behaviour changed on every case writes
them (another tool call, a 1,000-character answer of other words: 200 behaviour diffs and
word diffs to report); the hostile set is the same with its first shard crafted the way
issue 39 found: its cases share --trajectories distinct trajectories of --calls tool calls
each, and the first trajectory of --bloated of them a 45 KiB tool name, arguments nested 150
levels deep and an answer of --answer characters. Each merge is ``evalcheck merge SHARDS --baseline base.json --results
--markdown --html`` as its own process (imports included, as a user starts it), control and
hostile in turn, --repeat times; the median is reported. Target: the hostile merge within 2x
the control's time (before the read stage held shards to the writer's limits it took 55 s
and more against 3-8 s).

    python bench/bench_hostile_shard.py [--cases 2000] [--shards 4] [--runs 3] [--trajectories 20000]
                                        [--calls 30] [--bloated 20] [--answer 240000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from checker.commands.run import RunOptions, execute

BIN = Path(sys.executable).parent


def write_suite(root: Path, cases: int, runs: int) -> None:
    conversation = [{"invocation_id": "i0",
                     "user_content": {"role": "user", "parts": [{"text": "weather in Paris?"}]},
                     "final_response": {"role": "model", "parts": [{"text": "sunny in Paris"}]},
                     "intermediate_data": {"tool_uses": [{"name": "weather", "args": {"city": "Paris"}}]}}]
    eval_cases = [{"eval_id": f"case{n:04d}", "conversation": conversation} for n in range(cases)]
    (root / "evals").mkdir(parents=True)
    (root / "evals/w.evalset.json").write_text(json.dumps({"eval_set_id": "w", "eval_cases": eval_cases}))
    (root / "evals/test_config.json").write_text(json.dumps(
        {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}))
    recorded = [{"evalSetId": "w", "evalId": c["eval_id"], "run": r, "invocations": conversation}
                for c in eval_cases for r in range(1, runs + 1)]
    (root / "recorded.json").write_text(json.dumps({"version": 1, "runs": recorded}))


def run_shards(root: Path, shards: int) -> list[Path]:
    files = []
    for index in range(1, shards + 1):
        options = RunOptions(paths=["evals"], replay=root / "recorded.json", shard=f"{index}/{shards}",
                             results=root / f"shard{index}.json")
        with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
            execute(options)
        files.append(root / f"shard{index}.json")
    return files


def nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = {"n": value}
    return value


def words(case: int, length: int) -> str:
    return " ".join(f"w{case}x{i}" for i in range(length // 6))[:length]


def honest_trajectories(case: int, runs: int) -> list[dict[str, Any]]:
    """What a run whose behaviour changed writes: another call, a 1,000-character answer."""
    return [{"runs": list(range(1, runs + 1)), "turns": [{"calls": [{"name": "search", "args": {"q": f"case {case}"}}],
                                                          "response": words(case, 1000)}]}]


def hostile_trajectories(case: int, runs: int, args: argparse.Namespace, bloated: bool,
                         per_case: int) -> list[dict[str, Any]]:
    """The same, crafted: ``per_case`` trajectories of --calls calls each, and when
    ``bloated`` the name, arguments and answer of the first far too long."""
    name, call_args = ("search" + "n" * 45 * 1024, nested(150)) if bloated else ("search", {"q": f"case {case}"})
    first = {"runs": list(range(1, runs + 1)), "turns": [{"calls": [{"name": name, "args": call_args}],
                                                          "response": words(case, args.answer if bloated else 1000)}]}
    rest = [{"runs": [1], "turns": [{"calls": [{"name": f"tool{k}", "args": {"k": c}} for c in range(args.calls)],
                                     "response": f"answer {k}"}]} for k in range(per_case - 1)]
    return [first, *rest]


def rewritten(files: list[Path], into: Path, args: argparse.Namespace, hostile: bool) -> list[Path]:
    """The shards as a run whose behaviour changed writes them; with ``hostile``, the first
    shard crafted (its cases share --trajectories trajectories, the first --bloated of them
    bloated)."""
    out = []
    into.mkdir()
    for index, path in enumerate(files):
        results = json.loads(path.read_text())
        cases = [c for s in results["evalSets"] for c in s["cases"]]
        per_case = max(1, args.trajectories // len(cases))
        for n, case in enumerate(cases):
            case["trajectories"] = (hostile_trajectories(n, args.runs, args, n < args.bloated, per_case)
                                    if hostile and index == 0 else honest_trajectories(n, args.runs))
        target = into / path.name
        target.write_text(json.dumps(results))
        out.append(target)
    return out


def merge(root: Path, files: list[Path], name: str, compared: bool = True) -> float:
    against = ["--baseline", str(root / "base.json")] if compared else []
    argv = [str(BIN / "evalcheck"), "merge", *map(str, files), *against,
            "--results", str(root / f"{name}.json"), "--markdown", str(root / f"{name}.md"),
            "--html", str(root / f"{name}.html")]
    clock = time.perf_counter()
    done = subprocess.run(argv, cwd=root, capture_output=True, text=True, check=False)
    took = time.perf_counter() - clock
    if done.returncode not in (0, 1):
        raise SystemExit(f"merge of the {name} set failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--trajectories", type=int, default=20_000)
    parser.add_argument("--bloated", type=int, default=20)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--answer", type=int, default=240_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / ".git").mkdir()
        write_suite(root, args.cases, args.runs)
        os.chdir(root)
        shards = run_shards(root, args.shards)
        merge(root, shards, "base", compared=False)  # main's results: the comparison's baseline
        honest = rewritten(shards, root / "honest", args, hostile=False)
        hostile = rewritten(shards, root / "hostile", args, hostile=True)
        size = sum(p.stat().st_size for p in honest) / 1e6
        crafted = sum(p.stat().st_size for p in hostile) / 1e6
        print(f"{args.cases} cases, {args.runs} runs, {args.shards} shards: control {size:.1f} MB; hostile "
              f"{crafted:.1f} MB, shard 1 crafted ({args.trajectories:,} trajectories of {args.calls} calls, "
              f"{args.bloated} cases with a {args.answer:,}-character answer, a 45 KiB name and arguments "
              "nested 150 deep)")
        control, attack = [], []
        for _ in range(args.repeat):
            control.append(merge(root, honest, "control"))
            attack.append(merge(root, hostile, "hostile"))
        c, h = statistics.median(control), statistics.median(attack)
        written = (root / "hostile.json").stat().st_size / 1e6
        print(f"merge control: median {c:.2f} s of {args.repeat} ({', '.join(f'{t:.2f}' for t in control)})")
        print(f"merge hostile: median {h:.2f} s of {args.repeat} ({', '.join(f'{t:.2f}' for t in attack)}); "
              f"merged results {written:.1f} MB")
        print(f"hostile / control: {h / c:.2f}x  target <= 2x  load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
