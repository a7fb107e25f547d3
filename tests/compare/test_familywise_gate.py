"""The regression gate that does not cry wolf: Tarone's family-wise control, main's history
pooled per case, decisions on fresh confirmation runs only, errored runs, --fail-on drop.
Every figure is pinned against a hand computation (written out beside it)."""

from __future__ import annotations

import math

import pytest

from checker.compare.comparison import compare
from checker.compare.confirm import Confirmation
from checker.compare.gate import gate_failed
from checker.compare.headline import gate_message
from checker.compare.pooling import BaselinePool
from checker.compare.stats import fisher_worse_floor, paired_bootstrap, tarone_level
from checker.models.results import BaselineInfo, RunResult
from comparehelpers import case_result, metric, results


def test_smallest_attainable_p_is_the_most_extreme_table_with_these_margins():
    # 15/15 base, 0/3 PR: 15 passes in 18 runs, the PR's 3 draws all failures: 1 / C(18, 3).
    assert fisher_worse_floor(15, 15, 0, 3) == pytest.approx(1 / math.comb(18, 3))
    assert fisher_worse_floor(15, 15, 3, 3) == 1.0  # 18 passes in 18 runs: only one table
    assert fisher_worse_floor(2, 3, 1, 3) == pytest.approx(1 / math.comb(6, 3))  # 0.05
    # 11/12 base, 8/20 PR: 19 passes in 32; the PR's fewest passes is 19 - 12 = 7:
    # C(19, 7) C(13, 13) / C(32, 20).
    assert fisher_worse_floor(11, 12, 8, 20) == pytest.approx(math.comb(19, 7) / math.comb(32, 20))


def test_tarone_level_by_hand():
    # K = 1: 3 tests reach 0.05 (> 1). K = 2: only 0.001 reaches 0.025 (1 <= 2): level 0.025.
    assert tarone_level([0.05, 0.05, 0.001, 0.2, 1.0], 0.05) == (0.025, 2, 1)
    # 41 tests whose best p is 1/816 = 0.0012255: at K = 40 all 41 reach 0.00125 (> 40);
    # at K = 41 none reaches 0.0012195: level 0.05 / 41 with no testable test.
    level, k, testable = tarone_level([1 / 816] * 41, 0.05)
    assert (k, testable) == (41, 0) and level == pytest.approx(0.05 / 41)
    # Tests that can never reach alpha do not count: one real test keeps the full alpha.
    assert tarone_level([0.001] + [0.3] * 100, 0.05) == (0.05, 1, 1)
    assert tarone_level([], 0.05) == (0.05, 1, 0)


def test_a_drop_at_exactly_the_level_is_regressed():
    # One test: 3/3 -> 0/3 has p = 1/C(6,3) = 0.05 = alpha / 1, so "p <= level" rejects it.
    base = results(case_result("c", metric([1.0, 1.0, 1.0])))
    head = results(case_result("c", metric([0.0, 0.0, 0.0])))
    compared = compare(base, head)
    assert compared.eval_sets[0].cases[0].change == "regressed"
    assert compared.comparison.familywise["level"] == pytest.approx(0.05)
    assert compared.eval_sets[0].cases[0].metrics[0].p_value == pytest.approx(0.05)


def test_the_same_drop_among_many_testable_cases_is_not_a_regression():
    """Twenty cases each 3/3 -> 0/3 on a flaky-looking suite: alone each would be p = 0.05;
    together Tarone asks for 0.05 / K and 3-run tables cannot reach it."""
    cases = [f"c{i}" for i in range(20)]
    base = results(*(case_result(c, metric([1.0, 1.0, 1.0])) for c in cases))
    head = results(*(case_result(c, metric([0.0, 0.0, 0.0]) if c == "c0" else metric([1.0, 0.0, 1.0]))
                     for c in cases))
    compared = compare(base, head)
    # floors: c0's table 3/3 vs 0/3 -> 0.05; each other 3/3 vs 2/3 (5 passes) -> fewest PR
    # passes 2 -> p* = P(X = 2) = C(5,2) C(1,1) / C(6,3) = 0.5. K = 1: one test reaches 0.05.
    assert compared.comparison.familywise["level"] == pytest.approx(0.05)
    assert compared.eval_sets[0].cases[0].change == "regressed"
    many = results(*(case_result(c, metric([0.0, 0.0, 0.0])) for c in cases))
    compared = compare(base, many)  # 20 tests with p* = 0.05: K = 2, level 0.025, none reachable
    assert compared.comparison.familywise == {"alpha": 0.05, "method": "tarone-bonferroni",
                                              "tests": 20, "testable": 0, "level": 0.025,
                                              "confirmed": False, "testableCases": 0}
    assert compared.comparison.summary.regressed == 0
    assert not gate_failed(compared, "regression")


def test_a_drop_between_two_failing_scores_is_not_a_regression():
    base = results(case_result("c", metric([0.5, 0.5, 0.5])))
    head = results(case_result("c", metric([0.0, 0.0, 0.0])))
    case = compare(base, head).eval_sets[0].cases[0]
    assert case.change == "unchanged" and case.metrics[0].p_value == 1.0


def test_two_runs_a_side_that_flip_are_not_a_regression():
    base = results(case_result("c", metric([1.0, 1.0])))
    head = results(case_result("c", metric([0.0, 0.0])))
    case = compare(base, head).eval_sets[0].cases[0]
    assert case.change == "unchanged" and case.metrics[0].p_value == pytest.approx(1 / 6)


def _history(*runs_per_file):
    return [results(case_result("c", metric(list(runs)))) for runs in runs_per_file]


def test_history_is_pooled_newest_first_and_recorded():
    files = _history([1.0, 1.0], [1.0, 1.0], [1.0, 1.0])
    head = results(case_result("c", metric([0.0, 0.0])))
    infos = [BaselineInfo(path=f"main{i}.json", commit=f"{i}" * 40) for i in range(3)]
    compared = compare(files, head, baseline_info=infos)
    case = compared.eval_sets[0].cases[0]
    # 6/6 pooled against 0/2: p = 1 / C(8, 2) = 1/28, below 0.05: regressed (2 runs alone: 1/6).
    assert case.metrics[0].p_value == pytest.approx(1 / 28)
    assert case.change == "regressed" and case.baseline_pool == [0, 1, 2]
    assert case.metrics[0].baseline_runs == [1.0] * 6
    history = compared.comparison.baseline.history
    assert [h.path for h in history] == ["main0.json", "main1.json", "main2.json"]
    assert compared.comparison.baseline.path == "main0.json"


def test_pooling_stops_at_a_change_point_so_a_regression_on_main_does_not_hide():
    """Main broke the case at its newest commit (0/3); older commits passed it (3/3). Pooling
    them would make main look good and blame the PR, which is like main now."""
    files = _history([0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0])
    head = results(case_result("c", metric([0.0, 0.0, 0.0])))
    case = compare(files, head).eval_sets[0].cases[0]
    assert case.baseline_pool == [0] and case.change == "unchanged"
    # Consistent history (2/3 then 3/3: p = 0.5 each way) is pooled.
    files = _history([1.0, 0.0, 1.0], [1.0, 1.0, 1.0])
    case = compare(files, head).eval_sets[0].cases[0]
    assert case.baseline_pool == [0, 1]


def test_an_older_file_with_another_fingerprint_is_not_pooled():
    new = results(case_result("c", metric([1.0, 1.0, 1.0]), fingerprint="sha256:new"))
    old = results(case_result("c", metric([1.0, 1.0, 1.0]), fingerprint="sha256:old"))
    head = results(case_result("c", metric([1.0, 1.0, 1.0]), fingerprint="sha256:new"))
    case = compare([new, old, new], head).eval_sets[0].cases[0]
    assert case.baseline_pool == [0, 2]
    # When the newest file that has the case evaluated other data, the case is "changed".
    case = compare([old, new], head).eval_sets[0].cases[0]
    assert case.change == "changed"


def test_only_fresh_runs_decide_and_screening_runs_never_do():
    """The first runs look terrible, the fresh ones are like main: not regressed - and the
    reverse: first runs merely screened, fresh runs all fail: regressed."""
    files = _history([1.0] * 3, [1.0] * 3, [1.0] * 3)
    head = results(case_result("c", metric([0.0, 0.0, 0.0])))
    fresh_good = case_result("c", metric([1.0] * 20))
    compared = compare(files, head, confirmations={("weather", "c"): fresh_good})
    m = compared.eval_sets[0].cases[0].metrics[0]
    assert compared.eval_sets[0].cases[0].change == "unchanged"
    assert m.screened is True and m.confirm_runs == [1.0] * 20
    assert compared.comparison.familywise["confirmed"] is True
    fresh_bad = case_result("c", metric([0.0] * 20))
    compared = compare(files, head, confirmations={("weather", "c"): fresh_bad})
    assert compared.eval_sets[0].cases[0].change == "regressed"
    # Decided against the older files' runs only (6/6), not the newest's the screen read:
    # p = 1 / C(26, 20).
    assert compared.eval_sets[0].cases[0].metrics[0].p_value == pytest.approx(1 / math.comb(26, 20))
    # A case that did not screen is not tested, whatever its runs: nothing to confirm.
    calm = results(case_result("c", metric([1.0, 1.0, 1.0])))
    compared = compare(files, calm, confirmations={})
    assert compared.eval_sets[0].cases[0].metrics[0].screened is False
    assert compared.comparison.familywise["tests"] == 0


def test_confirmation_rounds_stop_early_when_fresh_runs_do_not_look_worse():
    files = _history([1.0, 1.0, 0.0], [1.0, 0.0, 1.0], [1.0, 1.0, 0.0])
    head = results(case_result("c", metric([0.0, 0.0, 1.0])))
    confirmation = Confirmation(BaselinePool(files), 20)
    wanted = confirmation.start({("weather", "c"): head.eval_sets[0].cases[0]})
    assert wanted == [("weather", "c")] * 5
    # 5 fresh passes against the older files' 4/6: p(worse) = 1 > 0.5: settled, no more runs.
    confirmation.add(("weather", "c"), case_result("c", metric([1.0] * 5)))
    assert confirmation.next_round() == []
    assert confirmation.extra_runs() == 5


def _errored(eval_id, scores):
    case = case_result(eval_id, metric(scores))
    runs = [RunResult(run=i + 1, status="error", error="crash") if s is None
            else RunResult(run=i + 1, status="passed" if s >= 1.0 else "failed")
            for i, s in enumerate(scores)]
    return case.model_copy(update={"runs": runs, "status": "error"})


def test_an_errored_run_is_a_failing_run_not_a_gate_failure_by_itself():
    base = results(case_result("c", metric([1.0, 0.0, 1.0])))
    head = results(_errored("c", [1.0, None, 1.0]))
    compared = compare(base, head)
    case = compared.eval_sets[0].cases[0]
    # 2 passes of 3 on each side, the errored run counted as failing: p(worse) = 0.8.
    assert case.change == "unchanged" and case.metrics[0].p_value == pytest.approx(0.8)
    assert not gate_failed(compared, "regression")
    assert gate_failed(compared, "failure")


def test_a_case_erroring_in_every_run_where_main_passed_is_regressed():
    base = results(case_result("c", metric([1.0, 1.0])), case_result("d", metric([0.0, 0.0])))
    head = results(_errored("c", [None, None]), _errored("d", [None, None]))
    compared = compare(base, head)
    changes = {c.eval_id: c.change for c in compared.eval_sets[0].cases}
    assert changes == {"c": "regressed", "d": "unchanged"}
    assert gate_failed(compared, "regression")


def test_fail_on_drop_fails_a_suite_that_dropped_for_sure():
    """Eight cases each 3/3 -> 1/3: none regresses on its own, the suite mean drops for sure."""
    cases = [f"c{i}" for i in range(8)]
    base = results(*(case_result(c, metric([1.0] * 3)) for c in cases))
    head = results(*(case_result(c, metric([1.0, 0.0, 0.0])) for c in cases))
    compared = compare(base, head)
    assert compared.comparison.summary.regressed == 0
    assert not gate_failed(compared, "regression")
    assert gate_failed(compared, "drop")
    # Under drop the drop is what decides: the one thing the headline says first.
    assert gate_message(compared, "drop").startswith("gate failed (fail-on: drop): the suite dropped: ")
    assert "dropped" not in gate_message(compared, "regression")  # where it does not gate: not said
    same = compare(base, base)
    assert not gate_failed(same, "drop")


def test_alpha_outside_its_range_is_refused():
    base = results(case_result("c", metric([1.0])))
    for alpha in (0, 0.51, -0.1):
        with pytest.raises(ValueError, match="alpha"):
            compare(base, base, alpha=alpha)


def test_bootstrap_is_pinned_on_fine_grained_data():
    """Another seed, or the percentile position q*n instead of q*(n-1), moves these digits."""
    data = [0.13, -0.71, 0.42, -0.05, 0.27, -0.33, 0.08, -0.9, 0.61, -0.18]
    interval = paired_bootstrap(data)
    assert interval.mean == pytest.approx(-0.066)
    # random.Random(0), 10,000 resamples, 2.5th / 97.5th percentile at q*(n-1) (numpy's
    # default); at q*n the low end would be -0.359000.
    assert (interval.low, interval.high) == (pytest.approx(-0.359025, abs=1e-12),
                                             pytest.approx(0.209, abs=1e-12))
    other = paired_bootstrap(data, seed=1)
    assert (other.low, other.high) != (interval.low, interval.high)



def test_the_report_headline_is_the_gate_in_one_sentence():
    from checker.report.markdown import render_markdown

    def top(text: str) -> tuple[str, list[str]]:
        """The headline and the short lines right under it."""
        import itertools

        lines = text.splitlines()
        return lines[0], [x[2:] for x in itertools.takewhile(lambda x: x.startswith("- "), lines[2:])]

    base = results(case_result("old_failure", metric([0.0] * 3)), case_result("ok", metric([1.0] * 3)))
    head = results(case_result("old_failure", metric([0.0] * 3)), case_result("ok", metric([1.0] * 3)))
    compared = compare(base, head)
    first, below = top(render_markdown(compared, fail_on="regression"))
    assert first == "## ✅ Gate passed: no regression."
    assert below == ["1 case fails, as on main"]
    assert "family-wise alpha 0.05" in render_markdown(compared, fail_on="regression")
    assert "fail-on `regression`" in render_markdown(compared, fail_on="regression")  # the footer says the rule
    regressed = compare(base, results(case_result("old_failure", metric([0.0] * 3)),
                                      case_result("ok", metric([0.0] * 3))))
    first, below = top(render_markdown(regressed, fail_on="regression"))
    assert first == "## ❌ Gate failed: 1 case regressed (ok)."
    assert below == ["1 case fails, as on main"]
    # Screened and not confirmed is said, with the fresh runs it took.
    files = _history([1.0] * 3, [1.0] * 3)
    calm = compare(files, results(case_result("c", metric([0.0, 1.0, 1.0]))),
                   confirmations={("weather", "c"): case_result("c", metric([1.0] * 5))})
    first, below = top(render_markdown(calm, fail_on="regression"))
    assert first == "## ✅ Gate passed: no confirmed regression."
    # It fails here and main passed it: said of it, not "as on main".
    assert below[-1] == ("1 case fails that passed 6/6 on main (weather/c): the drop was "
                         "not confirmed in 5 fresh runs")
    # A screened case that still passes is counted apart.
    files = [results(case_result("c", metric([1.0] * 3, threshold=0.5))) for _ in range(2)]
    calm = compare(files, results(case_result("c", metric([0.0, 1.0, 1.0], threshold=0.5))),
                   confirmations={("weather", "c"): case_result("c", metric([1.0] * 5, threshold=0.5))})
    assert "1 case looked worse and was not confirmed in 5 fresh runs" in top(render_markdown(calm, fail_on="regression"))[1]


def test_screening_weights_share_the_level_and_keep_its_sum():
    """Two testable confirmed tests (older runs 6/6 against 20 fresh): A screened with p = 0.05,
    C with p = 0.5. Tarone: A's floor is 1/C(26,20); C (9 fresh passes: 15 in all, so at
    least 9 in the fresh 20) has C(15,9)/C(26,20) = 0.0217; m(1) = 2 > 1, m(2) = 2: K = 2,
    alpha/K = 0.025. Weights 1/0.05 : 1/0.5 = 20 : 2, scaled to sum to K = 2: A 40/22,
    C 4/22. Their levels sum to alpha."""
    from checker.compare.decision import MetricTest, decide

    a = MetricTest((True,) * 6, (False,) * 20, screen_p=0.05)
    c = MetricTest((True,) * 6, (True,) * 9 + (False,) * 11, screen_p=0.5)
    assert c.floor == pytest.approx(math.comb(15, 9) / math.comb(26, 20))
    family = decide([a, c], 0.05)
    assert (family.k, family.testable, family.level) == (2, 2, 0.025)
    assert family.level_of(a) == pytest.approx(0.025 * 40 / 22)
    assert family.level_of(c) == pytest.approx(0.025 * 4 / 22)
    assert family.level_of(a) + family.level_of(c) == pytest.approx(0.05)
    # C: p = P(X <= 9) = P(X = 9) = 0.0217: below plain Tarone's 0.025, above its own 0.0045.
    assert c.p_worse == pytest.approx(math.comb(15, 9) / math.comb(26, 20)) and not family.rejects(c)
    assert family.rejects(a)
    # Without independent screening (replay, compare) every test has weight 1: plain Tarone.
    plain_c = MetricTest(c.base, c.head)
    plain = decide([MetricTest(a.base, a.head), plain_c], 0.05)
    assert not plain.weights and plain.level_of(plain_c) == 0.025 and plain.rejects(plain_c)


def test_adaptive_runs_go_to_cases_whose_comparison_is_undecided():
    """At threshold 1.0 runs that all fail settle the verdict (no extra run without a
    baseline), but against main's 3/3 they look worse: with a baseline they are uncertain."""
    from checker.compare.adaptive import AdaptiveRuns
    from checker.models.verdict_rule import parse_verdict_rule

    rule = parse_verdict_rule("mean")
    settled = case_result("c", metric([0.0, 0.0, 0.0]))
    alone = AdaptiveRuns([], 5, rule, context=None)
    assert not alone._uncertain(("weather", "c"), settled)
    pool = BaselinePool([results(case_result("c", metric([1.0, 1.0, 1.0])))])
    compared = AdaptiveRuns([], 5, rule, context=None, pool=pool)
    assert compared._uncertain(("weather", "c"), settled)
    like_main = case_result("c", metric([1.0, 1.0, 1.0]))
    assert not compared._uncertain(("weather", "c"), like_main)


def test_the_footer_counts_the_results_of_main_pooled_not_those_given():
    # The older result is a change point for the only case (3/3 now, 0/3 before): nothing
    # was pooled from it, so the footer must not say "2 results of main pooled".
    from checker.compare.comparison import compare
    from checker.report.markdown import render_markdown
    from comparehelpers import case_result, metric, results

    newest, older = results(case_result("c", metric([1.0] * 3))), results(case_result("c", metric([0.0] * 3)))
    compared = compare([newest, older], results(case_result("c", metric([1.0] * 3))))
    assert [c.baseline_pool for s in compared.eval_sets for c in s.cases] == [[0]]
    footer = render_markdown(compared).strip().splitlines()[-1]
    assert "; 2 results of main pooled" not in footer
    assert "1 of 2 results of main pooled" in footer


def test_the_footer_says_how_regressions_were_decided():
    from checker.report.markdown import render_markdown

    files = _history([1.0] * 3, [1.0] * 3)
    head = results(case_result("c", metric([1.0, 1.0, 1.0])))
    footer = render_markdown(compare(files, head), fail_on="regression").splitlines()[-1]
    assert "decided on the runs recorded, with no confirmation runs" in footer
    footer = render_markdown(compare(files, head, confirmations={}), fail_on="regression").splitlines()[-1]
    assert "no case looked worse than main, nothing to confirm" in footer
    worse = results(case_result("c", metric([0.0, 1.0, 1.0])))
    confirmed = compare(files, worse, confirmations={("weather", "c"): case_result("c", metric([1.0] * 5))})
    assert "decided on fresh confirmation runs" in render_markdown(confirmed).splitlines()[-1]
