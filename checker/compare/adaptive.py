"""Adaptive runs (``--max-runs M``): extra runs only where they can change a verdict.

After the ``--num-runs`` round, every case is scored; a case whose verdict is uncertain
(a gating metric's runs disagree, or under ``mean`` one more run could move the mean across
the threshold - ``VerdictRule.uncertain``) gets one more run, and so on, one round at a
time, until no case is uncertain or each uncertain case has ``M`` runs. A case that errored
gets none (more runs cannot undo an error). The scores of each round are kept, so the final
results reuse them instead of scoring (and asking a judge) twice. Replay mode has nothing to
run and ignores ``--max-runs``. See docs/comparing.md.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from .verdict import VerdictRule
from ..metrics.base import ScoringContext
from ..models.records import RecordedRun
from ..safety.output import say
from ..models.results import CaseResult
from ..scoring.case import score_case

if TYPE_CHECKING:
    from ..inputs.discover import EvalTarget

RunKey = tuple[str, str]


def uncertain(case: CaseResult, rule: VerdictRule) -> bool:
    if case.status in ("error", "not_evaluated"):
        return False
    return any(rule.uncertain(m.runs, m.threshold) for m in case.metrics
               if m.threshold is not None and m.status in ("passed", "failed"))


class AdaptiveRuns:
    """The ``more`` callback of ``run_agent_jobs``: scores each finished round and names the
    cases that get one more run. ``scored`` holds every case's latest CaseResult."""

    def __init__(self, targets: list[EvalTarget], max_runs: int, rule: VerdictRule,
                 context: ScoringContext):
        self.max_runs = max_runs
        self.rule = rule
        self.context = context
        self.cases = {}
        for target in targets:
            by_id = {c.eval_id: c for c in target.loaded.eval_set.eval_cases}
            for case_id in target.case_ids:
                self.cases[(target.eval_set_id, case_id)] = (
                    by_id[case_id], target.config, target.loaded.case_lines.get(case_id, 1))
        self.runs: dict[RunKey, list[RecordedRun]] = {}
        self.scored: dict[RunKey, CaseResult] = {}
        self.rounds = 0
        self.extra_runs = 0
        self.extended: set[RunKey] = set()  # cases that got an extra run

    async def more(self, finished: list[RecordedRun]) -> list[RunKey]:
        touched = list(dict.fromkeys((r.eval_set_id, r.eval_id) for r in finished))
        for run in finished:
            self.runs.setdefault((run.eval_set_id, run.eval_id), []).append(run)
        scored = await asyncio.gather(*(self._score(key) for key in touched))
        self.scored.update(zip(touched, scored))
        wanted = [key for key, case in zip(touched, scored)
                  if len(self.runs[key]) < self.max_runs and uncertain(case, self.rule)]
        if wanted:
            self.rounds += 1
            self.extra_runs += len(wanted)
            self.extended.update(wanted)
            say(f"evalcheck: adaptive runs: round {self.rounds}: {len(wanted)} case(s) with an "
                "uncertain verdict get one more run", err=True)
        return wanted

    async def _score(self, key: RunKey) -> CaseResult:
        case, config, line = self.cases[key]
        return await score_case(case, config, self.runs[key], line, self.context, self.rule)

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
        return {"maxRuns": self.max_runs, "adaptiveRounds": self.rounds,
                "adaptiveExtraRuns": self.extra_runs}
