"""Confirmation runs: fresh runs of the PR for each (case, metric) that screening flagged.

Screening reads the PR's first runs against the pooled baseline (decision.screens). A
flagged case gets fresh runs in rounds of ``ROUND`` up to ``--confirm-runs`` in all; after
each round, a metric whose fresh runs so far clearly do not look worse (one-sided
p(worse) > decision.SCREEN_P: their pass rate is at least the baseline's) is settled as not
confirmed, and the case stops once all its flagged metrics are settled or it has had every
confirmation run. Only the fresh runs decide (comparison.py): the screening runs were
selected for looking worse, and reusing them would bias the decision. Stopping can only end
a test early as *not* regressed, which never raises the false-alarm rate.

Pure bookkeeping: the runs themselves come from the agents stage (compare/adaptive.py
drives both).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..models.results import CaseResult
from .comparison import screened_metrics
from .decision import SCREEN_P, p_worse
from .pooling import BaselinePool, CaseKey, run_passes

ROUND = 5


def joined(earlier: CaseResult | None, later: CaseResult) -> CaseResult:
    """One CaseResult over the runs of both (the metrics' run scores concatenated)."""
    if earlier is None:
        return later
    runs = {m.name: m for m in later.metrics}
    metrics = [m.model_copy(update={"runs": m.runs + (runs[m.name].runs if m.name in runs else [])})
               for m in earlier.metrics]
    return earlier.model_copy(update={"runs": earlier.runs + later.runs, "metrics": metrics})


@dataclass
class Confirming:
    """One case under confirmation."""

    pooled: dict[str, list[bool]]  # per flagged metric, the pooled baseline's passes
    open: set[str]  # flagged metrics not settled yet
    fresh: CaseResult | None = None  # every fresh run so far, scored
    runs: int = 0  # fresh runs asked for so far
    looked_worse: dict[str, int] = field(default_factory=dict)  # screening runs per metric


class Confirmation:
    """Which cases get fresh runs, round by round, and their scored fresh runs."""

    def __init__(self, pool: BaselinePool, confirm_runs: int):
        self.pool = pool
        self.confirm_runs = confirm_runs
        self.cases: dict[CaseKey, Confirming] = {}
        self.rounds = 0

    def start(self, scored: dict[CaseKey, CaseResult]) -> list[CaseKey]:
        """Screen every scored case; the first round's requests (a key once per run)."""
        for key, case in scored.items():
            flagged = screened_metrics(self.pool, key, case)
            if not flagged or self.confirm_runs <= 0:
                continue
            pooled = self.pool.pooled(key, case)
            assert pooled is not None
            self.cases[key] = Confirming(
                pooled={name: pooled.confirming(name) for name in flagged}, open=set(flagged),
                looked_worse={m.name: len(m.runs) for m in case.metrics if m.name in flagged})
        return self._round()

    def add(self, key: CaseKey, scored_round: CaseResult) -> None:
        """The scored fresh runs of one round of ``key``."""
        state = self.cases[key]
        state.fresh = joined(state.fresh, scored_round)
        by_name = {m.name: m for m in state.fresh.metrics}
        for name in list(state.open):
            metric = by_name.get(name)
            fresh = run_passes(state.fresh, metric) if metric is not None else []
            if fresh and p_worse(state.pooled[name], fresh) > SCREEN_P:
                state.open.discard(name)  # clearly not worse: settled, not confirmed

    def next_round(self) -> list[CaseKey]:
        return self._round()

    def _round(self) -> list[CaseKey]:
        wanted = []
        for key, state in self.cases.items():
            if not state.open or state.runs >= self.confirm_runs:
                continue
            more = min(ROUND, self.confirm_runs - state.runs)
            state.runs += more
            wanted += [key] * more
        if wanted:
            self.rounds += 1
        return wanted

    def confirmations(self) -> dict[CaseKey, CaseResult]:
        """Each confirmed case's scored fresh runs (what comparison.compare decides on)."""
        return {key: state.fresh for key, state in self.cases.items() if state.fresh is not None}

    def extra_runs(self) -> int:
        return sum(state.runs for state in self.cases.values())

    def metadata(self) -> dict:
        return {"confirmRuns": self.confirm_runs, "confirmRounds": self.rounds,
                "confirmExtraRuns": self.extra_runs(), "confirmCases": len(self.cases)}
