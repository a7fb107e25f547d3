"""Screening against confirmation: do the fresh runs contradict a drop every screening run
showed?

An honest agent's runs are exchangeable: the PR's first runs (which screening reads) and its
fresh confirmation runs come from one pass rate, whatever that rate is. An agent that can
tell them apart (it reads ``EVALCHECK_RUN``, or counts its runs in /tmp) can fail every
screening run and pass the fresh ones: the drop is then "not confirmed" and the gate passes
a case whose own runs all failed. So a metric whose screening runs *all* failed where main's
newest result passed in every run - a drop every screening run showed: it is **contested**
- is also tested against its own fresh runs.

The test is Fisher's exact test of the screening runs against the fresh runs, conditional on
their pooled pass count: with N runs in all of which T passed, the screening runs are, for
an honest agent, n_s of the N drawn at random, so

    p = P(X <= k_s),  X ~ hypergeometric(N, T, n_s)
      = C(N - T, n_s) / C(N, n_s)                when k_s = 0 (every screening run failed)

is how likely screening runs this much worse than the fresh ones are by chance alone -
beyond what the pooled pass rate explains. 0 of 3 screening runs against 60 of 60 fresh
ones: p = 1 / C(63, 3) = 1 / 39,711.

Every gating metric compared on both sides whose newest main result passed in every run
(the metrics that can be contested, known from main's runs alone, before the PR's) is one
test of one family, decided with Bonferroni at ``alpha / m`` (m: those tests; a metric
that is not contested has p = 1), so an unchanged PR gets a false "disagree" with
probability at most alpha whatever was screened: each test's p is valid on its own (a
contested metric's budget is the same whatever its fresh runs do, and the early stops below
give the full budget's verdict). A
contested metric keeps getting fresh runs after its regression test stopped as "not
confirmed", up to its budget, unless its disagreement is already decided either way: even
if every run left passed (the least p a test can end with: a passing fresh run never raises
p, a failing one never lowers it) p stays above the level - it cannot disagree; or even if
every run left failed, p is at most the level - it disagrees whatever they do. Both stops
give the verdict the full budget would. The regression test still reads only the runs up
to where it stopped (confirm.py).

See docs/comparing.md.
"""

from __future__ import annotations

from .stats import fisher_worse


def contested(main_newest: list[bool], screening: list[bool]) -> bool:
    """Main's newest result passed in every run and every screening run failed."""
    return bool(main_newest) and all(main_newest) and bool(screening) and not any(screening)


def p_disagree(screening: list[bool], fresh: list[bool]) -> float:
    """One-sided Fisher p that the screening runs pass less often than the fresh ones:
    P(X <= screening passes), X hypergeometric over the pooled runs (see the module)."""
    if not screening or not fresh:
        return 1.0
    return fisher_worse(sum(fresh), len(fresh), sum(screening), len(screening))


def level(alpha: float, tests: int) -> float:
    """Bonferroni over the family: every metric that can be contested is one test."""
    return alpha / max(tests, 1)


def decided(screening: list[bool], fresh: list[bool], left: int, at: float,
            least: float | None = None) -> bool:
    """Whether more fresh runs (``left`` of them) can no longer change the verdict at level
    ``at``: even all passing keeps p above it, or even all failing keeps p at or below it.
    ``least``: the level is not known yet, only that it lies in [least, at] (a shard): the
    verdict is decided at every level there."""
    best = p_disagree(screening, fresh + [True] * left)
    worst = p_disagree(screening, fresh + [False] * left)
    return best > at or worst <= (at if least is None else least)


def disagreement_words(found: dict) -> str:
    """What reports say of a metric's ``screeningDisagreement`` (read defensively: from a
    file): "screening and confirmation disagree: 0/3 screening runs passed, 60/60 fresh
    ones (p = 2.5e-05 <= 0.05)"."""
    def count(key: str) -> str:
        pair = found.get(key)
        return f"{pair[0]}/{pair[1]}" if isinstance(pair, list) and len(pair) == 2 else "?"

    p, at = found.get("pValue"), found.get("level")
    test = (f" (p = {p:.2g} <= {at:.2g})" if isinstance(p, (int, float)) and isinstance(at, (int, float))
            else "")
    return (f"screening and confirmation disagree: {count('screening')} screening runs passed, "
            f"{count('fresh')} fresh ones{test}")
