"""Reliability in words (compare/reliability.py computes it): the suite's line under the
report's counts, a case's runs in its table row and in the HTML report."""

from __future__ import annotations

from collections.abc import Callable

from ..compare.reliability import case_reliability, suite_k, suite_reliability
from ..models.results import CaseResult, PassRate, Results
from ..safety.text import plural


def _interval(rate: PassRate) -> str:
    return f"95% {rate.low:.2f}\u2013{rate.high:.2f}"


def _plain(name: str) -> str:
    return name


def markdown_name(name: str) -> str:
    """A code span: GitHub reads no mention in it ("pass@3")."""
    return f"`{name}`"


def suite_line(results: Results, name: Callable[[str], str] = _plain) -> str:
    """"Reliability over 20 cases of 3 runs: pass^3 0.70 (every run passed; 95% 0.48-0.85),
    pass@3 0.95 (at least one passed; 95% 0.76-0.99)."; "" without runs. ``name`` writes
    the names pass^3 and pass@3 (markdown: as code)."""
    found = suite_reliability([c for s in results.eval_sets for c in s.cases])
    if found is None:
        return ""
    k, hat, at = found.k, found.pass_hat_k, found.pass_at_k
    said = f"Reliability over {plural(found.cases, 'case')} of {plural(k, 'run')}: {name(f'pass^{k}')} {hat.rate:.2f}"
    if k == 1:  # pass^1 and pass@1 are the one pass rate
        said += f" ({_interval(hat)})"
    else:
        said += (f" (every run passed; {_interval(hat)}), {name(f'pass@{k}')} {at.rate:.2f}"
                 f" (at least one passed; {_interval(at)})")
    if found.fewer_runs:
        said += f"; {plural(found.fewer_runs, 'case')} with fewer runs left out"
    return said + "."


def case_line(case: CaseResult, k: int | None) -> str:
    """"2 of 3 runs passed (95% 0.21-0.94); pass^3 0.00, pass@3 1.00"; "" without runs."""
    found = case_reliability(case, k)
    if found is None:
        return ""
    said = f"{found.passed} of {plural(found.runs, 'run')} passed ({_interval(found.pass_rate)})"
    if found.pass_hat_k is not None and found.pass_at_k is not None and found.k > 1:
        said += f"; pass^{found.k} {found.pass_hat_k:.2f}, pass@{found.k} {found.pass_at_k:.2f}"
    return said


def row_note(case: CaseResult, k: int | None) -> str:
    """A table row's runs when some did not pass and the flaky badge does not say so already
    (a case failing every run): "0/3 runs passed (95% 0.00-0.56)"; "" otherwise."""
    found = case_reliability(case, k)
    if found is None or case.flaky or found.runs < 2 or found.passed == found.runs:
        return ""
    return f"{found.passed}/{found.runs} runs passed ({_interval(found.pass_rate)})"


def suite_k_of(results: Results) -> int | None:
    return suite_k(c for s in results.eval_sets for c in s.cases)
