"""Benchmark of the deterministic scoring (prints figures; not a test).

1. Our tool_trajectory_avg_score and response_match_score against google-adk's own
   TrajectoryEvaluator and RougeEvaluator, on the same generated data in one process:
   N eval cases, each with long tool trajectories (hundreds of calls drawn from a few
   names, so names repeat) and long final responses. Inputs are parsed before timing; each
   figure is the best of --repeat passes over all cases, each evaluator used the way its
   pipeline uses it (ADK builds an evaluator per metric and case). Scores are checked equal.
2. tool_trajectory_f1 (if present) on 1,000-call trajectories, per invocation.
3. ``evalcheck --help`` start-up: median wall time of several runs of the installed
   console script, and the heaviest imports it pays for (``python -X importtime``).

    python bench/bench_scoring.py [--cases 40] [--calls 300] [--words 400] [--repeat 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_metrics import EvalMetric, ToolTrajectoryCriterion
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator

from checker.metrics.base import Criterion, RunInput, ScoringContext
from checker.metrics.response_match_score import ResponseMatchScore
from checker.metrics.tool_trajectory_avg_score import ToolTrajectoryAvgScore, TrajectoryCriterion
from checker.models.evalset import EvalCase, Invocation
from checker.inputs.validation import parse_json_text

TOOLS = ["search", "get_weather", "lookup_user", "send_email", "read_file", "write_file",
         "list_dir", "calculator"]
WORDS = ("the weather in paris is sunny and warm today with a light breeze from the west "
         "temperatures reach twenty one degrees running cats are jumping over lazy dogs "
         "café naïve Ärger 東京 晴れ สวัสดีครับ مرحبا 😀 forecast tomorrow rain showers").split()


def make_call(rnd: random.Random) -> dict[str, Any]:
    name = rnd.choice(TOOLS)
    return {"name": name, "args": {"query": f"q{rnd.randrange(20)}", "limit": rnd.choice([5, 10]),
                                   "options": {"deep": rnd.random() < 0.5, "tags": ["a", "b"]}}}


def make_case(rnd: random.Random, calls: int, words: int, turns: int,
              agent_errs: bool = True) -> tuple[list[dict], list[dict]]:
    """One case's actual and expected turns. With ``agent_errs`` the agent makes extra calls
    (EXACT fails) and, in half the turns, swaps two (IN_ORDER fails, ANY_ORDER passes)."""
    actual, expected = [], []
    for _ in range(turns):
        exp_calls = [make_call(rnd) for _ in range(calls)]
        act_calls = [json.loads(json.dumps(c)) for c in exp_calls]
        if agent_errs:
            for _ in range(calls // 10):
                act_calls.insert(rnd.randrange(len(act_calls) + 1), make_call(rnd))
            if rnd.random() < 0.5:
                i = rnd.randrange(len(act_calls) - 1)
                act_calls[i], act_calls[i + 1] = act_calls[i + 1], act_calls[i]
        ref = " ".join(rnd.choice(WORDS) for _ in range(words))
        resp = " ".join(w if rnd.random() < 0.8 else rnd.choice(WORDS) for w in ref.split())
        for calls_, text, out in ((act_calls, resp, actual), (exp_calls, ref, expected)):
            out.append({"user_content": {"role": "user", "parts": [{"text": "do the task"}]},
                        "final_response": {"role": "model", "parts": [{"text": text}]},
                        "intermediate_data": {"tool_uses": calls_}})
    return actual, expected


def best_of(repeat: int, *fns: Callable[[], list[Any]]) -> list[tuple[float, list[Any]]]:
    """Best wall time and result of each function; the functions take turns, so a busy
    machine slows them alike."""
    best = [float("inf")] * len(fns)
    out: list[list[Any]] = [[] for _ in fns]
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            began = time.perf_counter()
            out[k] = fn()
            best[k] = min(best[k], time.perf_counter() - began)
    return list(zip(best, out))


def load(raw: list[tuple[list[dict], list[dict]]]) -> tuple[list[RunInput], list[tuple[list, list]]]:
    """The same JSON text read as our RunInputs and as ADK Invocation lists."""
    runs = []
    for k, (a, e) in enumerate(raw):
        # As our loader reads eval and replay files: our JSON reader, then the model.
        actual = [Invocation.model_validate(i) for i in parse_json_text(json.dumps(a), "actual")]
        expected = [Invocation.model_validate(i) for i in parse_json_text(json.dumps(e), "expected")]
        runs.append(RunInput(case=EvalCase(eval_id=f"c{k}", conversation=expected), actual=actual,
                             expected=expected, scenario=None))
    adk = [([AdkInvocation.model_validate_json(json.dumps(i)) for i in a],
            [AdkInvocation.model_validate_json(json.dumps(i)) for i in e]) for a, e in raw]
    return runs, adk


def bench_shared(args: argparse.Namespace) -> None:
    rnd = random.Random(20240601)
    datasets = {
        "agent errs": load([make_case(rnd, args.calls, args.words, args.turns) for _ in range(args.cases)]),
        "agent right": load([make_case(rnd, args.calls, args.words, args.turns, agent_errs=False)
                             for _ in range(args.cases)]),
    }
    context = ScoringContext()
    print(f"data: {args.cases} cases x {args.turns} turns, {args.calls} expected calls per turn "
          f"({len(TOOLS)} tool names, nested args), responses of {args.words} words; 'agent errs': "
          f"+10% extra calls, half the turns with two calls swapped; best of {args.repeat}")
    print(f"{'metric':<36}{'data':<13}{'pass':>6}{'ours ms':>10}{'ADK ms':>10}{'ADK/ours':>10}  same scores")

    def row(label: str, data: str, ours_fn: Callable[[], list[Any]], adk_fn: Callable[[], list[Any]]) -> None:
        (t_ours, s_ours), (t_adk, s_adk) = best_of(args.repeat, ours_fn, adk_fn)
        passed = statistics.mean(s_ours)
        print(f"{label:<36}{data:<13}{passed:>6.0%}{t_ours * 1e3:>10.1f}{t_adk * 1e3:>10.1f}"
              f"{t_adk / t_ours:>9.2f}x  {s_ours == s_adk}")

    for data, (runs, adk_data) in datasets.items():
        for match_type in ("EXACT", "IN_ORDER", "ANY_ORDER"):
            criterion = TrajectoryCriterion(threshold=1.0, match_type=match_type)
            metric = ToolTrajectoryAvgScore()

            def ours(criterion=criterion, metric=metric, runs=runs) -> list[Any]:
                return [metric.score(criterion, run, context).score for run in runs]

            def explained(criterion=criterion, metric=metric, runs=runs) -> list[Any]:
                # What the pipeline adds for the one reported run of each case: the failing
                # turns' explanation (first divergence, calls around it), which ADK lacks.
                scored = [metric.score(criterion, run, context) for run in runs]
                for s in scored:
                    for inv in s.invocations:
                        inv.all_details()
                return [s.score for s in scored]

            def adk(match_type=match_type, adk_data=adk_data) -> list[Any]:
                out = []
                for actual, expected in adk_data:
                    evaluator = TrajectoryEvaluator(eval_metric=EvalMetric(
                        metric_name="tool_trajectory_avg_score", threshold=1.0,
                        criterion=ToolTrajectoryCriterion(threshold=1.0, match_type=match_type)))
                    out.append(evaluator.evaluate_invocations(actual, expected).overall_score)
                return out

            row(f"tool_trajectory_avg_score {match_type}", data, ours, adk)
            if data == "agent errs":
                row("  + explaining every failing turn", data, explained, adk)

    runs, adk_data = datasets["agent errs"]
    rouge_criterion = Criterion(threshold=0.8)
    rouge = ResponseMatchScore()

    def ours_rouge() -> list[Any]:
        return [rouge.score(rouge_criterion, run, context).score for run in runs]

    def adk_rouge() -> list[Any]:
        out = []
        for actual, expected in adk_data:
            evaluator = RougeEvaluator(EvalMetric(metric_name="response_match_score", threshold=0.8))
            out.append(evaluator.evaluate_invocations(actual, expected).overall_score)
        return out

    row("response_match_score", "agent errs", ours_rouge, adk_rouge)


def bench_f1(args: argparse.Namespace) -> None:
    if importlib.util.find_spec("checker.metrics.tool_trajectory_f1") is None:
        print("\ntool_trajectory_f1: not present")
        return
    from checker.metrics.tool_trajectory_f1 import ToolTrajectoryF1, TrajectoryF1Criterion

    rnd = random.Random(7)
    raw = [make_case(rnd, 1000, 10, 1) for _ in range(args.f1_cases)]
    runs, _ = load(raw)
    n = len(raw[0][0][0]["intermediate_data"]["tool_uses"])
    print(f"\ntool_trajectory_f1: {args.f1_cases} invocations, ~{n} actual vs 1000 expected calls each, "
          f"best of {args.repeat}")
    metric = ToolTrajectoryF1()
    for mode in ("name_only", "name_and_args", "name_and_required_args"):
        for ordered in (True, False):
            criterion = TrajectoryF1Criterion(threshold=0.5, match_mode=mode, ordered=ordered)
            ((t, scores),) = best_of(args.repeat, lambda: [metric.score(criterion, r, ScoringContext()).score
                                                           for r in runs])
            print(f"  {mode:<24}{'ordered' if ordered else 'unordered':<11}"
                  f"{t / len(runs) * 1e3:8.1f} ms per invocation  (F1 {statistics.mean(scores):.3f})")


def bench_startup(args: argparse.Namespace) -> None:
    script = Path(sys.executable).parent / "evalcheck"
    if not script.exists():
        found = shutil.which("evalcheck")
        if not found:
            print("\nevalcheck --help: console script not installed")
            return
        script = Path(found)
    subprocess.run([str(script), "--help"], capture_output=True, check=True)  # warm the caches
    times = []
    for _ in range(args.startup_runs):
        began = time.perf_counter()
        subprocess.run([str(script), "--help"], capture_output=True, check=True)
        times.append(time.perf_counter() - began)
    print(f"\nevalcheck --help ({script}): median {statistics.median(times) * 1e3:.0f} ms over "
          f"{len(times)} runs (min {min(times) * 1e3:.0f}, max {max(times) * 1e3:.0f}); target < 300 ms")
    baseline = []
    for _ in range(args.startup_runs):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], capture_output=True, check=True)
        baseline.append(time.perf_counter() - began)
    print(f"  bare interpreter start-up: median {statistics.median(baseline) * 1e3:.0f} ms")

    proc = subprocess.run([sys.executable, "-X", "importtime", str(script), "--help"],
                          capture_output=True, text=True, check=True)
    rows = []  # (cumulative us, nesting level, module)
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        self_us, cumulative_us, name = line[len("import time:"):].split("|")
        if not self_us.strip().isdigit():
            continue  # the header
        name = name[1:]
        rows.append((int(cumulative_us), (len(name) - len(name.lstrip())) // 2, name.strip()))
    top_level = [(us, name) for us, level, name in rows if level == 0]
    top_level.sort(reverse=True)
    modules = {name for _, _, name in rows}
    print(f"  python -X importtime: {len(modules)} modules; heaviest top-level imports (cumulative):")
    for us, name in top_level[:8]:
        print(f"    {us / 1e3:7.1f} ms  {name}")
    checker_modules = sorted(m for m in modules if m == "checker" or m.startswith("checker."))
    print(f"  checker modules imported: {', '.join(checker_modules)}")
    heavy = [m for m in ("pydantic", "jinja2", "httpx", "rouge_score", "nltk", "google.adk", "google.genai",
                         "asyncio") if m in modules]
    print(f"  heavy packages imported: {', '.join(heavy) or 'none'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--calls", type=int, default=300, help="expected calls per turn")
    parser.add_argument("--words", type=int, default=400, help="words per response")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--f1-cases", type=int, default=10)
    parser.add_argument("--startup-runs", type=int, default=9)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}")
    bench_shared(args)
    bench_f1(args)
    bench_startup(args)


if __name__ == "__main__":
    main()
