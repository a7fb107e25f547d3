"""Benchmark: the regression gate itself - false alarms, power, extra runs (prints figures).

Simulates pull requests on suites of --cases cases (70% always pass, 20% flaky with a
per-run pass probability drawn from U[0.5, 0.95], 10% always fail; with --continuous every
case also gates on a continuous response_match_score, threshold 0.8, whose pass probability
is drawn the same way), N runs a side, and drives the real code: results built as the
scorer builds them, ``checker.compare.comparison.compare`` with main's history pooled,
``checker.compare.confirm.Confirmation`` asking for fresh runs round by round (answered by
the simulated agent), and ``checker.compare.gate.gate_failed(..., "regression")``.

Side by side, in one run, for each suite:
- old: one main result as the baseline, every (case, metric) tested at 0.05 on its own, the
  deterministic-drop rule from 2 runs a side (the design before main's history; its rule is
  reproduced here with the same Fisher test, since the code no longer has it);
- new: --history main results pooled, screening, up to --confirm-runs fresh runs in rounds of
  5, Tarone's family-wise control at --alpha (default 0.05).

Figures per design: the share of *unchanged* PRs that fail ``--fail-on regression`` (false
alarm), the share of PRs caught when one case drops 0.95 -> 0.3 and when one drops 1.0 ->
0.0 (power), the share of unchanged PRs whose suite-drop headline fires, and the extra runs
confirmation spent on unchanged PRs (relative to the PR's own N x cases runs). New design
only, paired on the same runs: the share of unchanged PRs that fail without and with the
check that screening and confirmation agree (the regression tests read the same runs either
way), the extra runs spent only for that check, and the share of PRs caught whose case 0
(passing every run on main) fails every screening run and passes every fresh one (an agent
that detects them).

    python bench/bench_gate.py [--cases 20 100 500] [--runs 2 3 5] [--prs 400] [--continuous]

With ``--shards 4`` the table is the new design side by side unsharded and as 4 ``--shard
I/4`` jobs and a ``merge`` on the same runs (every shard screening and confirming its own
cases, the merge deciding the family on all their fresh runs: ``sharded_gate``), and the
share of PRs (unchanged and both drops) whose every case got the same label both ways.
"""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import dataclass

from pathlib import Path

from checker.compare.comparison import compare, suite_drops
from checker.compare.confirm import Confirmation
from checker.compare.gate import gate_failed
from checker.compare.pooling import BaselinePool
from checker.compare.recorded import (check_screened, family_of, record_shard_confirmation,
                                      recorded_confirmation, recorded_keys)
from checker.compare.stats import fisher_worse
from checker.models.results import CaseResult, EvalSetResult, MetricResult, Results, RunResult, ShardInfo
from checker.scale.merge import merge_results, shards_family
from checker.scale.shards import assign
from checker.scoring.pipeline import summarize

TRAJECTORY, RESPONSE = "tool_trajectory_avg_score", "response_match_score"
THRESHOLDS = {TRAJECTORY: 1.0, RESPONSE: 0.8}


@dataclass
class Suite:
    """Per case and metric, the probability that one run passes."""

    probabilities: list[dict[str, float]]

    @classmethod
    def draw(cls, cases: int, continuous: bool, rng: random.Random) -> Suite:
        def one() -> float:
            kind = rng.random()
            return 1.0 if kind < 0.7 else rng.uniform(0.5, 0.95) if kind < 0.9 else 0.0

        return cls([{TRAJECTORY: one(), **({RESPONSE: one()} if continuous else {})}
                    for _ in range(cases)])

    def changed(self, case: int, metric: str, probability: float) -> Suite:
        copy = [dict(p) for p in self.probabilities]
        copy[case][metric] = probability
        return Suite(copy)


def run_score(metric: str, probability: float, rng: random.Random) -> float:
    passed = rng.random() < probability
    if metric == TRAJECTORY:
        return 1.0 if passed else 0.0
    return rng.uniform(0.8, 1.0) if passed else rng.uniform(0.3, 0.8)


def case_result(index: int, probabilities: dict[str, float], runs: int, rng: random.Random,
                first_run: int = 1) -> CaseResult:
    metrics = []
    for name, probability in probabilities.items():
        scores = [run_score(name, probability, rng) for _ in range(runs)]
        mean = sum(scores) / len(scores)
        metrics.append(MetricResult(name=name, threshold=THRESHOLDS[name], score=mean, runs=scores,
                                    status="passed" if mean >= THRESHOLDS[name] else "failed"))
    status = "passed" if all(m.status == "passed" for m in metrics) else "failed"
    return CaseResult(eval_id=f"case_{index}", status=status, fingerprint=f"sha256:{index}",
                      runs=[RunResult(run=first_run + i, status="passed") for i in range(runs)],
                      metrics=metrics)


def results(suite: Suite, runs: int, rng: random.Random) -> Results:
    cases = [case_result(i, p, runs, rng) for i, p in enumerate(suite.probabilities)]
    sets = [EvalSetResult(eval_set_id="suite", path="suite.evalset.json", cases=cases)]
    summary = summarize(sets)
    return Results(passed=summary.passed == summary.cases, summary=summary, eval_sets=sets)


def old_gate_fails(base: Results, head: Results) -> bool:
    """The design before main's history: any (case, metric) with one-sided Fisher p <= 0.05,
    or a deterministic drop (every run the same on both sides, >= 2 a side, lower, failing)."""
    base_cases = {c.eval_id: c for c in base.eval_sets[0].cases}
    for case in head.eval_sets[0].cases:
        other = {m.name: m for m in base_cases[case.eval_id].metrics}
        for metric in case.metrics:
            b, h, t = other[metric.name].runs, metric.runs, metric.threshold
            kb, kh = sum(s >= t for s in b), sum(s >= t for s in h)
            fixed = len(b) >= 2 and len(h) >= 2 and min(b) == max(b) and min(h) == max(h)
            if fisher_worse(kb, len(b), kh, len(h)) <= 0.05 or (fixed and h[0] < b[0] and h[0] < t):
                return True
    return False


def confirm(confirmation: Confirmation, scored: dict[tuple[str, str], CaseResult], suite: Suite,
            start: float, runs: int) -> None:
    """Screen ``scored`` and answer the confirmation's rounds with simulated fresh runs of
    ``suite``. Each case's fresh runs come from a stream of its own seeded from ``start``: a
    case asked for more runs changes no other case's draws, and a shard draws what the
    unsharded run would."""
    wanted = confirmation.start(scored)
    streams = {key: random.Random(f"{start}-{key[1]}") for key in scored}
    next_run = {key: runs + 1 for key in scored}
    while wanted:
        counts: dict[tuple[str, str], int] = {}
        for key in wanted:
            counts[key] = counts.get(key, 0) + 1
        for key, n in counts.items():
            index = int(key[1].split("_")[1])
            confirmation.add(key, case_result(index, suite.probabilities[index], n, streams[key], next_run[key]))
            next_run[key] += n
        wanted = confirmation.next_round()


def new_gate(history: list[Results], head: Results, suite: Suite, confirm_runs: int,
             start: float, runs: int, alpha: float = 0.05) -> tuple[Results, Confirmation]:
    """Screen, confirm on fresh simulated runs of ``suite``, compare: the compared results
    and the confirmation (its extra runs)."""
    confirmation = Confirmation(BaselinePool(history), confirm_runs, alpha)
    confirm(confirmation, {("suite", c.eval_id): c for c in head.eval_sets[0].cases}, suite, start, runs)
    compared = compare(history, head, alpha=alpha, confirmations=confirmation.confirmations(),
                       contested_runs=confirmation.disagreement_runs())
    return compared, confirmation


def sharded_gate(history: list[Results], head: Results, suite: Suite, confirm_runs: int,
                 start: float, runs: int, alpha: float = 0.05, shards: int = 4) -> tuple[Results, int]:
    """The same PR as ``--shard I/N`` jobs and ``merge``: the cases split as a shard splits
    them (LPT, equal costs), each shard screening and confirming its own against the whole
    baseline (``Confirmation(..., shard=True)``), its results recorded as a shard writes them,
    then merged and decided on every shard's fresh runs as ``merge --baseline`` does. The
    merged, compared results and the fresh runs all shards asked for."""
    cases = head.eval_sets[0].cases
    placed = assign([(("suite", c.eval_id), 1.0) for c in cases], shards)
    family = family_of(history, alpha, confirm_runs)
    pool = BaselinePool(history)
    files, extra = [], 0
    for index in range(shards):
        mine = [(position, c) for position, (c, s) in enumerate(zip(cases, placed, strict=True)) if s == index]
        confirmation = Confirmation(pool, confirm_runs, alpha, shard=True)
        confirm(confirmation, {("suite", c.eval_id): c for _, c in mine}, suite, start, runs)
        extra += confirmation.extra_runs()
        sets = [head.eval_sets[0].model_copy(update={"cases": [c for _, c in mine]})]
        summary = summarize(sets)
        shard = Results(passed=summary.passed == summary.cases, summary=summary, eval_sets=sets,
                        shard=ShardInfo(index=index + 1, count=shards, selection="sha256:bench",
                                        total=len(cases), positions=[p for p, _ in mine]))
        files.append(record_shard_confirmation(shard, confirmation, family, ["suite"]))
    merged = merge_results([Path(f"results-{i + 1}.json") for i in range(shards)], files)
    assert shards_family([(Path("results-1.json"), f) for f in files]) == family
    keys = recorded_keys(merged, history)
    recorded = recorded_confirmation(merged, keys)
    compared = compare(history, merged, alpha=alpha, confirmations=recorded.confirmations,
                       contested_runs=recorded.contested)
    check_screened(compared, recorded, keys, "bench")
    return compared, extra


def without_disagreement(compared: Results) -> Results:
    """The same results with no case's screening and confirmation disagreeing: the gate the
    same runs would have met before that check (the regression tests read the same runs)."""
    sets = [s.model_copy(update={"cases": [c.model_copy(update={"screening_disagrees": None})
                                           for c in s.cases]}) for s in compared.eval_sets]
    return compared.model_copy(update={"eval_sets": sets})


def _labels(compared: Results) -> list[tuple[str | None, bool | None]]:
    return [(c.change, c.screening_disagrees) for c in compared.eval_sets[0].cases]


def simulate(cases: int, runs: int, prs: int, continuous: bool, history: int, confirm_runs: int,
             seed: int, alpha: float = 0.05, shards: int = 0) -> dict[str, float]:
    """``shards``: also run each PR as that many shards and a merge, on the same draws."""
    rng = random.Random(seed)
    figures = {"old_false": 0, "new_false": 0, "old_power_03": 0, "new_power_03": 0,
               "old_power_0": 0, "new_power_0": 0, "suite_dropped": 0, "extra": 0,
               "screening_only": 0, "false_before": 0, "contested_extra": 0,
               "sharded_false": 0, "sharded_power_03": 0, "sharded_power_0": 0, "sharded_extra": 0,
               "sharded_agree": 0}
    for pr in range(prs):
        suite = Suite.draw(cases, continuous, rng)
        mains = [results(suite, runs, rng) for _ in range(history)]
        # Unchanged PR.
        head = results(suite, runs, rng)
        figures["old_false"] += old_gate_fails(mains[0], head)
        start = rng.random()
        compared, confirmation = new_gate(mains, head, suite, confirm_runs, start, runs, alpha)
        figures["new_false"] += gate_failed(compared, "regression")
        figures["false_before"] += gate_failed(without_disagreement(compared), "regression")
        figures["suite_dropped"] += bool(suite_drops(compared.comparison))
        figures["extra"] += confirmation.extra_runs()
        figures["contested_extra"] += confirmation.contested_runs()
        if shards:
            merged, extra = sharded_gate(mains, head, suite, confirm_runs, start, runs, alpha, shards)
            figures["sharded_false"] += gate_failed(merged, "regression")
            figures["sharded_extra"] += extra
            figures["sharded_agree"] += _labels(merged) == _labels(compared)
        # One case drops 0.95 -> 0.3 (main saw it at 0.95), and one drops 1.0 -> 0.0.
        for to, name in ((0.3, "power_03"), (0.0, "power_0")):
            before = suite.changed(0, TRAJECTORY, 0.95 if to else 1.0)
            after = before.changed(0, TRAJECTORY, to)
            mains = [results(before, runs, rng) for _ in range(history)]
            head = results(after, runs, rng)
            figures[f"old_{name}"] += _caught(old_gate_fails(mains[0], head), mains[0], head)
            start = rng.random()
            compared, _ = new_gate(mains, head, after, confirm_runs, start, runs, alpha)
            figures[f"new_{name}"] += compared.eval_sets[0].cases[0].change == "regressed" \
                and gate_failed(compared, "regression")
            if shards:
                merged, _ = sharded_gate(mains, head, after, confirm_runs, start, runs, alpha, shards)
                figures[f"sharded_{name}"] += merged.eval_sets[0].cases[0].change == "regressed" \
                    and gate_failed(merged, "regression")
                figures["sharded_agree"] += _labels(merged) == _labels(compared)
        # An agent broken only in the screening runs (it reads EVALCHECK_RUN): case 0 passes
        # every run on main and in fresh runs, fails every first run of the PR.
        # Its own random stream: the figures above stay those of the same draws without it.
        apart = random.Random(f"{seed}-{pr}")
        before = suite.changed(0, TRAJECTORY, 1.0)
        mains = [results(before, runs, apart) for _ in range(history)]
        head = results(before.changed(0, TRAJECTORY, 0.0), runs, apart)
        compared, _ = new_gate(mains, head, before, confirm_runs, apart.random(), runs, alpha)
        figures["screening_only"] += bool(compared.eval_sets[0].cases[0].screening_disagrees) \
            and gate_failed(compared, "regression")
    out = {key: value / prs for key, value in figures.items()}
    out["extra"] = figures["extra"] / (prs * runs * cases)
    out["contested_extra"] = figures["contested_extra"] / (prs * runs * cases)
    out["sharded_extra"] = figures["sharded_extra"] / (prs * runs * cases)
    out["sharded_agree"] = figures["sharded_agree"] / (3 * prs)  # the unchanged PR and both drops
    return out


def _caught(failed: bool, base: Results, head: Results) -> bool:
    """The old gate caught the drop when it failed because of case 0 (not another case)."""
    if not failed:
        return False
    only = Results(passed=head.passed, summary=head.summary, eval_sets=[
        head.eval_sets[0].model_copy(update={"cases": head.eval_sets[0].cases[:1]})])
    return old_gate_fails(base, only)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, nargs="+", default=[20, 100, 500])
    parser.add_argument("--runs", type=int, nargs="+", default=[2, 3, 5])
    parser.add_argument("--prs", type=int, default=400, help="simulated PRs per suite and design")
    parser.add_argument("--history", type=int, default=5, help="main results pooled (new design)")
    parser.add_argument("--confirm-runs", type=int, default=60)
    parser.add_argument("--continuous", action="store_true", help="also a continuous metric per case")
    parser.add_argument("--both", action="store_true", help="with and without the continuous metric")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--alpha", type=float, default=0.05, help="family-wise level (new design)")
    parser.add_argument("--shards", type=int, default=0,
                        help="also run every PR as this many shards and a merge (new design), side by side")
    args = parser.parse_args()
    if args.shards:
        sharded_table(args)
        return
    print(f"{args.prs} simulated PRs per row; new design: {args.history} main results pooled, up to "
          f"{args.confirm_runs} confirmation runs, family-wise alpha {args.alpha}")
    print("| cases | N | metrics | unchanged PR fails (old / new) | 0.95 -> 0.3 caught (old / new) "
          "| 1.0 -> 0.0 caught (old / new) | suite dropped | extra runs "
          "| unchanged PR fails without / with the disagreement check | of the extra runs, for it "
          "| broken only in screening runs caught | seconds |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for continuous in ([False, True] if args.both else [args.continuous]):
        for cases in args.cases:
            for runs in args.runs:
                started = time.perf_counter()
                f = simulate(cases, runs, args.prs, continuous, args.history, args.confirm_runs,
                             args.seed, args.alpha)
                print(f"| {cases} | {runs} | {'both' if continuous else 'binary'} "
                      f"| {f['old_false']:.3f} / {f['new_false']:.3f} "
                      f"| {f['old_power_03']:.2f} / {f['new_power_03']:.2f} "
                      f"| {f['old_power_0']:.2f} / {f['new_power_0']:.2f} "
                      f"| {f['suite_dropped']:.3f} | +{f['extra']:.0%} "
                      f"| {f['false_before']:.3f} / {f['new_false']:.3f} | +{f['contested_extra']:.1%} "
                      f"| {f['screening_only']:.2f} "
                      f"| {time.perf_counter() - started:.0f} |", flush=True)


def sharded_table(args: argparse.Namespace) -> None:
    """The new design unsharded and as --shards shards + merge, on the same simulated draws."""
    print(f"{args.prs} simulated PRs per row; {args.history} main results pooled, up to "
          f"{args.confirm_runs} confirmation runs, family-wise alpha {args.alpha}; unsharded / "
          f"{args.shards} shards merged, on the same runs")
    print("| cases | N | metrics | unchanged PR fails | 0.95 -> 0.3 caught | 1.0 -> 0.0 caught "
          "| extra runs (unchanged PR) | PRs with the same labels | seconds |")
    print("|---|---|---|---|---|---|---|---|---|")
    for continuous in ([False, True] if args.both else [args.continuous]):
        for cases in args.cases:
            for runs in args.runs:
                started = time.perf_counter()
                f = simulate(cases, runs, args.prs, continuous, args.history, args.confirm_runs,
                             args.seed, args.alpha, shards=args.shards)
                print(f"| {cases} | {runs} | {'both' if continuous else 'binary'} "
                      f"| {f['new_false']:.3f} / {f['sharded_false']:.3f} "
                      f"| {f['new_power_03']:.2f} / {f['sharded_power_03']:.2f} "
                      f"| {f['new_power_0']:.2f} / {f['sharded_power_0']:.2f} "
                      f"| +{f['extra']:.1%} / +{f['sharded_extra']:.1%} "
                      f"| {f['sharded_agree']:.3f} "
                      f"| {time.perf_counter() - started:.0f} |", flush=True)


if __name__ == "__main__":
    main()
