"""The statistics of comparisons, written with ``math`` (no SciPy); see docs/comparing.md.

- ``fisher_worse`` / ``fisher_better``: one-sided Fisher exact test on a 2x2 table of run
  passes and failures (baseline vs PR), from the hypergeometric distribution.
- ``wilson``: the Wilson score interval of a pass rate k/n.
- ``paired_bootstrap``: a seeded, deterministic percentile interval of a mean of per-case
  differences (cases resampled with replacement).
- ``pass_at_k`` / ``pass_hat_k``: chance that at least one / all of k runs pass.
- ``fisher_worse_floor``: the smallest p(worse) a 2x2 table's margins allow at all, and
  ``tarone_level``: Tarone's discrete Bonferroni level for a family of such tests.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from functools import lru_cache

Z95 = 1.959964  # two-sided 95% normal quantile
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0
# Draws (cases x resamples) one bootstrap may take (~0.3 s here). Past it (more than 50
# cases at 10,000 resamples) the interval is the bootstrap's normal limit: the same centre and variance the
# bootstrap distribution of a mean has, which it approaches as the number of cases grows.
BOOTSTRAP_BUDGET = 500_000


@lru_cache(maxsize=4096)
def _hypergeometric(population: int, successes: int, draws: int) -> tuple[float, ...]:
    """P(X = x) for x = 0..draws, X hypergeometric(population, successes, draws)."""
    total = math.comb(population, draws)
    return tuple(math.comb(successes, x) * math.comb(population - successes, draws - x) / total
                 for x in range(draws + 1))


def _pmf(k_base: int, n_base: int, k_pr: int, n_pr: int) -> tuple[float, ...]:
    if not (0 <= k_base <= n_base and 0 <= k_pr <= n_pr) or n_base + n_pr == 0:
        raise ValueError(f"not a 2x2 table of counts: {k_base}/{n_base}, {k_pr}/{n_pr}")
    return _hypergeometric(n_base + n_pr, k_base + k_pr, n_pr)


@lru_cache(maxsize=4096)
def fisher_worse(k_base: int, n_base: int, k_pr: int, n_pr: int) -> float:
    """One-sided p-value that the PR passes less often: P(X <= k_pr), X the PR's passes
    when both sides share one pass rate (hypergeometric, margins fixed)."""
    return min(1.0, math.fsum(_pmf(k_base, n_base, k_pr, n_pr)[:k_pr + 1]))


@lru_cache(maxsize=4096)
def fisher_better(k_base: int, n_base: int, k_pr: int, n_pr: int) -> float:
    """One-sided p-value that the PR passes more often: P(X >= k_pr)."""
    return min(1.0, math.fsum(_pmf(k_base, n_base, k_pr, n_pr)[k_pr:]))


@lru_cache(maxsize=4096)
def fisher_worse_floor(k_base: int, n_base: int, k_pr: int, n_pr: int) -> float:
    """The smallest p(worse) these margins can give: the PR passing as rarely as the
    margins allow (its passes at max(0, k_base + k_pr - n_base)). Tarone's p*."""
    fewest = max(0, k_base + k_pr - n_base)
    return fisher_worse(k_base + k_pr - fewest, n_base, fewest, n_pr)


def tarone_level(floors: list[float], alpha: float) -> tuple[float, int, int]:
    """Tarone's discrete Bonferroni (Biometrics 46:515-522, 1990) for m discrete tests.

    ``floors``: each test's smallest attainable p-value. For K = 1, 2, ...:
    m(K) = #{i : floor_i <= alpha / K}; K is the smallest with m(K) <= K. A test is rejected
    when its p <= alpha / K. Tests that cannot reach alpha / K at all do not count against
    the others. Returns (alpha / K, K, m(K)).
    """
    ordered = sorted(floors)
    k = 1
    while True:
        level = alpha / k
        testable = _count_at_most(ordered, level)
        if testable <= k:
            return level, k, testable
        k += 1


def _count_at_most(ordered: list[float], level: float) -> int:
    low, high = 0, len(ordered)
    while low < high:
        mid = (low + high) // 2
        if ordered[mid] <= level:
            low = mid + 1
        else:
            high = mid
    return low


def wilson(k: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of the pass rate k/n; (0, 1) when there are no runs. ``k`` may
    be a sum of per-case estimates (compare/reliability.py: a suite's pass^k)."""
    if n <= 0:
        return (0.0, 1.0)
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chance that at least one of k runs drawn from n (c passing) passes (Chen et al.)."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: chance that all k runs drawn from n (c passing) pass (tau-bench)."""
    return math.comb(c, k) / math.comb(n, k) if k <= n else 0.0


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float
    method: str  # how the interval was computed, for the results file and reports


def _percentile(ordered: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def paired_bootstrap(differences: list[float], *, resamples: int = BOOTSTRAP_RESAMPLES,
                     seed: int = BOOTSTRAP_SEED, level: float = 0.95,
                     budget: int = BOOTSTRAP_BUDGET) -> Interval | None:
    """95% interval of the mean of per-case differences (PR minus baseline, same cases).

    Percentile bootstrap: ``resamples`` means of ``len(differences)`` cases drawn with
    replacement by ``random.Random(seed)``, so the same input gives the same interval.
    Beyond ``budget`` draws the normal limit of that bootstrap is used instead (centre the
    mean, standard error sqrt(sum((d - mean)^2) / n) / sqrt(n)); ``method`` says which.
    """
    n = len(differences)
    if n == 0:
        return None
    mean = math.fsum(differences) / n
    tail = (1 - level) / 2
    if n * resamples > budget:
        z = Z95 if level == 0.95 else _normal_quantile(1 - tail)
        se = math.sqrt(math.fsum((d - mean) ** 2 for d in differences) / n) / math.sqrt(n)
        return Interval(mean, mean - z * se, mean + z * se,
                        f"normal limit of the paired bootstrap ({n} cases)")
    rng = random.Random(seed)
    choices = rng.choices
    means = sorted(math.fsum(choices(differences, k=n)) / n for _ in range(resamples))
    return Interval(mean, _percentile(means, tail), _percentile(means, 1 - tail),
                    f"paired bootstrap, {resamples} resamples, seed {seed}")


def _normal_quantile(p: float) -> float:
    """Inverse standard normal CDF by bisection on math.erf (only for levels other than 95%)."""
    low, high = -10.0, 10.0
    for _ in range(100):
        mid = (low + high) / 2
        if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < p:
            low = mid
        else:
            high = mid
    return (low + high) / 2
