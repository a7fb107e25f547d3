"""The gate's headline says what happened to a failing case no label explains: "as on main"
only where main failed it too; a case main passed says whether its drop was not confirmed in
fresh runs, could not be called at the family-wise level (and what would decide it), or is
within noise (checker/compare/failing.py)."""

from __future__ import annotations

from checker.compare.comparison import compare
from checker.compare.headline import headline as decided
from comparehelpers import case_result, metric, results


def headline(compared, fail_on: str = "regression") -> str:
    """The one-sentence headline, then its short lines, as "sentence | line | line"."""
    found = decided(compared, fail_on)
    return " | ".join([found.sentence, *found.lines])


def test_as_on_main_only_where_main_failed_the_case_too():
    base = results(case_result("old", metric([0.0] * 3)), case_result("ok", metric([1.0] * 3)))
    head = results(case_result("old", metric([0.0] * 3)), case_result("ok", metric([1.0] * 3)))
    compared = compare(base, head)
    assert compared.eval_sets[0].cases[0].baseline_status == "failed"
    assert headline(compared) == "Gate passed: no regression. | 1 case fails, as on main"


def test_a_case_main_passed_and_fresh_runs_did_not_confirm_says_so():
    """Main passed 3/3 (3 results pooled: 9/9); the PR's first runs 1/3 screened it; 15
    fresh runs at 12/15 do not confirm it (the case's own verdict is its first runs')."""
    steady = case_result("steady", metric([1.0] * 3))  # keeps the suite's mean delta's interval at 0
    files = [results(case_result("c", metric([1.0] * 3)), steady) for _ in range(3)]
    head = results(case_result("c", metric([0.0, 1.0, 0.0])), steady)
    fresh = case_result("c", metric([1.0] * 12 + [0.0] * 3))
    compared = compare(files, head, confirmations={("weather", "c"): fresh})
    case = compared.eval_sets[0].cases[0]
    assert (case.change, case.status, case.baseline_status) == ("unchanged", "failed", "passed")
    assert headline(compared) == (
        "Gate passed: no confirmed regression. | 1 case fails that passed "
        "9/9 on main (weather/c): the drop was not confirmed in 15 fresh runs")
    assert "as on main" not in headline(compared)


def test_a_visible_drop_the_family_wise_gate_cannot_call_says_why_and_what_decides_it():
    """3/3 -> 0/3 against one 3-run result is p = 0.05; three such tables: at K = 1 all three
    reach 0.05 (3 > 1), at K = 2 none reaches 0.025: level 0.025 and nothing is called. A
    replay or `compare` cannot run more."""
    names = ["a", "b", "c"]
    base = results(*(case_result(n, metric([1.0] * 3)) for n in names))
    head = results(*(case_result(n, metric([0.0] * 3)) for n in names))
    compared = compare(base, head)
    assert compared.comparison.familywise["level"] == 0.025
    assert {c.change for c in compared.eval_sets[0].cases} == {"unchanged"}
    text = headline(compared)
    # The suite dropped (every case 3/3 -> 0/3), but under fail-on regression that decides
    # nothing: a passing headline never lists drops (the reports say it as a line of its own).
    assert text.startswith("Gate passed: no regression. | 3 cases fail that ") and "dropped" not in text
    assert ("3 cases fail that "
                           "passed on main (weather/a 3/3, 0/3 here, p of the pass rate 0.05, ...): too few runs to "
                           "reach the family-wise level 0.025, alpha 0.05 (none of 3 tests can reach its level); more results "
                           "of main (--baseline given several times; the Action's baseline: auto)") in text
    assert text.endswith("or confirmation runs with an agent decide it")
    assert "as on main" not in text and "within noise" not in text


def test_a_case_main_passed_whose_runs_are_no_worse_is_within_noise():
    """Main 2/3 runs pass with a mean above 0.5; the PR 1/3 falls below it: p = 0.5."""
    steady = case_result("steady", metric([1.0] * 3))
    base = results(case_result("c", metric([1.0, 1.0, 0.0], threshold=0.5)), steady)
    head = results(case_result("c", metric([1.0, 0.0, 0.0], threshold=0.5)), steady)
    compared = compare(base, head)
    assert headline(compared) == ("Gate passed: no regression. | 1 case fails "
                                  "that passed 2/3 on main (weather/c), within noise (p of the pass rate 0.50)")


def test_a_hostile_case_id_is_cut_and_kept_on_one_line():
    long = "x" * 200 + "\nsecond line"
    base = results(case_result(long, metric([1.0, 1.0, 0.0], threshold=0.5)))
    head = results(case_result(long, metric([1.0, 0.0, 0.0], threshold=0.5)))
    text = headline(compare(base, head))
    assert "\n" not in text and "x" * 61 not in text
