"""Reliability at a glance: how often a case's runs pass, pass^k (all k runs pass) and
pass@k (at least one of k passes), per case and for the suite, each with a Wilson 95%
interval (docs/comparing.md, "Reliability").

A case's runs are those that passed, failed or errored (an errored run did not pass); a run
not evaluated (the model service kept refusing, an interrupted run) is none. ``k`` is the
suite's usual number of runs a case (the most common count; the fewer on a tie), so that an
adaptive or confirmation-heavy case does not change what pass^3 means. A case with n >= k
runs, c passing, gets the unbiased estimates C(c, k) / C(n, k) and 1 - C(n - c, k) / C(n, k)
(stats.py); with exactly k runs they are 1 or 0: all passed, one passed. The suite's figure
is their mean over those cases, with the Wilson interval of that mean over the cases.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from ..models.results import CaseReliability, CaseResult, PassRate, SuiteReliability
from .stats import pass_at_k, pass_hat_k, wilson

_COUNTED = ("passed", "failed", "error")


def run_counts(case: CaseResult) -> tuple[int, int]:
    """(runs passed, runs) of a case: its evaluated runs, errored ones counted as not passing."""
    statuses = [r.status for r in case.runs if r.status in _COUNTED]
    return statuses.count("passed"), len(statuses)


def suite_k(cases: Iterable[CaseResult]) -> int | None:
    """The most common number of runs a case (the fewer on a tie); None without runs."""
    counts = Counter(n for _, n in map(run_counts, cases) if n)
    if not counts:
        return None
    most = max(counts.values())
    return min(n for n, seen in counts.items() if seen == most)


def _rate(successes: float, trials: int) -> PassRate:
    low, high = wilson(successes, trials)
    return PassRate(rate=successes / trials, low=low, high=high)


def case_reliability(case: CaseResult, k: int | None) -> CaseReliability | None:
    """None for a case without evaluated runs (or a suite without a k)."""
    passed, runs = run_counts(case)
    if not runs or k is None:
        return None
    found = CaseReliability(runs=runs, passed=passed, pass_rate=_rate(passed, runs), k=k)
    if runs >= k:
        found.pass_hat_k, found.pass_at_k = pass_hat_k(runs, passed, k), pass_at_k(runs, passed, k)
    return found


def suite_reliability(cases: list[CaseResult], k: int | None = None) -> SuiteReliability | None:
    """pass^k and pass@k of the suite; None when no case has k runs. ``k``: suite_k(cases)."""
    k = suite_k(cases) if k is None else k
    if k is None:
        return None
    found = [r for r in (case_reliability(c, k) for c in cases) if r is not None]
    estimated = [r for r in found if r.pass_hat_k is not None and r.pass_at_k is not None]
    if not estimated:
        return None
    hat = sum(r.pass_hat_k for r in estimated if r.pass_hat_k is not None)
    at = sum(r.pass_at_k for r in estimated if r.pass_at_k is not None)
    left_out = len(found) - len(estimated)
    return SuiteReliability(k=k, cases=len(estimated), pass_hat_k=_rate(hat, len(estimated)),
                            pass_at_k=_rate(at, len(estimated)), fewer_runs=left_out or None)
