"""Which drops are regressions: per (case, metric) exact tests, decided together for the suite.

Each gating metric of each case compared on both sides is one test. Its table is the pass
counts of the pooled baseline runs and of the PR's *decision runs*: the fresh confirmation
runs when the PR got some (``--confirm-runs``), else the runs it has (replay, ``compare``).
All tests of one comparison form one family, decided with Tarone's discrete Bonferroni
(``stats.tarone_level``) at the family-wise level ``alpha``: the chance that an unchanged PR
gets any ``regressed`` label is at most alpha. ``improved`` is the mirror image, decided as
its own family on the PR's own runs (it never gates).

Screening (before confirmation runs): a (case, metric) whose PR runs look worse at all -
one-sided Fisher p <= ``SCREEN_P`` - gets fresh runs. A deterministic drop from passing to
failing always screens (its p is at most 0.5 with one run a side).

See docs/comparing.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from .stats import fisher_better, fisher_worse, fisher_worse_floor, tarone_level

DEFAULT_ALPHA = 0.05
SCREEN_P = 0.5
METHOD = "tarone-bonferroni"


def check_alpha(alpha: float) -> None:
    if not 0 < alpha <= 0.5:
        raise ValueError(f"alpha must be in (0, 0.5], got {alpha}")


def p_worse(base: list[bool], head: list[bool]) -> float:
    return fisher_worse(sum(base), len(base), sum(head), len(head))


def p_better(base: list[bool], head: list[bool]) -> float:
    return fisher_better(sum(base), len(base), sum(head), len(head))


def screens(base: list[bool], head: list[bool]) -> bool:
    """Whether the PR's runs look worse at all (loose: most noise passes, every real drop
    that shows in the runs does)."""
    return bool(base) and bool(head) and p_worse(base, head) <= SCREEN_P


def _better_floor(base: list[bool], head: list[bool]) -> float:
    k, n, kp, np_ = sum(base), len(base), sum(head), len(head)
    most = min(np_, k + kp)
    return fisher_better(k + kp - most, n, most, np_)


@dataclass(frozen=True)
class MetricTest:
    """One (case, metric) comparison: pooled baseline passes against the decision runs."""

    base: tuple[bool, ...]
    head: tuple[bool, ...]

    @property
    def p_worse(self) -> float:
        return p_worse(list(self.base), list(self.head))

    @property
    def floor(self) -> float:
        return fisher_worse_floor(sum(self.base), len(self.base), sum(self.head), len(self.head))


@dataclass(frozen=True)
class FamilyDecision:
    """The suite's decision: tests rejected at ``level`` = alpha / K (Tarone)."""

    alpha: float
    level: float
    k: int
    tests: int  # tests in the family
    testable: int  # tests whose smallest attainable p reaches the level

    def rejects(self, test: MetricTest) -> bool:
        return test.p_worse <= self.level

    def as_json(self, confirmed: bool) -> dict:
        return {"alpha": self.alpha, "method": METHOD, "tests": self.tests,
                "testable": self.testable, "level": self.level, "confirmed": confirmed}


def decide(tests: list[MetricTest], alpha: float) -> FamilyDecision:
    check_alpha(alpha)
    level, k, testable = tarone_level([t.floor for t in tests], alpha)
    return FamilyDecision(alpha=alpha, level=level, k=k, tests=len(tests), testable=testable)


def decide_improvements(pairs: list[tuple[list[bool], list[bool]]], alpha: float) -> float:
    """The level at which a PR's own runs show an improvement, over the whole family."""
    level, _, _ = tarone_level([_better_floor(b, h) for b, h in pairs], alpha)
    return level
