"""How many fresh confirmation runs a screened metric gets, and which of them decide it.

Budgets follow the screening evidence (all of --confirm-runs when the first runs looked
clearly worse, two thirds when only a little), a metric whose fresh runs drift far from
any decidable level stops from 10 runs on, and each metric's test reads the fresh runs up
to where it stopped. Every p-value is written out by hand beside its assertion."""

from __future__ import annotations

import pytest

from checker.compare.comparison import compare
from checker.compare.confirm import Confirmation, budget, certain_level, settled
from checker.compare.pooling import BaselinePool
from checker.compare.stats import fisher_worse
from comparehelpers import case_result, metric, results

KEY = ("weather", "c")
RESPONSE = "response_match_score"


def _main(*names: str):
    """Three results of main, every run passing every metric: the older two pool to 6/6."""
    return [results(case_result("c", *[metric([1.0] * 3, name=n, threshold=1.0) for n in names]))
            for _ in range(3)]


def _pr(**runs: list[float]):
    return case_result("c", *[metric(r, name=n, threshold=1.0) for n, r in runs.items()])


def test_screening_p_values_behind_the_two_budgets():
    # Newest main 3/3 against the PR's 1/3: 6 runs, 4 passing, the PR's 3 drawn: P(X <= 1) =
    # C(4,1) C(2,2) / C(6,3) = 4/20 (X = 0 is impossible). Against 2/3: 1 - C(5,3)/C(6,3) = 10/20.
    assert fisher_worse(3, 3, 1, 3) == pytest.approx(0.2)
    assert fisher_worse(3, 3, 2, 3) == pytest.approx(0.5)
    assert budget(12, 0.2) == 12 and budget(12, 0.5) == 8  # ceil(2 * 12 / 3)
    assert budget(60, 0.05) == 60 and budget(60, 0.2) == 60 and budget(60, 0.21) == 40
    assert budget(20, 0.5) == 14 and budget(1, 0.5) == 1  # ceil(40/3), ceil(2/3): never 0


MIXED = [1.0, 1.0, 1.0, 0.0, 0.0]  # 3 of 5 pass: worse than main, never settled nor certain


def test_a_clearly_worse_metric_gets_every_run_a_slightly_worse_one_two_thirds():
    # Fresh 3/5 against the older 6/6: 11 runs, 9 passing; X >= 3, so P(X <= 3) = C(9,3)/C(11,5)
    # = 84/462 = 0.18: not settled. At 6/10 (below): 0.1154, not settled from 10 runs on either.
    assert fisher_worse(6, 6, 3, 5) == pytest.approx(84 / 462)
    strong = Confirmation(BaselinePool(_main("tool_trajectory_avg_score")), 12)
    assert strong.start({KEY: _pr(tool_trajectory_avg_score=[0.0, 0.0, 1.0])}) == [KEY] * 5
    strong.add(KEY, _pr(tool_trajectory_avg_score=MIXED))
    assert strong.next_round() == [KEY] * 5
    strong.add(KEY, _pr(tool_trajectory_avg_score=MIXED))
    assert strong.next_round() == [KEY] * 2  # 12 in all
    strong.add(KEY, _pr(tool_trajectory_avg_score=[1.0, 0.0]))
    assert strong.next_round() == [] and strong.extra_runs() == 12 and strong.curtailed == 0

    weak = Confirmation(BaselinePool(_main("tool_trajectory_avg_score")), 12)
    assert weak.start({KEY: _pr(tool_trajectory_avg_score=[1.0, 1.0, 0.0])}) == [KEY] * 5
    weak.add(KEY, _pr(tool_trajectory_avg_score=MIXED))
    assert weak.next_round() == [KEY] * 3  # 8 in all
    weak.add(KEY, _pr(tool_trajectory_avg_score=[1.0, 0.0, 0.0]))
    assert weak.next_round() == [] and weak.extra_runs() == 8
    assert weak.confirmations()[KEY].metrics[0].runs == MIXED + [1.0, 0.0, 0.0]


def test_from_ten_fresh_runs_a_metric_too_far_from_any_level_stops():
    # Fresh 4/5 against 6/6: 11 runs, 10 passing, 5 drawn: P(X <= 4) = 1 - C(10,5)/C(11,5)
    # = 1 - 252/462 = 0.4545: not settled (<= 0.5), and futility waits for 10 runs.
    assert fisher_worse(6, 6, 4, 5) == pytest.approx(210 / 462)
    assert not settled(5, 210 / 462) and settled(5, 0.5001)
    # Then 7/10 against 6/6: 16 runs, 13 passing, 10 drawn; X >= 7 (the 6 baseline runs hold
    # the rest), so P(X <= 7) = C(13,7) C(3,3) / C(16,10) = 1716/8008 = 0.2143 > 0.2: settled.
    assert fisher_worse(6, 6, 7, 10) == pytest.approx(1716 / 8008)
    # 6/10 would be C(12,6) C(4,4) / C(16,10) = 924/8008 = 0.1154: it goes on.
    assert fisher_worse(6, 6, 6, 10) == pytest.approx(924 / 8008)
    assert settled(10, 1716 / 8008) and not settled(10, 924 / 8008) and not settled(9, 1716 / 8008)

    confirmation = Confirmation(BaselinePool(_main("tool_trajectory_avg_score")), 60)
    confirmation.start({KEY: _pr(tool_trajectory_avg_score=[0.0, 0.0, 1.0])})
    confirmation.add(KEY, _pr(tool_trajectory_avg_score=[1.0, 1.0, 1.0, 1.0, 0.0]))
    assert confirmation.next_round() == [KEY] * 5
    confirmation.add(KEY, _pr(tool_trajectory_avg_score=[1.0, 1.0, 1.0, 0.0, 0.0]))
    assert confirmation.next_round() == [] and confirmation.extra_runs() == 10

    going_on = Confirmation(BaselinePool(_main("tool_trajectory_avg_score")), 60)
    going_on.start({KEY: _pr(tool_trajectory_avg_score=[0.0, 0.0, 1.0])})
    going_on.add(KEY, _pr(tool_trajectory_avg_score=[1.0, 1.0, 1.0, 0.0, 0.0]))
    going_on.next_round()
    going_on.add(KEY, _pr(tool_trajectory_avg_score=[1.0, 1.0, 1.0, 0.0, 0.0]))  # 6/10
    assert going_on.next_round() == [KEY] * 5


def test_each_metric_is_decided_on_the_fresh_runs_up_to_where_it_stopped():
    names = ("tool_trajectory_avg_score", RESPONSE)
    files = _main(*names)
    # Trajectory looked clearly worse (1/3: budget 12), the response a little (2/3: budget 8).
    head = results(_pr(tool_trajectory_avg_score=[0.0, 0.0, 1.0], response_match_score=[1.0, 1.0, 0.0]))
    confirmation = Confirmation(BaselinePool(files), 12)
    assert confirmation.start({KEY: head.eval_sets[0].cases[0]}) == [KEY] * 5
    # Round 1: trajectory passes 5/5 (p = 1 > 0.5: settled at 5); the response fails 0/5.
    confirmation.add(KEY, _pr(tool_trajectory_avg_score=[1.0] * 5, response_match_score=[0.0] * 5))
    assert confirmation.next_round() == [KEY] * 3  # for the response only, to its 8
    # The case's later runs fail trajectory too: they are not trajectory's to read.
    confirmation.add(KEY, _pr(tool_trajectory_avg_score=[0.0] * 3, response_match_score=[0.0] * 3))
    assert confirmation.next_round() == []
    fresh = confirmation.confirmations()[KEY]
    assert len(fresh.runs) == 8
    by_name = {m.name: m.runs for m in fresh.metrics}
    assert by_name == {"tool_trajectory_avg_score": [1.0] * 5, RESPONSE: [0.0] * 8}

    compared = compare(files, head, confirmations=confirmation.confirmations())
    metrics = {m.name: m for m in compared.eval_sets[0].cases[0].metrics}
    assert metrics["tool_trajectory_avg_score"].confirm_runs == [1.0] * 5
    assert metrics["tool_trajectory_avg_score"].p_value == pytest.approx(1.0)  # 6/6 vs 5/5: p(worse) = 1
    # Response: 6/6 against 0/8: p = 1/C(14,8) = 1/3003; two tests, Tarone: trajectory's floor
    # (11 passes of 11) is 1, so K = 1 and the level is 0.05: regressed.
    assert metrics[RESPONSE].p_value == pytest.approx(1 / 3003)
    assert compared.eval_sets[0].cases[0].change == "regressed"


def test_a_metric_at_its_budget_is_cut_there_while_a_sibling_goes_on():
    names = ("tool_trajectory_avg_score", RESPONSE)
    # Trajectory 1/3 (budget 12), response 2/3 (budget 8); fresh runs pass 3 of 5 on both.
    confirmation = Confirmation(BaselinePool(_main(*names)), 12)
    head = _pr(tool_trajectory_avg_score=[0.0, 0.0, 1.0], response_match_score=[1.0, 1.0, 0.0])
    wanted = confirmation.start({KEY: head})
    sizes = []
    while wanted:
        sizes.append(len(wanted))
        runs = (MIXED * 3)[sum(sizes) - len(wanted):sum(sizes)]
        confirmation.add(KEY, _pr(tool_trajectory_avg_score=runs, response_match_score=runs))
        wanted = confirmation.next_round()
    assert sizes == [5, 5, 2]
    by_name = {m.name: m.runs for m in confirmation.confirmations()[KEY].metrics}
    # The response's budget (8) ended inside the second round: it reads its first 8 fresh runs.
    assert by_name == {"tool_trajectory_avg_score": (MIXED * 3)[:12], RESPONSE: (MIXED * 2)[:8]}


def test_a_passing_run_never_lowers_p_worse():
    """What makes a drop certain early: the p-value with every remaining run passing is the
    largest the test can end with. Checked on every table up to 12 baseline and 40 PR runs."""
    for n_base in (3, 6, 12):
        for k_base in range(n_base + 1):
            for n in range(1, 40):
                for k in range(n + 1):
                    assert fisher_worse(k_base, n_base, k + 1, n + 1) >= fisher_worse(k_base, n_base, k, n) - 1e-12


def test_the_least_level_a_confirmed_test_can_get():
    # Two flagged tests, screening p 0.2 (raw weight 5) and 0.05 (20): the first can get no
    # less than alpha * 5 / 25 = 0.01 (it shares with every flagged test), and never more
    # than alpha / 2 is needed to be testable (K <= 2).
    assert certain_level(0.05, 0.2, 25.0, 2) == pytest.approx(0.01)
    assert certain_level(0.05, 0.05, 25.0, 2) == pytest.approx(0.025)  # min(0.04, 0.025)
    assert certain_level(0.05, 0.2, 5.0, 1) == pytest.approx(0.05)


def test_a_drop_that_is_certain_stops_before_its_budget_and_regresses():
    """One flagged test: its least level is alpha = 0.05."""
    files = _main("tool_trajectory_avg_score")
    head = results(_pr(tool_trajectory_avg_score=[0.0, 0.0, 1.0]))  # screening p 0.2: budget 12
    confirmation = Confirmation(BaselinePool(files), 12)
    confirmation.start({KEY: head.eval_sets[0].cases[0]})
    # 0/5: p now 1/462, but with the 7 runs left all passing, 7/12 against 6/6: 18 runs, 13
    # passing, X >= 7: P(X = 7) = C(13,7) C(5,5) / C(18,12) = 1716/18564 = 0.092 > 0.05: go on.
    assert fisher_worse(6, 6, 7, 12) == pytest.approx(1716 / 18564)
    confirmation.add(KEY, _pr(tool_trajectory_avg_score=[0.0] * 5))
    assert confirmation.next_round() == [KEY] * 5
    # 0/10: the 2 runs left passing give 2/12: 8 passing, X >= 2: C(8,2) / C(18,12) =
    # 28/18564 = 0.0015 <= 0.05: regressed whatever they do - stop at 10.
    assert fisher_worse(6, 6, 2, 12) == pytest.approx(28 / 18564)
    confirmation.add(KEY, _pr(tool_trajectory_avg_score=[0.0] * 5))
    assert confirmation.next_round() == [] and confirmation.extra_runs() == 10
    assert confirmation.curtailed == 1 and confirmation.metadata()["confirmCertainEarly"] == 1
    compared = compare(files, head, confirmations=confirmation.confirmations())
    case = compared.eval_sets[0].cases[0]
    assert case.change == "regressed" and case.metrics[0].confirm_runs == [0.0] * 10
    assert case.metrics[0].p_value == pytest.approx(1 / 8008)  # 6/6 vs 0/10: 1/C(16,10)


def test_futility_never_stops_a_p_the_family_could_still_reject():
    # 7/10 against 6/6 is p = 1716/8008 = 0.214: settled at alpha 0.05, but at alpha 0.3 a
    # lone test is decided at 0.3 and 0.214 would be regressed: it goes on.
    assert settled(10, 1716 / 8008) and settled(10, 1716 / 8008, 0.05)
    assert not settled(10, 1716 / 8008, 0.3) and settled(10, 0.31, 0.3)
    confirmation = Confirmation(BaselinePool(_main("tool_trajectory_avg_score")), 60, alpha=0.3)
    confirmation.start({KEY: _pr(tool_trajectory_avg_score=[0.0, 0.0, 1.0])})
    confirmation.add(KEY, _pr(tool_trajectory_avg_score=[1.0, 1.0, 1.0, 1.0, 0.0]))
    confirmation.next_round()
    confirmation.add(KEY, _pr(tool_trajectory_avg_score=[1.0, 1.0, 1.0, 0.0, 0.0]))
    assert confirmation.next_round() == [KEY] * 5
