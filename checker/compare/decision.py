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

from dataclasses import dataclass, field

from .stats import fisher_better, fisher_worse, fisher_worse_floor, tarone_level

DEFAULT_ALPHA = 0.05
SCREEN_P = 0.5
METHOD = "tarone-bonferroni"
METHOD_WEIGHTED = "tarone-bonferroni, weighted by screening"
MIN_SCREEN_P = 1e-6


def screening_weight(screen_p: float) -> float:
    """A confirmed test's share of the level before scaling: 1 / its screening p-value."""
    return 1 / max(screen_p, MIN_SCREEN_P)


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
    # How much worse the screening runs looked (their one-sided p against the newest main
    # result), when the decision runs are fresh: data independent of the decision, so it may
    # weight the test (weighted Bonferroni). None: no independent screening (weight 1).
    screen_p: float | None = None

    @property
    def p_worse(self) -> float:
        return p_worse(list(self.base), list(self.head))

    @property
    def floor(self) -> float:
        return fisher_worse_floor(sum(self.base), len(self.base), sum(self.head), len(self.head))


@dataclass
class FamilyDecision:
    """The suite's decision: tests rejected at ``level`` = alpha / K (Tarone)."""

    alpha: float
    level: float
    k: int
    tests: int  # tests in the family
    testable: int  # tests whose smallest attainable p reaches the level
    weights: dict[int, float] = field(default_factory=dict)  # id(test) -> weight, testable only

    def level_of(self, test: MetricTest) -> float:
        """alpha * w / K: the test's own level (0 for a test that cannot reach alpha / K)."""
        if not self.weights:
            return self.level if test.floor <= self.level else 0.0
        return self.level * self.weights.get(id(test), 0.0)

    def rejects(self, test: MetricTest) -> bool:
        return test.p_worse <= self.level_of(test)

    def as_json(self, confirmed: bool, testable_cases: int | None = None) -> dict:
        """``testable_cases``: the cases with a test that can reach its level."""
        out = {"alpha": self.alpha, "method": METHOD_WEIGHTED if self.weights else METHOD,
               "tests": self.tests, "testable": self.testable, "level": self.level,
               "confirmed": confirmed}
        if testable_cases is not None:
            out["testableCases"] = testable_cases
        return out


def decide(tests: list[MetricTest], alpha: float) -> FamilyDecision:
    """Tarone's K over the family; then, when every test's screening is independent of its
    decision runs, the testable tests share the level by weight: w_i proportional to
    1 / screen_p_i, scaled so that the weights of the testable tests sum to K. Then
    P(any false rejection) <= sum over testable tests of alpha * w_i / K = alpha."""
    check_alpha(alpha)
    level, k, testable = tarone_level([t.floor for t in tests], alpha)
    decision = FamilyDecision(alpha=alpha, level=level, k=k, tests=len(tests), testable=testable)
    reachable = [t for t in tests if t.floor <= level]
    if reachable and all(t.screen_p is not None for t in tests):
        raw = {id(t): screening_weight(t.screen_p) for t in reachable}  # type: ignore[arg-type]
        total = sum(raw.values())
        decision.weights = {key: value * k / total for key, value in raw.items()}
    return decision


def family_words(familywise: dict, method: str = "") -> str:
    """What a comparison's family was, read defensively (from a file): "alpha 0.05 over 10
    testable cases (12 of 14 tests can reach the level)" - the tests that count against
    each other, not every (case, metric) compared (Tarone: a test that cannot reach the level
    does not count). ``method``: named first in the parentheses ("Tarone: 12 of ...")."""
    named = f"{method}: " if method else ""
    alpha, tests = familywise.get("alpha"), familywise.get("tests")
    testable, cases = familywise.get("testable"), familywise.get("testableCases")
    if not isinstance(alpha, (int, float)) or not isinstance(tests, int):
        return "the family-wise level"
    test_words = f"{tests} test{'' if tests == 1 else 's'}"
    if not isinstance(testable, int) or not isinstance(cases, int):  # an older results file
        return f"alpha {alpha:g} ({named}{test_words})" if method else f"alpha {alpha:g} over {test_words}"
    if not testable:
        return f"alpha {alpha:g} ({named}none of {test_words} can reach its level)"
    return (f"alpha {alpha:g} over {cases} testable case{'' if cases == 1 else 's'} "
            f"({named}{testable} of {test_words} can reach the level)")


def decide_improvements(pairs: list[tuple[list[bool], list[bool]]], alpha: float) -> float:
    """The level at which a PR's own runs show an improvement, over the whole family."""
    level, _, _ = tarone_level([_better_floor(b, h) for b, h in pairs], alpha)
    return level
