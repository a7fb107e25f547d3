"""Compare a results file with baselines (main's history): change labels, p-values, suite deltas.

Cases are matched by (eval set id, eval id); the baseline of each case is the runs of main's
results pooled across commits (pooling.py). Each gating metric is an exact test, and all
tests of the comparison are decided together at a family-wise level (decision.py): a case
is ``regressed`` only when some metric's drop survives that, on fresh confirmation runs
when the PR got them. ``improved`` is the mirror image. Anything else is ``unchanged``: a
drop the tests cannot tell from noise keeps its p-value for the reports ("within noise").
See docs/comparing.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..inputs.bulk import paused_gc
from ..models.setkey import SEPARATOR
from ..models.results import (BaselineFile, BaselineInfo, CaseRef, CaseResult, ChangeSummary, Comparison,
                              MetricResult, Results, RunResult)
from ..models.behaviour import Trajectory
from . import disagreement
from .behaviour import case_behaviour
from .decision import (DEFAULT_ALPHA, FamilyDecision, MetricTest, check_alpha, decide,
                       decide_improvements, p_better, p_worse, screens)
from .pooling import BaselinePool, CaseKey, PooledCase, baseline_digest, run_passes
from .removed import outside_run
from .stats import BOOTSTRAP_SEED, paired_bootstrap, wilson
from ..models.verdict_rule import case_flaky

# Reports call a change "deterministic" (every run the same on each side) from this many
# runs a side: fewer show no spread.
MIN_DETERMINISTIC_RUNS = 3


def _scored_runs(runs: list[float | None]) -> list[float]:
    return [s for s in runs if s is not None]


def deterministic_change(metric: MetricResult) -> bool:
    """A compared metric whose runs scored the same on each side (at least three a side)
    and moved: reports say so beside the p-value. It decides nothing by itself."""
    if metric.baseline_runs is None:
        return False
    base, head = _scored_runs(metric.baseline_runs), _scored_runs(metric.confirm_runs or metric.runs)
    return (len(base) >= MIN_DETERMINISTIC_RUNS and len(head) >= MIN_DETERMINISTIC_RUNS
            and min(base) == max(base) and min(head) == max(head) and base[0] != head[0])


_AGAINST_BASELINE = ("baseline_score", "delta", "p_value", "baseline_runs", "confirm_runs",
                     "confirm_budget", "screened", "screening_disagreement", "disagreement_runs")


def uncompared(metric: MetricResult) -> MetricResult:
    """The metric without figures of an earlier comparison (HEAD may be a compared file)."""
    if all(getattr(metric, key) is None for key in _AGAINST_BASELINE):
        return metric
    return metric.model_copy(update=dict.fromkeys(_AGAINST_BASELINE))


def _rate(passed: int, cases: int) -> dict[str, Any]:
    low, high = wilson(passed, cases)
    return {"passed": passed, "cases": cases, "rate": passed / cases if cases else None,
            "low": low, "high": high}


def suite_metrics(pairs: list[tuple[CaseResult, CaseResult]], *,
                  seed: int = BOOTSTRAP_SEED) -> list[dict[str, Any]]:
    """Per gating metric, over the cases compared on both sides with a score on both: the
    mean score delta with its paired-bootstrap 95% interval, and each side's pass rate
    (cases whose metric passed) with its Wilson 95% interval."""
    collected: dict[str, tuple[list[float], list[int], list[int]]] = {}
    for base, head in pairs:
        base_metrics = {m.name: m for m in base.metrics}
        for metric in head.metrics:
            other = base_metrics.get(metric.name)
            if metric.status == "informational" or other is None \
                    or metric.score is None or other.score is None:
                continue
            deltas, base_passed, head_passed = collected.setdefault(metric.name, ([], [], []))
            deltas.append(metric.score - other.score)
            base_passed.append(other.status == "passed")
            head_passed.append(metric.status == "passed")
    out = []
    for name, (deltas, base_passed, head_passed) in collected.items():
        interval = paired_bootstrap(deltas, seed=seed)
        assert interval is not None
        out.append({"name": name, "cases": len(deltas), "meanDelta": interval.mean,
                    "interval": {"low": interval.low, "high": interval.high,
                                 "method": interval.method},
                    "baselinePassRate": _rate(sum(base_passed), len(deltas)),
                    "passRate": _rate(sum(head_passed), len(deltas))})
    return out


@dataclass(frozen=True)
class SuiteShift:
    """A gating metric whose suite-level mean moved beyond its 95% interval's reach of 0."""

    metric: str
    mean: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.metric} {self.mean:+.2f} (95% interval {self.low:+.2f} to {self.high:+.2f})"


def suite_drops(comparison: Comparison | None) -> list[SuiteShift]:
    """The metrics whose mean score dropped over the compared cases with the whole 95%
    interval below 0. Many cases can each drop within noise and together drop for sure: the
    per-case labels cannot say it, so the reports must (read defensively: from a file)."""
    drops = []
    for row in comparison.metrics if comparison is not None else []:
        interval = row.get("interval") if isinstance(row, dict) else None
        if not isinstance(interval, dict) or not isinstance(row.get("name"), str):
            continue
        given = (row.get("meanDelta"), interval.get("low"), interval.get("high"))
        numbers = [v for v in given if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if len(numbers) == len(given) and numbers[2] < 0:
            mean, low, high = numbers
            drops.append(SuiteShift(row["name"], mean, low, high))
    return drops


@dataclass
class _Compared:
    """One metric of one PR case against its pooled baseline, before the family decides."""

    metric: MetricResult
    base: MetricResult
    base_passes: list[bool]
    head_passes: list[bool]  # the PR's own runs
    screened: bool
    test: MetricTest | None  # None: not tested (not screened while confirming)
    fresh: MetricResult | None = None
    # A contested metric (disagreement.py): its screening runs and the fresh runs they are
    # tested against (passes, and their scores for the results).
    contest: tuple[list[bool], list[bool]] | None = None
    contest_scores: list[float | None] | None = None


@dataclass
class _Case:
    head: CaseResult
    pooled: PooledCase | None
    change: str | None  # "new" / "changed" decided before any test
    compared: list[_Compared]
    fresh_runs: list[RunResult] | None = None  # every fresh confirmation run of the case
    fresh_trajectories: list[Trajectory] | None = None  # the trajectories they took


def _gating(metric: MetricResult) -> bool:
    return metric.status != "informational" and metric.threshold is not None


def metric_pairs(pooled: PooledCase, head: CaseResult):
    """(PR metric, newest baseline metric, pooled baseline passes, PR passes) of each gating
    metric compared on both sides. Screening and the comparison read the same pairs. A case
    the model service kept refusing a run of has none: no verdict, no confirmation run."""
    if refused(head):
        return
    base_metrics = {m.name: m for m in pooled.newest.metrics}
    for metric in head.metrics:
        base = base_metrics.get(metric.name)
        if base is None or not _gating(metric) or base.threshold != metric.threshold:
            continue
        base_passes = pooled.passes.get(metric.name, [])
        head_passes = run_passes(head, metric)
        if base_passes and head_passes:
            yield metric, base, base_passes, head_passes


def contestable(pooled: PooledCase, head: CaseResult) -> int:
    """How many gating metrics of a PR case compared on both sides main's newest result
    passed in every run: the metrics a drop every screening run showed can contest
    (disagreement.py), counted from main's runs alone."""
    return sum(1 for metric, *_ in metric_pairs(pooled, head) if all(pooled.screening(metric.name)))


def contestable_metrics(pool: BaselinePool, key: CaseKey, head: CaseResult) -> int:
    pooled = pool.pooled(key, head)
    return 0 if pooled is None else contestable(pooled, head)


def screened_metrics(pool: BaselinePool, key: CaseKey, head: CaseResult) -> dict[str, float]:
    """The gating metrics of a scored PR case that look worse than its pooled baseline (they
    get confirmation runs), each with its screening p-value."""
    pooled = pool.pooled(key, head)
    if pooled is None:
        return {}
    return {metric.name: p_worse(pooled.screening(metric.name), mine)
            for metric, _, _, mine in metric_pairs(pooled, head)
            if screens(pooled.screening(metric.name), mine)}


def _prepare(key: CaseKey, head: CaseResult, pool: BaselinePool,
             confirmations: Mapping[CaseKey, CaseResult] | None,
             contested_runs: Mapping[CaseKey, CaseResult]) -> _Case:
    if head.change == "carried":  # main's own results (--changed-since): nothing to test
        return _Case(head, None, "carried", [])
    if pool.newest_case(key) is None:
        return _Case(head, None, "new", [])
    pooled = pool.pooled(key, head)
    if pooled is None:
        return _Case(head, None, "changed", [])
    fresh_case = confirmations.get(key) if confirmations is not None else None
    if fresh_case is not None and refused(fresh_case):  # its fresh runs did not all run
        return _Case(head, pooled, None, [])
    fresh_metrics = {m.name: m for m in fresh_case.metrics} if fresh_case is not None else {}
    longer = contested_runs.get(key)
    compared = []
    for metric, base, base_passes, head_passes in metric_pairs(pooled, head):
        screened = screens(pooled.screening(metric.name), head_passes)
        test, fresh, contest, contest_scores = None, None, None, None
        if confirmations is None:  # nothing can run again: decide on the runs there are
            test = MetricTest(tuple(base_passes), tuple(head_passes))
        elif screened and metric.name in fresh_metrics:
            fresh = fresh_metrics[metric.name]
            fresh_passes = run_passes(fresh_case, fresh)  # type: ignore[arg-type]
            if fresh_passes:
                test = MetricTest(tuple(pooled.confirming(metric.name)), tuple(fresh_passes),
                                  screen_p=p_worse(pooled.screening(metric.name), head_passes))
                if disagreement.contested(pooled.screening(metric.name), head_passes):
                    # The disagreement test's own fresh runs when it went on past the regression's.
                    own = next((m for m in longer.metrics if m.name == metric.name), None) \
                        if longer is not None else None
                    contest = (head_passes, run_passes(longer, own) if own is not None  # type: ignore[arg-type]
                               else fresh_passes)
                    contest_scores = list(own.runs if own is not None else fresh.runs)
        compared.append(_Compared(metric, base, base_passes, head_passes, screened, test, fresh, contest,
                                  contest_scores))
    if fresh_case is None or not compared:
        return _Case(head, pooled, None, compared)
    return _Case(head, pooled, None, compared, list(fresh_case.runs), fresh_case.trajectories)


def refused(case: CaseResult) -> bool:
    """Whether the model service kept refusing a run of the case (past --max-service-wait)."""
    return any(r.unavailable is not None for r in case.runs)


def _every_run_errored(case: CaseResult) -> bool:
    return bool(case.runs) and all(r.status == "error" for r in case.runs)


def _label(prepared: _Case, family: FamilyDecision, better_level: float,
           confirming: bool, history: bool, contest_level: float) -> CaseResult:
    head = prepared.head
    flaky = case_flaky(head.metrics)  # recomputed: a results file older than the label has none
    if prepared.change is not None:
        return head.model_copy(update={"change": prepared.change, "flaky": flaky, "baseline_pool": None,
                                       "baseline_status": None, "screening_disagrees": None,
                                       "fresh_runs": None, "fresh_trajectories": None,
                                       "metrics": [uncompared(m) for m in head.metrics]})
    pooled = prepared.pooled
    assert pooled is not None
    by_name = {c.metric.name: c for c in prepared.compared}
    regressed = improved = disagrees = False
    metrics = []
    for metric in head.metrics:
        found = by_name.get(metric.name)
        if found is None:
            metrics.append(uncompared(metric))
            continue
        # The p-value shown is the one decided on: the test's own table when there is one.
        base, mine = ((list(found.test.base), list(found.test.head)) if found.test is not None
                      else (found.base_passes, found.head_passes))
        if found.test is not None and family.rejects(found.test):
            regressed = True
        elif p_better(found.base_passes, found.head_passes) <= better_level:
            improved = True
        moved_up = sum(mine) * len(base) > sum(base) * len(mine)
        p_value = p_better(base, mine) if moved_up else p_worse(base, mine)
        delta = (metric.score - found.base.score if metric.score is not None
                 and found.base.score is not None else None)
        update: dict[str, Any] = {"baseline_score": found.base.score, "delta": delta,
                                  "p_value": p_value,
                                  "baseline_runs": pooled.scores.get(metric.name, found.base.runs)}
        if confirming:
            update["screened"] = found.screened
            if found.fresh is not None:
                update["confirm_runs"] = list(found.fresh.runs)
                update["confirm_budget"] = found.fresh.confirm_budget
        if found.contest is not None:
            screening, fresh = found.contest
            update["disagreement_runs"] = found.contest_scores
            p = disagreement.p_disagree(screening, fresh)
            if p <= contest_level:
                disagrees = True
                update["screening_disagreement"] = {
                    "screening": [sum(screening), len(screening)], "fresh": [sum(fresh), len(fresh)],
                    "pValue": p, "level": contest_level}
        metrics.append(uncompared(metric).model_copy(update=update))
    # An agent that could not run the case at all (after its retries), where main passed it.
    if _every_run_errored(head) and pooled.newest.status == "passed":
        regressed = True
    change = "regressed" if regressed else "improved" if improved else "unchanged"
    update = {"metrics": metrics, "change": change, "flaky": flaky,
              "baseline_pool": pooled.sources if history else None,
              "baseline_status": pooled.newest.status, "screening_disagrees": disagrees or None,
              "fresh_runs": prepared.fresh_runs if confirming else None,
              "fresh_trajectories": prepared.fresh_trajectories if confirming else None}
    return head.model_copy(update=update)


def compare(baseline: Results | Sequence[Results], head: Results, *, alpha: float = DEFAULT_ALPHA,
            baseline_info: BaselineInfo | Sequence[BaselineInfo] | None = None,
            seed: int = BOOTSTRAP_SEED,
            confirmations: Mapping[CaseKey, CaseResult] | None = None,
            contested_runs: Mapping[CaseKey, CaseResult] | None = None) -> Results:
    """``head`` with every case labelled against ``baseline`` (one results file, or main's
    history newest first) and ``comparison`` filled in.

    ``confirmations``: the scored fresh runs of each screened case, when the PR got
    confirmation runs; None when nothing could run again (replay, ``compare``), and the
    tests are decided on the runs there are. ``contested_runs``: the fresh runs of contested
    metrics that went on past their regression test (confirm.Confirmation.disagreement_runs);
    without them, their confirmation runs. Pure: no input is modified.
    """
    check_alpha(alpha)
    files = [baseline] if isinstance(baseline, Results) else list(baseline)
    if baseline_info is None:
        infos = [BaselineInfo() for _ in files]
    elif isinstance(baseline_info, BaselineInfo):
        infos = [baseline_info] + [BaselineInfo() for _ in files[1:]]
    else:
        infos = list(baseline_info)
    with paused_gc():
        return _compare(BaselinePool(files, infos, head.ambiguous_ids()), head, alpha, seed, confirmations,
                        contested_runs or {})


def _case_ref(key: CaseKey) -> CaseRef:
    set_id, sep, path = key[0].partition(SEPARATOR)
    return CaseRef(eval_set_id=set_id, eval_id=key[1], path=path if sep else None)


def _compare(pool: BaselinePool, head: Results, alpha: float, seed: int,
             confirmations: Mapping[CaseKey, CaseResult] | None,
             contested_runs: Mapping[CaseKey, CaseResult]) -> Results:
    prepared: list[list[_Case]] = []
    keys_seen: set[CaseKey] = set()
    # Eval sets are matched by id, and by id and path where one of the files has two eval
    # sets with one id (a monorepo: checker/models/setkey.py).
    for set_key, eval_set in zip(head.set_keys(pool.ambiguous), head.eval_sets, strict=False):
        row = []
        for case in eval_set.cases:
            key = (set_key, case.eval_id)
            keys_seen.add(key)
            row.append(_prepare(key, case, pool, confirmations, contested_runs))
        prepared.append(row)
    tests = [c.test for row in prepared for p in row for c in p.compared if c.test is not None]
    family = decide(tests, alpha)
    better_level = decide_improvements(
        [(c.base_passes, c.head_passes) for row in prepared for p in row for c in p.compared], alpha)
    confirming = confirmations is not None
    # Bonferroni over every gating metric main's newest result passed in every run (disagreement.py).
    contest_level = disagreement.level(alpha, sum(contestable(p.pooled, p.head) for row in prepared
                                                  for p in row if p.pooled is not None))
    history = len(pool.files) > 1
    summary = ChangeSummary()
    pairs: list[tuple[CaseResult, CaseResult]] = []
    unknown = 0
    sets = []
    for set_key, eval_set, row in zip(head.set_keys(pool.ambiguous), head.eval_sets, prepared, strict=False):
        cases = []
        for item in row:
            labelled = _label(item, family, better_level, confirming, history, contest_level)
            labelled.behaviour = case_behaviour(labelled, pool.compared_cases(
                (set_key, labelled.eval_id), item.pooled),
                (confirmations or {}).get((set_key, labelled.eval_id)))
            if item.pooled is not None and not refused(labelled):  # (no verdict: no delta)
                pairs.append((item.pooled.newest, labelled))
                if not (item.pooled.newest.fingerprint and labelled.fingerprint):
                    unknown += 1
            assert labelled.change is not None  # _label gives every case its label
            setattr(summary, labelled.change, (getattr(summary, labelled.change) or 0) + 1)
            cases.append(labelled)
        sets.append(eval_set.model_copy(update={"cases": cases}))
    missing = [k for k in pool.keys() if k not in keys_seen]
    outside = outside_run(missing, head, pool)
    removed = [_case_ref(k) for k in missing if k not in outside]
    summary.removed = len(removed)
    notes = []
    if outside:
        summary.outside = len(outside)
        notes.append(f"{len(outside)} case(s) of the baseline are outside this run (eval files it was "
                     "not given, or cases its selection left out): not compared, not counted as removed")
    if unknown:
        notes.append(f"fingerprint unknown for {unknown} case(s) (a results file written before "
                     "fingerprints): matched by eval set and case id only, a change of their "
                     "eval data cannot be seen")
    if pool.newest.verdict_rule != head.verdict_rule:
        notes.append(f"verdict rules differ: baseline '{pool.newest.verdict_rule}', this run "
                     f"'{head.verdict_rule}'")
    baseline_info = pool.infos[0]
    if history:
        baseline_info = baseline_info.model_copy(update={"history": [
            BaselineFile(path=i.path, commit=i.commit) for i in pool.infos]})
    testable_cases = sum(any(c.test is not None and family.level_of(c.test) > 0 for c in p.compared)
                         for row in prepared for p in row)
    familywise = family.as_json(confirming, testable_cases)
    if confirming:  # what the fresh runs were asked for against: `compare` decides on them again
        familywise["baselines"] = [baseline_digest(f) for f in pool.files]
    comparison = Comparison(baseline=baseline_info, summary=summary, removed=removed,
                            metrics=suite_metrics(pairs, seed=seed), notes=notes,
                            familywise=familywise)
    return head.model_copy(update={"eval_sets": sets, "comparison": comparison})
