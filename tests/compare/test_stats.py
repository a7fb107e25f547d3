"""The statistics pinned against hand-computed values (docs/comparing.md,
/work/shared/reference: exact hypergeometric sums and the Wilson formula)."""

from __future__ import annotations

import pytest

from checker.compare.stats import (Z95, fisher_better, fisher_worse, paired_bootstrap, pass_at_k,
                                   pass_hat_k, wilson)


@pytest.mark.parametrize("base,pr,p", [
    ((2, 2), (0, 2), 0.1667), ((3, 3), (0, 3), 0.0500), ((3, 3), (1, 3), 0.2000),
    ((3, 3), (2, 3), 0.5000), ((5, 5), (0, 5), 0.0040), ((5, 5), (2, 5), 0.0833),
    ((5, 5), (3, 5), 0.2222), ((10, 10), (6, 10), 0.0433),
])
def test_fisher_one_sided_p_values(base, pr, p):
    assert round(fisher_worse(*base, *pr), 4) == p
    # The mirror image: the same table read the other way round.
    assert round(fisher_better(base[1] - base[0], base[1], pr[1] - pr[0], pr[1]), 4) == p


def test_fisher_exact_fractions():
    # 3/3 -> 0/3: one table of C(6,3) = 20 is this extreme.
    assert fisher_worse(3, 3, 0, 3) == pytest.approx(1 / 20, abs=1e-15)
    # 5/5 -> 2/5: 7 passes, 3 failures; the PR's 5 runs hold at least 2 passes, so the only
    # table this extreme or worse is the observed one: C(7,2) C(3,3) / C(10,5) = 21/252.
    assert fisher_worse(5, 5, 2, 5) == pytest.approx(21 / 252)
    # 2/3 -> 2/3, no change: 1 - P(X = 3) = 1 - C(4,3) / C(6,3) = 0.8.
    assert fisher_worse(2, 3, 2, 3) == pytest.approx(0.8)
    assert fisher_better(0, 3, 3, 3) == pytest.approx(0.05)
    assert fisher_worse(0, 3, 0, 3) == 1.0 and fisher_better(3, 3, 3, 3) == 1.0


def test_fisher_rejects_impossible_tables():
    with pytest.raises(ValueError):
        fisher_worse(4, 3, 0, 3)


@pytest.mark.parametrize("k,n,interval", [
    (2, 3, (0.2077, 0.9385)), (3, 3, (0.4385, 1.0)), (0, 3, (0.0, 0.5615)),
    (8, 10, (0.4902, 0.9433)),
])
def test_wilson_interval(k, n, interval):
    low, high = wilson(k, n)
    assert (round(low, 4), round(high, 4)) == interval


def test_wilson_without_runs_and_z():
    assert wilson(0, 0) == (0.0, 1.0)
    assert Z95 == 1.959964


def test_pass_at_k_and_pass_hat_k():
    assert pass_at_k(3, 1, 1) == pytest.approx(1 / 3)
    assert pass_at_k(3, 1, 2) == pytest.approx(2 / 3)  # 1 - C(2,2)/C(3,2)
    assert pass_at_k(3, 2, 2) == 1.0
    assert pass_hat_k(3, 2, 2) == pytest.approx(1 / 3)  # C(2,2)/C(3,2)
    assert pass_hat_k(5, 5, 3) == 1.0 and pass_hat_k(2, 2, 3) == 0.0


DIFFERENCES = [0.0, -1.0, 0.5, 0.0, -0.5, 0.25, 0.0, 0.0, -1.0, 0.0]


def test_paired_bootstrap_is_seeded_and_pinned():
    interval = paired_bootstrap(DIFFERENCES, seed=0)
    assert interval is not None
    assert interval.mean == pytest.approx(-0.175)
    # Pinned: random.Random(0), 10,000 resamples of 10 cases, percentiles 2.5% and 97.5%.
    assert (interval.low, interval.high) == (pytest.approx(-0.475), pytest.approx(0.1))
    assert interval.method == "paired bootstrap, 10000 resamples, seed 0"
    assert paired_bootstrap(DIFFERENCES, seed=0) == interval  # deterministic
    other = paired_bootstrap(DIFFERENCES, seed=1)
    assert other is not None and other.mean == interval.mean


def test_paired_bootstrap_edge_cases():
    assert paired_bootstrap([]) is None
    same = paired_bootstrap([-0.5] * 7)
    assert same is not None and (same.low, same.mean, same.high) == (-0.5, -0.5, -0.5)


def test_paired_bootstrap_normal_limit_beyond_the_budget():
    values = [float(i % 2) for i in range(100)]  # mean 0.5, population sd 0.5
    interval = paired_bootstrap(values, budget=10)
    assert interval is not None and interval.method.startswith("normal limit")
    half = Z95 * 0.5 / 10
    assert (interval.low, interval.high) == (pytest.approx(0.5 - half), pytest.approx(0.5 + half))
    exact = paired_bootstrap(values, budget=10**6)
    assert exact is not None and exact.method.startswith("paired bootstrap")
    # The bootstrap and its normal limit agree to the resampling noise.
    assert abs(exact.low - interval.low) < 0.01 and abs(exact.high - interval.high) < 0.01
