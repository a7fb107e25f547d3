"""Benchmark: `evalcheck run --replay` at scale, side by side with ADK's evaluators looping
over the same data (prints figures; not a test).

For each size: one eval file of N cases (3 turns each: a tool call and a final response),
a test_config.json with two deterministic metrics (tool_trajectory_avg_score and
response_match_score), and a recorded-runs file of 2 runs per case (one case in 7 goes
wrong). Then, each in a fresh process, timed with its peak RSS (wait4):

- evalcheck: the real CLI, `evalcheck run evals --replay runs.json --results results.json`;
- ADK: google-adk's own models and evaluators, as its pipeline uses them: the eval set and
  the runs parsed into ADK's pydantic models, then per case and run a TrajectoryEvaluator
  and a RougeEvaluator (a new evaluator per metric and case), every result kept.

Targets (issue 14): time linear in N; peak memory at 10,000 cases at most ADK's; (issue 25)
time at 10,000 cases at most half of ADK's. The machine may be shared: figures are noisy
(the CPU seconds less so); run it alone for clean ones.

Also shard 1 of --shards (8) of the same suite: a shard checks every case one at a time
and holds only its own cases, runs and results; the eval and replay files are read once as
text.

    python bench/bench_replay.py [--sizes 1000,10000,50000] [--shards 8] [--no-adk]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOOLS = ("get_weather", "search", "lookup_user", "send_email")


def _turn(rnd: random.Random, t: int) -> tuple[dict, dict]:
    tool = {"name": rnd.choice(TOOLS), "args": {"city": rnd.choice(["Paris", "Rome", "Oslo"]), "days": t + 1}}
    text = f"The weather in {tool['args']['city']} is sunny, {rnd.randint(10, 30)} C, light wind from the west."
    inv = {"invocation_id": f"inv-{t + 1}",
           "user_content": {"role": "user", "parts": [{"text": f"Question {t + 1} about the weather?"}]},
           "final_response": {"role": "model", "parts": [{"text": text}]},
           "intermediate_data": {"tool_uses": [tool], "tool_responses": [], "intermediate_responses": []}}
    return inv, tool


def generate(folder: Path, cases: int, seed: int = 14) -> None:
    rnd = random.Random(seed)
    (folder / "evals").mkdir(parents=True)
    eval_cases, runs = [], []
    for n in range(cases):
        conversation = [_turn(rnd, t)[0] for t in range(3)]
        eval_id = f"case_{n:06d}"
        eval_cases.append({"eval_id": eval_id, "conversation": conversation})
        for run in (1, 2):
            actual = json.loads(json.dumps(conversation))
            if n % 7 == 0 and run == 2:  # the agent goes wrong: another tool, another answer
                actual[1]["intermediate_data"]["tool_uses"][0]["name"] = "search"
                actual[1]["final_response"]["parts"][0]["text"] = "I do not know."
            runs.append({"evalSetId": "big", "evalId": eval_id, "run": run, "invocations": actual})
    (folder / "evals/big.evalset.json").write_text(
        json.dumps({"eval_set_id": "big", "eval_cases": eval_cases}, indent=1))
    (folder / "evals/test_config.json").write_text(json.dumps(
        {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}))
    (folder / "runs.json").write_text(json.dumps({"version": 1, "runs": runs}, indent=1))


def adk_worker(folder: Path) -> None:
    """ADK's side, in its own process: parse with ADK's models, score with its evaluators."""
    from google.adk.evaluation.eval_case import Invocation
    from google.adk.evaluation.eval_metrics import EvalMetric, ToolTrajectoryCriterion
    from google.adk.evaluation.eval_set import EvalSet
    from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
    from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator

    eval_set = EvalSet.model_validate_json((folder / "evals/big.evalset.json").read_text())
    recorded: dict[str, list[list[Invocation]]] = {}
    for run in json.loads((folder / "runs.json").read_text())["runs"]:
        recorded.setdefault(run["evalId"], []).append(
            [Invocation.model_validate(i) for i in run["invocations"]])
    results = []
    for case in eval_set.eval_cases:
        for actual in recorded[case.eval_id]:
            trajectory = TrajectoryEvaluator(eval_metric=EvalMetric(
                metric_name="tool_trajectory_avg_score", threshold=1.0,
                criterion=ToolTrajectoryCriterion(threshold=1.0)))
            rouge = RougeEvaluator(EvalMetric(metric_name="response_match_score", threshold=0.8))
            results.append((case.eval_id, trajectory.evaluate_invocations(actual, case.conversation),
                            rouge.evaluate_invocations(actual, case.conversation)))
    print(len(results))


def measure(command: list[str], cwd: Path) -> tuple[float, float, float]:
    """Wall seconds, peak RSS in MiB and CPU seconds (user + system) of one fresh process:
    on a shared machine the CPU time is the steadier figure."""
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in (0, 1):
        sys.exit(f"{command[:4]} failed: {process.stderr.read().decode()[-2000:] if process.stderr else ''}")
    return seconds, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--no-adk", action="store_true", help="measure evalcheck only")
    parser.add_argument("--shards", type=int, default=8, help="also run shard 1 of this many (1: skip)")
    parser.add_argument("--adk-worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--generate", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.adk_worker:
        adk_worker(args.adk_worker)
        return
    if args.generate:
        generate(Path(args.generate[0]), int(args.generate[1]))
        return
    print(f"{'cases':>7} {'files':>9} | {'evalcheck s':>11} {'cpu s':>6} {'MiB':>6} {'cpu us/case':>11} | "
          f"{'ADK s':>7} {'cpu s':>6} {'MiB':>6} {'cpu us/case':>11}")
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            (folder / ".git").mkdir()
            # In another process: a child forked from a big parent would count its pages
            # in the peak RSS that wait4 reports.
            subprocess.run([sys.executable, __file__, "--generate", str(folder), str(size)], check=True)
            megabytes = sum(p.stat().st_size for p in folder.rglob("*.json")) / 1e6
            ours = measure([sys.executable, "-m", "checker.cli", "run", "evals", "--replay", "runs.json",
                            "--results", "results.json"], folder)
            line = (f"{size:>7,} {megabytes:>6.0f} MB | {ours[0]:>11.1f} {ours[2]:>6.1f} {ours[1]:>6.0f} "
                    f"{ours[2] / size * 1e6:>11.0f} |")
            if not args.no_adk:
                adk = measure([sys.executable, __file__, "--adk-worker", str(folder)], folder)
                line += f" {adk[0]:>7.1f} {adk[2]:>6.1f} {adk[1]:>6.0f} {adk[2] / size * 1e6:>11.0f}"
            print(line, flush=True)
            if args.shards > 1:  # one machine of a job array: its share, not the suite
                shard = measure([sys.executable, "-m", "checker.cli", "run", "evals", "--replay", "runs.json",
                                 "--shard", f"1/{args.shards}", "--results", "shard.json"], folder)
                print(f"{'':>7} {'':>9} | shard 1/{args.shards}: {shard[0]:.1f} s, cpu {shard[2]:.1f} s, "
                      f"{shard[1]:.0f} MiB", flush=True)


if __name__ == "__main__":
    main()
