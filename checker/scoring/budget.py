"""The cases a spent token budget left out (--max-agent-tokens, --max-judge-tokens): not
evaluated, never passed, and the budgets named in the results (the exit status is then 2).

A run the agent budget kept from starting is listed in its case as ``not_evaluated`` ("not
started"), and its case is not evaluated unless a run that did happen failed it. A metric the
judge budget left out on some run is ``not_evaluated`` already (scoring/case.py)."""

from __future__ import annotations

from ..models.results import Results, RunResult
from ..models.usage import TokenBudget
from .case import NOT_STARTED, case_status
from .pipeline import summarize


def leave_out(results: Results, agent: TokenBudget | None, judge: TokenBudget | None) -> None:
    spent = [b for b in (agent, judge) if b is not None and b.refused]
    if not spent:
        return
    skipped: dict[tuple[str, str], list[int]] = {}
    for key, eval_id, run in agent.skipped if agent is not None else []:
        skipped.setdefault((key, eval_id), []).append(run)
    for key, eval_set in zip(results.set_keys(), results.eval_sets, strict=False):
        for case in eval_set.cases:
            runs = skipped.get((key, case.eval_id))
            if runs and agent is not None:
                agent.cases.add((key, case.eval_id))
                case.runs = sorted([*case.runs, *(RunResult(
                    run=n, status="not_evaluated",
                    error=f"{NOT_STARTED}{agent.message()}") for n in runs)], key=lambda r: r.run)
                case.status = case_status(case.runs, case.metrics)
            if judge is not None and any(m.status == "not_evaluated" and (m.error or "").startswith(
                    "the judge token budget") for m in case.metrics):
                judge.cases.add((key, case.eval_id))
    usage = results.summary.usage
    results.summary = summarize(results.eval_sets)
    results.summary.usage = usage
    results.passed = False
    results.budgets = [b.as_json() for b in spent]
