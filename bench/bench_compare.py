"""Benchmark: comparing two results files (prints figures; not a test).

Generates a baseline and a PR results file of --cases cases x --runs runs x --metrics
metrics each (seeded: some cases regress, some improve, some are flaky, a few are new or
removed), then times, side by side and in one run: reading both files
(checker.compare.results_file.load_results_file, what `evalcheck compare` does) and
comparing them (checker.compare.comparison.compare: Fisher tests per case and metric, the
suite-level paired bootstrap and Wilson intervals). Target: compare < 2 s for 10,000 x 5 x
4. Each figure is the best of --repeat passes, on a machine that may be shared.

    python bench/bench_compare.py [--cases 10000] [--runs 5] [--metrics 4] [--repeat 3]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from checker.compare.comparison import compare
from checker.compare.results_file import load_results_file
from checker.models.results import CaseResult, EvalSetResult, MetricResult, Results, RunResult
from checker.scoring.pipeline import summarize

METRICS = ("tool_trajectory_avg_score", "response_match_score", "final_response_match_v2",
           "hallucinations_v1", "safety_v1", "rubric_based_final_response_quality_v1")


def metric(name: str, scores: list[float], threshold: float) -> MetricResult:
    mean = sum(scores) / len(scores)
    return MetricResult(name=name, threshold=threshold, score=mean, runs=scores,
                        status="passed" if mean >= threshold else "failed",
                        details={"worstRun": 1})


def results_file(cases: int, runs: int, metrics: int, *, head: bool, seed: int) -> Results:
    rng = random.Random(seed)
    names = METRICS[:metrics]
    out = []
    for i in range(cases):
        if head and i % 500 == 0:
            eval_id = f"new_{i:06d}"      # renamed: one new and one removed case
        else:
            eval_id = f"case_{i:06d}"
        quality = (i % 97) / 97          # each case's own pass probability
        if head and i % 50 == 0:
            quality = max(0.0, quality - 0.6)  # regressions
        case_metrics = [metric(name, [1.0 if rng.random() < quality else rng.random() * 0.5
                                      for _ in range(runs)], 0.5) for name in names]
        statuses = ["passed" if all(m.runs[r] >= 0.5 for m in case_metrics) else "failed"
                    for r in range(runs)]
        out.append(CaseResult(eval_id=eval_id, line=3 + 40 * i,
                              status="passed" if all(m.status == "passed" for m in case_metrics) else "failed",
                              runs=[RunResult(run=r + 1, status=s, duration_seconds=1.5)
                                    for r, s in enumerate(statuses)],
                              metrics=case_metrics, fingerprint=f"sha256:{i:064x}",
                              flaky=any(0 < sum(s >= 0.5 for s in m.runs) < runs for m in case_metrics)))
    sets = [EvalSetResult(eval_set_id="big", path="evals/big.evalset.json", cases=out)]
    summary = summarize(sets)
    return Results(passed=summary.passed == summary.cases, summary=summary, eval_sets=sets)


def best(repeat: int, action):
    times, value = [], None
    for _ in range(repeat):
        began = time.perf_counter()
        value = action()
        times.append(time.perf_counter() - began)
    return min(times), value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--metrics", type=int, default=4, choices=range(1, len(METRICS) + 1))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base_path, head_path = Path(tmp) / "base.json", Path(tmp) / "head.json"
        base_path.write_text(results_file(args.cases, args.runs, args.metrics, head=False, seed=1)
                             .model_dump_json(indent=2))
        head_path.write_text(results_file(args.cases, args.runs, args.metrics, head=True, seed=2)
                             .model_dump_json(indent=2))
        size = (base_path.stat().st_size + head_path.stat().st_size) / 1e6
        load_s, (base, head) = best(args.repeat, lambda: (load_results_file(base_path, "baseline"),
                                                          load_results_file(head_path)))
    compare_s, compared = best(args.repeat, lambda: compare(base, head))
    c = compared.comparison.summary
    print(f"compare two results files: {args.cases} cases x {args.runs} runs x {args.metrics} "
          f"metrics each ({size:.1f} MB of JSON), best of {args.repeat}, shared machine")
    print(f"  {'load both files':<28}{load_s:8.3f} s")
    print(f"  {'compare (target < 2 s)':<28}{compare_s:8.3f} s  "
          f"{'OK' if compare_s < 2 else 'OVER TARGET'}")
    print(f"  labels: {c.regressed} regressed, {c.improved} improved, {c.unchanged} unchanged, "
          f"{c.new} new, {c.changed} changed, {c.removed} removed")
    for m in compared.comparison.metrics:
        print(f"  {m['name']:<28} mean delta {m['meanDelta']:+.4f} "
              f"[{m['interval']['low']:+.4f}, {m['interval']['high']:+.4f}] ({m['interval']['method']})")


if __name__ == "__main__":
    main()
