"""The data flow: discovered targets + recorded runs -> scored Results."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping

from ..models.verdict_rule import MEAN, VerdictRule
from ..inputs.discover import EvalTarget
from ..models.setkey import RunKey
from ..metrics.base import ScoringContext
from ..models.evalset import EvalCase
from ..models.records import RecordedRun
from ..models.results import CaseResult, EvalSetResult, Results, Summary
from .case import score_case
from ..models.usage import sum_usage

def summarize(sets: list[EvalSetResult]) -> Summary:
    """Cases carried from main count with main's status; their tokens were not spent here."""
    cases = [c for s in sets for c in s.cases]
    carried = sum(c.change == "carried" for c in cases)
    return Summary(eval_sets=len(sets), cases=len(cases),
                   passed=sum(c.status == "passed" for c in cases),
                   failed=sum(c.status == "failed" for c in cases),
                   errored=sum(c.status == "error" for c in cases),
                   not_evaluated=sum(c.status == "not_evaluated" for c in cases),
                   usage=sum_usage(c.usage for c in cases if c.change != "carried"),
                   carried=carried or None)


async def _ready(case: CaseResult) -> CaseResult:
    return case


def run_counts(runs: Mapping[RunKey, list[RecordedRun]]) -> Iterable[int]:
    """Runs per case, without decoding lazily read runs (checker/inputs/replay.py)."""
    counts = getattr(runs, "run_counts", None)
    return counts() if counts is not None else (len(r) for r in runs.values())


# Cases scored at once. Their runs are fetched when a case starts and dropped when it is
# scored, so memory follows this window, not the suite (judge calls have their own limit).
CASES_IN_FLIGHT = 64


async def score_all(targets: list[EvalTarget], runs: Mapping[RunKey, list[RecordedRun]],
                    context: ScoringContext | None = None, rule: VerdictRule = MEAN,
                    known: dict[RunKey, CaseResult] | None = None, release_cases: bool = False) -> Results:
    """Score every selected case; ``known`` holds cases already scored on exactly these
    runs (adaptive runs score as they go), which are taken as they are.

    ``release_cases``: the targets are not used after this, so every eval case is let go
    once scored (the eval sets are emptied): a large suite's memory then holds its
    results, not its eval data as well."""
    context = context or ScoringContext()
    known = known or {}
    window = asyncio.Semaphore(CASES_IN_FLIGHT)

    async def scored(target: EvalTarget, case: EvalCase, key: RunKey) -> CaseResult:
        async with window:
            return await score_case(case, target.config, runs.get(key, []),
                                    target.loaded.case_lines.get(case.eval_id, 1), context, rule)

    jobs = []
    for target in targets:
        wanted = set(target.case_ids)
        cases = {c.eval_id: c for c in target.loaded.eval_set.eval_cases if c.eval_id in wanted}
        if release_cases:
            target.loaded.eval_set.eval_cases.clear()
        for case_id in target.case_ids:
            if (target.key, case_id) in known:
                jobs.append(_ready(known[(target.key, case_id)]))
                continue
            # popped: the coroutine holds the case until it is scored, nothing else does
            jobs.append(scored(target, cases.pop(case_id), (target.key, case_id)))
    # gather keeps input order whatever order the scoring finishes in.
    case_results = iter(await asyncio.gather(*jobs))
    sets = []
    for target in targets:
        sets.append(EvalSetResult(eval_set_id=target.eval_set_id, path=target.loaded.display_path,
                                  config_path=target.config.display_path,
                                  cases=[next(case_results) for _ in target.case_ids],
                                  unselected=target.unselected or None))
    return finish_results(sets, str(rule))


def finish_results(sets: list[EvalSetResult], rule: str) -> Results:
    """Results of scored eval sets: the summary and the verdict (also of merged shards)."""
    summary = summarize(sets)
    passed = summary.cases > 0 and summary.passed == summary.cases
    return Results(passed=passed, verdict_rule=rule, summary=summary, eval_sets=sets)
