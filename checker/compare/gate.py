"""The gate: whether a results file fails the job, per ``fail-on`` (CLI and Action alike).

- ``failure``: any case did not pass (a metric failed, a run or metric errored, nothing
  could be scored).
- ``regression``: a case regressed against the baseline (decided for the whole suite at the
  family-wise alpha, docs/comparing.md), its fresh confirmation runs contradict a drop every
  screening run showed (compare/disagreement.py), a new or changed case does not pass, or a
  metric could not be computed (a judge or custom metric errored: nothing can be said). A run of
  the agent that errored (after its retries) is a failing run in the comparison, not a
  gate failure by itself. Without a comparison it is ``failure`` (and says so); a shard's
  results, compared only once merged (``merge --baseline``), fail it only when a metric
  errored.
- ``drop``: ``regression``, and also when a gating metric's suite mean-delta interval lies
  wholly below 0 (many cases each within noise, together worse for sure).
- ``error``: a run or metric errored, or nothing could be scored.
- ``never``: advisory, never fails.

An interrupted run (SIGTERM, Ctrl-C: ``results.interrupted``) fails under every rule: what ran
is reported, and a run that did not end is never a pass (CONTRACT section 11).

Overrides (compare/overrides.py, docs/quarantine.md): a case the base branch's quarantine
file quarantines never gates, under any rule; a regression (and a suite drop) accepted by
the pull request's accept label does not fail ``regression`` or ``drop``.
"""

from __future__ import annotations

from ..models.results import CaseResult, Results
from .comparison import SuiteShift, suite_drops
from ..scoring.refusals import refused, refused_case

FAIL_ON = ("failure", "regression", "drop", "error", "never")
SCREENING_DISAGREES = "whose screening and confirmation disagree"
COMPARING = ("regression", "drop")


def gating_cases(results: Results) -> list[CaseResult]:
    """Every case but the quarantined ones (they run and are reported, and never gate)."""
    return [c for es in results.eval_sets for c in es.cases if c.quarantined is None]


def accepted_keys(results: Results) -> set[tuple[str, str]]:
    """(eval set id, eval id) of the regressions the accept label accepted."""
    accepted = results.comparison.accepted if results.comparison is not None else None
    return {(ref.eval_set_id, ref.eval_id) for ref in (accepted.cases if accepted else [])}


def _accepted_drops(results: Results) -> set[str]:
    accepted = results.comparison.accepted if results.comparison is not None else None
    return set(accepted.suite_drops or []) if accepted is not None else set()


def gating_drops(results: Results) -> list[SuiteShift]:
    """The suite's drops the accept label did not accept."""
    return [d for d in suite_drops(results.comparison) if d.metric not in _accepted_drops(results)]


def _only_quarantined_fail(results: Results) -> bool:
    """Every case that did not pass is quarantined (and nothing else failed the run)."""
    return (results.summary.cases > 0 and not results.file_errors and not results.budgets
            and all(c.status == "passed" for c in gating_cases(results)))


def _errored(results: Results) -> bool:
    # A failed case can hide an errored run (its failing metric decides its status), or a
    # gating metric that nothing could score (which fails its case, as in AgentEvaluator).
    return any(c.status in ("error", "not_evaluated") or any(r.status == "error" for r in c.runs)
               or any(m.status == "not_evaluated" for m in c.metrics)
               for c in gating_cases(results))


def _metric_errored(case: CaseResult) -> bool:
    return any(m.status == "error" for m in case.metrics)


def regression_cases(results: Results) -> list[tuple[str, str, str]]:
    """(eval set id, eval id, why) of every case that fails ``fail-on: regression``."""
    found = []
    accepted = accepted_keys(results)
    for eval_set in results.eval_sets:
        for case in eval_set.cases:
            if case.quarantined is not None or refused_case(case):
                continue  # (a case the model service kept refusing has no verdict)
            if case.change == "regressed" and (eval_set.eval_set_id, case.eval_id) in accepted:
                continue
            if case.change == "regressed":
                why = "regressed"
            elif case.screening_disagrees:  # never "within noise": the fresh runs contradict it
                why = SCREENING_DISAGREES
            elif case.change in ("new", "changed") and case.status != "passed":
                why = f"{case.change} and {case.status}"
            elif _metric_errored(case):
                why = "a metric errored"
            else:
                continue
            found.append((eval_set.eval_set_id, case.eval_id, why))
    return found


def gate_failed(results: Results, fail_on: str) -> bool:
    """Whether the job fails under ``fail_on`` (one of FAIL_ON)."""
    if fail_on not in FAIL_ON:
        raise ValueError(f"fail-on must be one of {', '.join(FAIL_ON)}, got {fail_on!r}")
    if results.interrupted is not None:
        return True  # SIGTERM or Ctrl-C: what ran is reported, never passed (CONTRACT 11)
    if fail_on == "never":
        return False
    if refused(results, gating_cases(results)) is not None:
        return True  # no verdict on some cases: never passed (exit 2, report/finish.py)
    if fail_on in COMPARING and results.comparison is not None:
        return bool(regression_cases(results)) or (
            fail_on == "drop" and bool(gating_drops(results)))
    if fail_on in COMPARING and results.shard is not None:
        return any(_metric_errored(c) for s in results.eval_sets for c in s.cases)
    if results.passed or _only_quarantined_fail(results):
        return False
    if fail_on == "error":
        return _errored(results)
    return True
