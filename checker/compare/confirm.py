"""Confirmation runs: fresh runs of the PR for each (case, metric) that screening flagged.

Screening reads the PR's first runs against the newest main result (decision.screens). A
flagged metric may get fresh runs up to its **budget**: all of ``--confirm-runs`` when it
looked clearly worse (screening p <= ``STRONG_SCREEN_P``), two thirds of it when it only
looked a little worse - runs go where a regression is likely, and the screening data that
sets the budget is not data the decision reads, so the budget cannot bias it. Runs come in
rounds of ``ROUND``; after each round a metric stops when it is **settled** (its fresh runs
so far do not look worse: one-sided p(worse) > decision.SCREEN_P; or, from
``FUTILITY_RUNS`` fresh runs on, p(worse) > ``FUTILITY_P``: too far from any level the
suite could decide at) or when it has had its budget, or when its drop is already **certain**:
even if every run left in its budget passed, its p-value would be at or below the least
level the suite's decision can give it (``certain_level``) - the test is regressed whatever
those runs do, so they are not asked for. A case runs while any of its flagged metrics
does.

Each metric's decision reads the fresh runs up to where *it* stopped, never runs that a
sibling metric of the same case went on to ask for: those would let one metric's data
choose how long another is observed. Only the fresh runs decide (comparison.py): the
screening runs were selected for looking worse, and reusing them would bias the decision.
Stopping ends a test early only as *not* regressed, which never adds a false alarm, or as
regressed whatever its remaining runs would have done: the full budget's verdict.

A metric whose screening runs all failed where main's newest result passed every run is
*contested* (disagreement.py): the fresh runs may contradict a drop every screening run
showed, so it goes on getting fresh runs after its regression test stopped, until that
question is decided either way or its budget is spent. Those runs are the disagreement
test's (``disagreement_runs``); the regression test reads only its own.

A shard (``--shard I/N``) sees only its own cases, so it cannot know the suite's family: it
screens and confirms as above, and records the fresh runs; the merge decides the family over
every shard's (docs/sharding.md). Its stops must then give the verdict the full budget would
whatever the other shards hold: a regression test is never stopped as certain (its least
level depends on every screened test of the suite), and a disagreement stops only once it is
decided at every level the suite's family can have - between alpha / (the metrics main's
newest results passed in every run, over the whole baseline) and alpha / (this shard's own).

Pure bookkeeping: the runs themselves come from the agents stage (compare/adaptive.py
drives both).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..models.results import CaseResult
from . import disagreement
from .comparison import contestable_metrics, screened_metrics
from .decision import DEFAULT_ALPHA, SCREEN_P, p_worse, screening_weight
from .pooling import BaselinePool, CaseKey, run_passes

ROUND = 5
# Screening p at or below this: the metric looked clearly worse (with 3 runs a side, 3/3 ->
# 1/3 or worse) and gets every confirmation run; above it, two thirds of them.
STRONG_SCREEN_P = 0.2
# From this many fresh runs on, a metric whose p(worse) is above FUTILITY_P is settled.
FUTILITY_RUNS = 10
FUTILITY_P = 0.2


def budget(confirm_runs: int, screen_p: float) -> int:
    """The fresh runs a flagged metric may get, from its screening p-value."""
    return confirm_runs if screen_p <= STRONG_SCREEN_P else -(-2 * confirm_runs // 3)


def settled(fresh_runs: int, p: float, alpha: float = DEFAULT_ALPHA) -> bool:
    """Whether fresh runs with this p(worse) against the baseline end the metric's test as
    not confirmed. Futility never stops a p the family could still reject (alpha may be up
    to 0.5, and no test's level exceeds alpha)."""
    return p > SCREEN_P or (fresh_runs >= FUTILITY_RUNS and p > max(FUTILITY_P, alpha))


def certain_level(alpha: float, screen_p: float, total_weight: float, flagged: int) -> float:
    """The least level the family decision (decision.decide) can give a confirmed test: its
    weighted level alpha * w / K = alpha * raw / (sum of raw over the testable tests) is at
    least alpha * raw / (sum over every flagged test), and it is testable once its p is at
    most alpha / K, where K <= the number of tests <= ``flagged``."""
    return min(alpha * screening_weight(screen_p) / total_weight, alpha / flagged)


def joined(earlier: CaseResult | None, later: CaseResult) -> CaseResult:
    """One CaseResult over the runs of both (the metrics' run scores and the trajectories
    joined)."""
    if earlier is None:
        return later
    runs = {m.name: m for m in later.metrics}
    metrics = [m.model_copy(update={"runs": m.runs + (runs[m.name].runs if m.name in runs else [])})
               for m in earlier.metrics]
    from ..scoring.trajectories import merged  # the behaviour diff counts every fresh run

    return earlier.model_copy(update={"runs": earlier.runs + later.runs, "metrics": metrics,
                                      "trajectories": merged(earlier.trajectories, later.trajectories)})


def baseline_contestable(pool: BaselinePool) -> int:
    """At least as many as the disagreement family of any run against ``pool`` holds: every
    gating metric of every case's newest result whose runs all passed (comparison.contestable
    counts those of them a run compares)."""
    count = 0
    for key in pool.keys():
        found = pool.newest_case(key)
        assert found is not None
        case = found[1]
        for metric in case.metrics:
            if metric.status != "informational":
                passes = run_passes(case, metric)
                count += bool(passes) and all(passes)
    return count


@dataclass
class Confirming:
    """One case under confirmation."""

    pooled: dict[str, list[bool]]  # per flagged metric, the pooled baseline's passes
    budgets: dict[str, int]  # per flagged metric, the most fresh runs it may get
    screen_p: dict[str, float]  # per flagged metric, its screening p-value
    open: set[str]  # flagged metrics not stopped yet
    fresh: CaseResult | None = None  # every fresh run so far, scored
    runs: int = 0  # fresh runs asked for so far
    stopped: dict[str, int] = field(default_factory=dict)  # per metric: fresh runs its test reads
    # Contested metrics (every screening run failed, main's newest passed every run): their
    # screening runs, those whose disagreement is open, the fresh runs their test reads.
    screening: dict[str, list[bool]] = field(default_factory=dict)
    contesting: set[str] = field(default_factory=set)
    contest_stopped: dict[str, int] = field(default_factory=dict)
    certain: set[str] = field(default_factory=set)  # metrics certainly regressed


class Confirmation:
    """Which cases get fresh runs, round by round, and their scored fresh runs."""

    def __init__(self, pool: BaselinePool, confirm_runs: int, alpha: float = DEFAULT_ALPHA, *,
                 shard: bool = False):
        self.pool = pool
        self.confirm_runs = confirm_runs
        self.alpha = alpha
        # A shard: the family is the merge's, over cases this one does not see (module doc).
        self.shard = shard
        self.cases: dict[CaseKey, Confirming] = {}
        self.rounds = 0
        self.curtailed = 0  # metrics whose regression was certain before their budget ran out

    def start(self, scored: dict[CaseKey, CaseResult]) -> list[CaseKey]:
        """Screen every scored case; the first round's requests (a key once per run)."""
        compared = 0  # the disagreement family: every metric main passed in every run
        for key, case in scored.items():
            compared += contestable_metrics(self.pool, key, case)
            flagged = screened_metrics(self.pool, key, case)
            if not flagged or self.confirm_runs <= 0:
                continue
            pooled = self.pool.pooled(key, case)
            assert pooled is not None
            mine = {m.name: run_passes(case, m) for m in case.metrics if m.name in flagged}
            screening = {name: mine[name] for name in flagged
                         if disagreement.contested(pooled.screening(name), mine.get(name, []))}
            self.cases[key] = Confirming(
                pooled={name: pooled.confirming(name) for name in flagged},
                budgets={name: budget(self.confirm_runs, p) for name, p in flagged.items()},
                screen_p=flagged, open=set(flagged), screening=screening, contesting=set(screening))
        # Every test the family can hold is flagged now: the least level each can get is known.
        flagged_p = [p for state in self.cases.values() for p in state.screen_p.values()]
        self._total_weight = sum(map(screening_weight, flagged_p))
        self._flagged = len(flagged_p)
        self._disagree_level = disagreement.level(self.alpha, compared)
        # The least level the disagreement family can have: in a shard, over every metric of
        # the whole baseline that main's newest result passed in every run.
        self._disagree_least = disagreement.level(self.alpha, baseline_contestable(self.pool)) \
            if self.shard else self._disagree_level
        return self._round()

    def _certain(self, state: Confirming, name: str, fresh: list[bool], done: int) -> bool:
        """Whether the metric's test is regressed whatever its remaining runs do: its p-value
        with every one of them passing - the largest it can end with, and at least its p-value
        now (a passing run never lowers p(worse); fewer passes or runs only lower it) - is at
        most its least possible level. Never in a shard: that level is the merge's."""
        if self.shard:
            return False
        level = certain_level(self.alpha, state.screen_p[name], self._total_weight, self._flagged)
        left = max(0, state.budgets[name] - done)
        return p_worse(state.pooled[name], fresh + [True] * left) <= level

    def add(self, key: CaseKey, scored_round: CaseResult) -> None:
        """The scored fresh runs of one round of ``key``."""
        state = self.cases[key]
        state.fresh = joined(state.fresh, scored_round)
        done = len(state.fresh.runs)
        by_name = {m.name: m for m in state.fresh.metrics}
        for name in list(state.open):
            metric = by_name.get(name)
            fresh = run_passes(state.fresh, metric) if metric is not None else []
            certain = bool(fresh) and self._certain(state, name, fresh, done)
            if (fresh and settled(done, p_worse(state.pooled[name], fresh), self.alpha)) \
                    or done >= state.budgets[name] or certain:
                if certain and done < state.budgets[name]:
                    self.curtailed += 1
                if certain:
                    state.certain.add(name)
                state.open.discard(name)
                # A round can overshoot a metric's budget while a sibling goes on: its test
                # reads its own budget's worth, the first runs (chosen before any was seen).
                state.stopped[name] = min(done, state.budgets[name])
        for name in list(state.contesting):
            metric = by_name.get(name)
            fresh = run_passes(state.fresh, metric) if metric is not None else []
            left = max(0, state.budgets[name] - done)
            # Certainly regressed: the case fails whatever the disagreement says.
            if done >= state.budgets[name] or name in state.certain or (fresh and disagreement.decided(
                    state.screening[name], fresh, left, self._disagree_level, self._disagree_least)):
                state.contesting.discard(name)
                state.contest_stopped[name] = min(done, state.budgets[name])

    def next_round(self) -> list[CaseKey]:
        return self._round()

    def _round(self) -> list[CaseKey]:
        wanted = []
        for key, state in self.cases.items():
            most = max((state.budgets[name] for name in state.open | state.contesting), default=0)
            if state.runs >= most:
                continue
            more = min(ROUND, most - state.runs)
            state.runs += more
            wanted += [key] * more
        if wanted:
            self.rounds += 1
        return wanted

    def confirmations(self) -> dict[CaseKey, CaseResult]:
        """Each confirmed case's scored fresh runs (what comparison.compare decides on), each
        flagged metric's cut where its own test stopped."""
        out = {}
        for key, state in self.cases.items():
            if state.fresh is None:
                continue
            metrics = [m.model_copy(update={"runs": m.runs[:state.stopped[m.name]],
                                            "confirm_budget": state.budgets[m.name]})
                       if m.name in state.stopped else m for m in state.fresh.metrics]
            out[key] = state.fresh.model_copy(update={"metrics": metrics})
        return out

    def disagreement_runs(self) -> dict[CaseKey, CaseResult]:
        """Each contested metric's fresh runs, cut where its disagreement test stopped (what
        comparison.compare tests the screening runs against); other metrics left out."""
        out = {}
        for key, state in self.cases.items():
            if state.fresh is None or not state.contest_stopped:
                continue
            metrics = [m.model_copy(update={"runs": m.runs[:state.contest_stopped[m.name]]})
                       for m in state.fresh.metrics if m.name in state.contest_stopped]
            out[key] = state.fresh.model_copy(update={"metrics": metrics})
        return out

    def extra_runs(self) -> int:
        return sum(state.runs for state in self.cases.values())

    def metadata(self) -> dict:
        return {"confirmRuns": self.confirm_runs, "confirmRounds": self.rounds,
                "confirmExtraRuns": self.extra_runs(), "confirmCases": len(self.cases),
                "confirmCertainEarly": self.curtailed,
                "confirmContested": sum(len(state.screening) for state in self.cases.values()),
                "confirmContestedRuns": self.contested_runs()}

    def contested_runs(self) -> int:
        """Fresh runs asked for only because a contested metric's disagreement was still
        open after every regression test of its case had stopped."""
        return sum(max(0, state.runs - max(state.stopped.values(), default=0))
                   for state in self.cases.values() if state.contest_stopped)


def confirmation_line(metadata: dict) -> str | None:
    """The terminal's line of a run's confirmation runs, from its results' metadata (so run,
    merge and compare say the same): how many fresh runs, in how many rounds, for how many
    cases, and how many of them only checked that screening and confirmation agree (step 5
    of docs/comparing.md); None without confirmation."""
    def count(key: str) -> int | None:
        value = metadata.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    most, total, cases = count("confirmRuns"), count("confirmExtraRuns"), count("confirmCases")
    if most is None or total is None or cases is None:
        return None
    if not cases:
        return "confirmation: no case looked worse than the baseline, no fresh run"
    contested = count("confirmContestedRuns") or 0
    split = (f": {total - contested} for the regression tests, {contested} more only to check that "
             "screening and confirmation agree" if contested else "")
    return (f"confirmation: {total} fresh run(s) in {count('confirmRounds') or 0} round(s) for {cases} "
            f"case(s) that looked worse than the baseline{split} (up to {most} a case, "
            f"{budget(most, 1.0)} where it looked only a little worse)")
