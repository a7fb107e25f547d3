"""Extra runs after the first ``--num-runs``: adaptive runs, then confirmation runs.

Adaptive runs (``--max-runs M``): every case is scored after each round; a case whose
verdict is uncertain (a gating metric's runs disagree, or under ``mean`` one more run could
move the mean across the threshold - ``VerdictRule.uncertain``) gets one more run, and so
on, until no case is uncertain or each uncertain case has ``M`` runs. With a baseline, a
case whose comparison is undecided - it looks worse than main's runs (screening) - counts
as uncertain too. A case that errored gets none (more runs cannot undo an error).

Confirmation runs (``--confirm-runs N``, with a baseline): once no case wants an adaptive
run, the cases screening flags get fresh runs in rounds (confirm.py); those runs are kept
apart and scored apart - the comparison decides on them alone.

The scores of each round are kept, so the final results reuse them instead of scoring (and
asking a judge) twice. Replay mode has nothing to run. See docs/comparing.md.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..models.verdict_rule import VerdictRule
from ..metrics.base import ScoringContext
from ..models.records import RecordedRun
from ..safety.output import say
from ..models.results import CaseResult
from ..scoring.case import score_case
from .comparison import screened_metrics
from .confirm import Confirmation, confirmation_line
from .decision import DEFAULT_ALPHA
from .pooling import BaselinePool
from ..models.setkey import RunKey

if TYPE_CHECKING:
    from ..inputs.discover import EvalTarget
    from ..models.results import Results


@dataclass(frozen=True)
class AdaptiveOptions:
    """What the extra rounds take of a run's options (built by checker/commands/stage_options.py)."""

    num_runs: int = 2  # --num-runs: the first runs of every case
    max_runs: int | None = None  # --max-runs: adaptive runs up to this many a case
    confirm_runs: int = 0  # fresh runs per screened case, with a baseline (0: none)
    replay: bool = False  # nothing can run again
    alpha: float = DEFAULT_ALPHA  # family-wise level of the regression decisions


def uncertain(case: CaseResult, rule: VerdictRule) -> bool:
    if case.status in ("error", "not_evaluated"):
        return False
    return any(rule.uncertain(m.runs, m.threshold, bool(m.lower_is_better)) for m in case.metrics
               if m.threshold is not None and m.status in ("passed", "failed"))


class AdaptiveRuns:
    """The ``more`` callback of ``run_agent_jobs``: scores each finished round and names the
    cases that get more runs. ``scored`` holds every case's latest CaseResult over its
    first runs; ``confirmation`` the fresh runs, apart."""

    def __init__(self, targets: list[EvalTarget], max_runs: int, rule: VerdictRule,
                 context: ScoringContext, pool: BaselinePool | None = None, confirm_runs: int = 0,
                 adaptive: bool = True, alpha: float = DEFAULT_ALPHA, shard: bool = False):
        self.max_runs = max_runs
        self.adaptive = adaptive  # False: only confirmation runs (no --max-runs above --num-runs)
        self.pool = pool
        self.confirmation = (Confirmation(pool, confirm_runs, alpha, shard=shard)
                             if pool is not None and confirm_runs else None)
        self.confirming = False
        self.rule = rule
        self.context = context
        self.cases = {}
        for target in targets:
            by_id = {c.eval_id: c for c in target.loaded.eval_set.eval_cases}
            for case_id in target.case_ids:
                self.cases[(target.key, case_id)] = (
                    by_id[case_id], target.config, target.loaded.case_lines.get(case_id, 1))
        self.runs: dict[RunKey, list[RecordedRun]] = {}
        self.scored: dict[RunKey, CaseResult] = {}
        self.rounds = 0
        self.extra_runs = 0
        self.extended: set[RunKey] = set()  # cases that got an extra run
        self.fresh_runs: dict[RunKey, set[int]] = {}  # run numbers of confirmation runs

    def _uncertain(self, key: RunKey, case: CaseResult) -> bool:
        if uncertain(case, self.rule):
            return True
        return self.pool is not None and case.status not in ("error", "not_evaluated") \
            and bool(screened_metrics(self.pool, key, case))

    async def more(self, finished: list[RecordedRun]) -> list[RunKey]:
        if self.confirming:
            return await self._confirm(finished)
        touched = list(dict.fromkeys((r.key, r.eval_id) for r in finished))
        for run in finished:
            self.runs.setdefault((run.key, run.eval_id), []).append(run)
        scored = await asyncio.gather(*(self._score(key) for key in touched))
        self.scored.update(zip(touched, scored, strict=False))
        wanted = [key for key, case in zip(touched, scored, strict=False)
                  if len(self.runs[key]) < self.max_runs and self._uncertain(key, case)]
        if not wanted and self.confirmation is not None:
            self.confirming = True
            wanted = self.confirmation.start(self.scored)
            if wanted:
                say(f"evalcheck: confirmation: {len(set(wanted))} case(s) look worse than the "
                    f"baseline; a first round of {len(wanted)} fresh run(s) to confirm", err=True)
            return wanted
        if wanted:
            self.rounds += 1
            self.extra_runs += len(wanted)
            self.extended.update(wanted)
            say(f"evalcheck: adaptive runs: round {self.rounds}: {len(wanted)} case(s) with an "
                "uncertain verdict get one more run", err=True)
        return wanted

    async def _score(self, key: RunKey, runs: list[RecordedRun] | None = None) -> CaseResult:
        case, config, line = self.cases[key]
        return await score_case(case, config, self.runs[key] if runs is None else runs, line,
                                self.context, self.rule)

    async def _confirm(self, finished: list[RecordedRun]) -> list[RunKey]:
        assert self.confirmation is not None
        fresh: dict[RunKey, list[RecordedRun]] = {}
        for run in finished:
            key = (run.key, run.eval_id)
            fresh.setdefault(key, []).append(run)
            self.fresh_runs.setdefault(key, set()).add(run.run)
        scored = await asyncio.gather(*(self._score(key, runs) for key, runs in fresh.items()))
        for key, case in zip(fresh, scored, strict=False):
            self.confirmation.add(key, case)
        return self.confirmation.next_round()

    def first_runs(self, key: RunKey, runs: list[RecordedRun]) -> list[RecordedRun]:
        """``runs`` without the fresh confirmation runs (kept apart)."""
        fresh = self.fresh_runs.get(key)
        return [r for r in runs if r.run not in fresh] if fresh else runs

    def lines(self) -> list[str]:
        """The terminal lines: adaptive runs (when asked for), confirmation runs."""
        out = [self.line()] if self.adaptive else []
        line = confirmation_line(self.confirmation.metadata()) if self.confirmation is not None else None
        return out + ([line] if line else [])

    def line(self) -> str:
        """The terminal line: how many extra runs went to how many cases."""
        if not self.extra_runs:
            return f"adaptive runs: every verdict settled, no extra run (--max-runs {self.max_runs})"
        extra = {key: len(self.runs[key]) for key in self.extended}
        most = sorted(extra.items(), key=lambda item: (-item[1], item[0]))[:5]
        return (f"adaptive runs: {self.extra_runs} extra run(s) in {self.rounds} round(s) to "
                f"{len(extra)} case(s), up to {self.max_runs} runs a case: "
                + ", ".join(f"{set_id}/{case_id} {n} runs" for (set_id, case_id), n in most)
                + (", ..." if len(extra) > len(most) else ""))

    def metadata(self) -> dict[str, int]:
        out = {"maxRuns": self.max_runs, "adaptiveRounds": self.rounds,
               "adaptiveExtraRuns": self.extra_runs} if self.adaptive else {}
        if self.confirmation is not None:
            out.update(self.confirmation.metadata())
        return out


def extra_runs(options: AdaptiveOptions, targets: list[EvalTarget], rule: VerdictRule,
               context: ScoringContext, baselines: list[Results], *, shard: bool = False) -> AdaptiveRuns | None:
    """The rounds after the first --num-runs: adaptive runs (--max-runs) and, with a
    baseline, confirmation runs of the cases that look worse (--confirm-runs); ``shard``:
    of one shard's cases (confirm.py: the merge decides)."""
    adaptive = options.max_runs is not None and options.max_runs > options.num_runs
    confirm = options.confirm_runs if baselines else 0
    if options.replay:
        if adaptive:
            say("evalcheck: note: --max-runs is ignored in replay mode (nothing to run)", err=True)
        return None
    if not adaptive and not confirm:
        return None
    most = options.max_runs if adaptive and options.max_runs is not None else options.num_runs
    extra = AdaptiveRuns(targets, most, rule, context,
                         pool=BaselinePool(baselines, ambiguous={t.eval_set_id for t in targets
                                                                 if t.key != t.eval_set_id})
                         if baselines else None, confirm_runs=confirm, adaptive=adaptive,
                         alpha=options.alpha, shard=shard)
    return extra
