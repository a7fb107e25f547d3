"""Change labels, one test per label, and the rules that keep noise from being a regression."""

from __future__ import annotations

import pytest

from checker.compare.comparison import compare
from checker.compare.gate import gate_failed
from checker.compare.headline import gate_message
from checker.models.results import Results
from comparehelpers import case_result, label, metric, results


def test_deterministic_drop_with_three_runs_is_regressed():
    base = results(case_result("c", metric([1.0, 1.0, 1.0])))
    head = results(case_result("c", metric([0.5, 0.5, 0.5])))
    case, compared = label(base, head, "c")
    assert case.change == "regressed"
    (m,) = case.metrics
    assert (m.baseline_score, m.delta, m.p_value) == (1.0, -0.5, pytest.approx(0.05))
    assert compared.comparison.summary.regressed == 1
    assert gate_failed(compared, "regression")


def test_significant_drop_of_noisy_runs_is_regressed():
    base = results(case_result("c", metric([1.0] * 5, threshold=0.8)))
    head = results(case_result("c", metric([0.2, 0.0, 0.5, 0.1, 0.3], threshold=0.8)))
    case, _ = label(base, head, "c")
    assert case.change == "regressed"
    assert case.metrics[0].p_value == pytest.approx(0.004, abs=5e-5)  # 5/5 -> 0/5


def test_three_of_three_to_two_of_three_is_flaky_not_regressed():
    base = results(case_result("c", metric([1.0, 1.0, 1.0])))
    head = results(case_result("c", metric([1.0, 0.0, 1.0]), fingerprint="sha256:same"))
    assert not head.eval_sets[0].cases[0].flaky  # as in a results file older than the label
    case, compared = label(base, head, "c")
    assert case.change == "unchanged" and case.flaky
    assert case.metrics[0].p_value == pytest.approx(0.5)  # within noise, said with its p
    assert case.metrics[0].delta == pytest.approx(-1 / 3)
    assert not gate_failed(compared, "regression")
    assert gate_failed(compared, "failure")  # mean 0.67 < 1.0 still fails the plain gate


def test_failing_identically_on_both_sides_is_unchanged_and_passes_the_regression_gate():
    base = results(case_result("c", metric([0.0, 0.0, 0.0])), case_result("ok", metric([1.0] * 3)))
    head = results(case_result("c", metric([0.0, 0.0, 0.0])), case_result("ok", metric([1.0] * 3)))
    case, compared = label(base, head, "c")
    assert case.change == "unchanged" and case.status == "failed"
    assert case.metrics[0].p_value == 1.0 and case.metrics[0].delta == 0.0
    assert not gate_failed(compared, "regression")
    assert gate_failed(compared, "failure")
    assert "gate passed (fail-on: regression)" in gate_message(compared, "regression")


def test_improved():
    base = results(case_result("c", metric([0.0, 0.0, 0.0])))
    head = results(case_result("c", metric([1.0, 1.0, 1.0])))
    case, compared = label(base, head, "c")
    assert case.change == "improved" and case.metrics[0].p_value == pytest.approx(0.05)
    assert compared.comparison.summary.improved == 1


def test_deterministic_rise_that_still_fails_is_not_improved():
    base = results(case_result("c", metric([0.2, 0.2])))
    head = results(case_result("c", metric([0.4, 0.4])))
    case, _ = label(base, head, "c")
    assert case.change == "unchanged"


def test_one_run_a_side_is_not_deterministic_evidence():
    base = results(case_result("c", metric([1.0])))
    head = results(case_result("c", metric([0.0])))
    case, _ = label(base, head, "c")
    assert case.change == "unchanged" and case.metrics[0].p_value == pytest.approx(0.5)


def test_new_case_and_its_gate():
    base = results(case_result("old", metric([1.0, 1.0])))
    head = results(case_result("old", metric([1.0, 1.0])), case_result("fresh", metric([0.0, 0.0])))
    case, compared = label(base, head, "fresh")
    assert case.change == "new" and case.metrics[0].baseline_score is None
    assert gate_failed(compared, "regression")  # a new case that fails fails the gate


def test_changed_fingerprint():
    base = results(case_result("c", metric([1.0, 1.0]), fingerprint="sha256:aaa"))
    head = results(case_result("c", metric([0.0, 0.0]), fingerprint="sha256:bbb"))
    case, compared = label(base, head, "c")
    assert case.change == "changed"
    assert case.metrics[0].delta is None  # another test: not compared as if the same
    assert compared.comparison.summary.changed == 1
    assert compared.comparison.metrics == []


def test_changed_threshold_without_fingerprints():
    base = results(case_result("c", metric([1.0, 1.0], threshold=0.5), fingerprint=None))
    head = results(case_result("c", metric([1.0, 1.0], threshold=0.9), fingerprint=None))
    case, _ = label(base, head, "c")
    assert case.change == "changed"


def test_removed_cases_are_listed():
    base = results(case_result("a", metric([1.0])), case_result("gone", metric([1.0])))
    head = results(case_result("a", metric([1.0])))
    _, compared = label(base, head, "a")
    assert [(r.eval_set_id, r.eval_id) for r in compared.comparison.removed] == [("weather", "gone")]
    assert compared.comparison.summary.removed == 1
    dumped = compared.model_dump(mode="json")
    assert dumped["comparison"]["removed"] == [{"evalSetId": "weather", "evalId": "gone"}]


def test_same_case_id_in_another_eval_set_is_another_case():
    base = results(case_result("c", metric([1.0, 1.0, 1.0])), set_id="other")
    head = results(case_result("c", metric([0.0, 0.0, 0.0])))
    case, compared = label(base, head, "c")
    assert case.change == "new" and compared.comparison.summary.removed == 1


def test_older_baseline_without_fingerprints_still_compares():
    base = results(case_result("c", metric([1.0, 1.0, 1.0]), fingerprint=None))
    head = results(case_result("c", metric([0.0, 0.0, 0.0]), fingerprint="sha256:new"))
    # Written before fingerprints: drop the keys from the JSON, as such a file has none.
    raw = base.model_dump(mode="json")
    assert "fingerprint" not in raw["evalSets"][0]["cases"][0]
    case, compared = label(Results.model_validate(raw), head, "c")
    assert case.change == "regressed"
    assert any("fingerprint unknown for 1 case" in n for n in compared.comparison.notes)


def test_compare_is_pure_and_keeps_head_order():
    base = results(case_result("b", metric([1.0] * 3)), case_result("a", metric([1.0] * 3)))
    head = results(case_result("a", metric([0.0] * 3)), case_result("b", metric([1.0] * 3)))
    before = head.model_dump_json()
    compared = compare(base, head)
    assert head.model_dump_json() == before and head.comparison is None
    assert [c.eval_id for c in compared.eval_sets[0].cases] == ["a", "b"]
    assert [c.change for c in compared.eval_sets[0].cases] == ["regressed", "unchanged"]


def test_suite_level_delta_and_pass_rates():
    base = results(*[case_result(f"c{i}", metric([1.0, 1.0])) for i in range(4)])
    head = results(*[case_result(f"c{i}", metric([1.0, 1.0] if i else [0.0, 0.0])) for i in range(4)])
    compared = compare(base, head)
    (suite,) = compared.comparison.metrics
    assert suite["name"] == "tool_trajectory_avg_score" and suite["cases"] == 4
    assert suite["meanDelta"] == pytest.approx(-0.25)
    # Bootstrap of [-1, 0, 0, 0]: resample means lie in {0, -0.25, -0.5, ...}.
    assert suite["interval"]["low"] <= -0.25 <= suite["interval"]["high"] == 0.0
    assert suite["baselinePassRate"]["passed"] == 4 and suite["passRate"]["passed"] == 3
    assert round(suite["passRate"]["low"], 4) == 0.3006  # Wilson 3/4
    assert round(suite["baselinePassRate"]["low"], 4) == 0.5101  # Wilson 4/4


def test_alpha_is_configurable():
    base = results(case_result("c", metric([1.0] * 3, threshold=0.8)))
    head = results(case_result("c", metric([0.9, 0.0, 0.1], threshold=0.8)))  # 3/3 -> 1/3, p=0.2
    assert label(base, head, "c")[0].change == "unchanged"
    compared = compare(base, head, alpha=0.25)
    assert compared.eval_sets[0].cases[0].change == "regressed"


def test_regression_gate_without_baseline_is_the_failure_gate():
    head = results(case_result("c", metric([0.0, 0.0])))
    assert gate_failed(head, "regression")
    assert "no baseline" in gate_message(head, "regression")
    assert not gate_failed(results(case_result("c", metric([1.0, 1.0]))), "regression")


def test_error_gate_sees_an_errored_run_behind_a_failed_metric():
    from checker.models.results import RunResult

    failed = case_result("c", metric([0.0, None]))
    failed = failed.model_copy(update={"runs": [RunResult(run=1, status="failed"),
                                                RunResult(run=2, status="error", error="boom")]})
    assert failed.status == "failed"
    head = results(failed)
    assert gate_failed(head, "error") and gate_failed(head, "failure")
    assert not gate_failed(results(case_result("c", metric([0.0, 0.0]))), "error")
    assert not gate_failed(head, "never")


def test_comparing_a_compared_file_again_leaves_no_stale_figures():
    base = results(case_result("c", metric([1.0] * 3)))
    head = results(case_result("c", metric([0.0] * 3)))
    once = compare(base, head)
    assert once.eval_sets[0].cases[0].metrics[0].baseline_score == 1.0
    other = results(case_result("d", metric([1.0] * 3)))  # "c" is new against this one
    again = compare(other, once)
    case = again.eval_sets[0].cases[0]
    assert case.change == "new"
    dumped = case.metrics[0].model_dump(mode="json")
    assert not {"baselineScore", "delta", "pValue", "baselineRuns"} & set(dumped)


def test_deterministic_change_tells_which_evidence():
    from checker.compare.comparison import deterministic_change

    fixed, _ = label(results(case_result("c", metric([1.0] * 3))),
                     results(case_result("c", metric([0.5] * 3))), "c")
    noisy, _ = label(results(case_result("c", metric([1.0] * 5, threshold=0.8))),
                     results(case_result("c", metric([0.2, 0.0, 0.5, 0.1, 0.3], threshold=0.8))), "c")
    same, _ = label(results(case_result("c", metric([0.0] * 3))),
                    results(case_result("c", metric([0.0] * 3))), "c")
    assert deterministic_change(fixed.metrics[0])
    assert not deterministic_change(noisy.metrics[0]) and noisy.change == "regressed"
    assert not deterministic_change(same.metrics[0])


def test_a_suite_that_dropped_for_sure_is_said_even_when_no_case_regressed_on_its_own():
    """Eight cases each go 3/3 -> 1/3 passing runs: each is within noise (p = 0.2), but all
    eight moved the same way, so the suite's mean dropped with its whole interval below 0.
    The reports must say so, as a plain line: under fail-on regression it decides nothing, and
    the headline (the terminal's last line) says only what decides (issue 40)."""
    from checker.compare.comparison import suite_drops
    from checker.report.changes import build_changes
    from checker.report.terminal import comparison_lines

    base = results(*[case_result(f"c{i}", metric([1.0, 1.0, 1.0])) for i in range(8)])
    head = results(*[case_result(f"c{i}", metric([1.0, 0.0, 0.0])) for i in range(8)])
    compared = compare(base, head)
    assert compared.comparison.summary.regressed == 0
    assert compared.eval_sets[0].cases[0].metrics[0].p_value == pytest.approx(0.2)
    (drop,) = suite_drops(compared.comparison)
    assert (drop.metric, round(drop.mean, 2), round(drop.high, 2)) == (
        "tool_trajectory_avg_score", -0.67, -0.67)
    changes = build_changes(compared)
    assert changes.drops == ["tool_trajectory_avg_score -0.67 (95% interval -0.67 to -0.67)"]
    assert not any("dropped" in text for text, _ in changes.counts)  # not a count in bold
    assert any(line.startswith("suite dropped: tool_trajectory_avg_score -0.67")
               for line in comparison_lines(compared))
    assert not gate_failed(compared, "regression")  # the gate counts cases (CONTRACT section 8)
    assert "dropped" not in gate_message(compared, "regression")
    assert "the suite dropped: tool_trajectory_avg_score -0.67" in gate_message(compared, "drop")


def test_a_suite_whose_interval_reaches_zero_did_not_drop():
    base = results(*[case_result(f"c{i}", metric([1.0, 1.0])) for i in range(4)])
    head = results(*[case_result(f"c{i}", metric([1.0, 1.0] if i else [0.0, 0.0])) for i in range(4)])
    compared = compare(base, head)
    assert compared.comparison.metrics[0]["interval"]["high"] == 0.0
    from checker.compare.comparison import suite_drops
    from checker.report.changes import build_changes

    assert suite_drops(compared.comparison) == []
    assert "Suite dropped" not in " ".join(t for t, _ in build_changes(compared).counts)


def test_a_shard_under_the_regression_gate_fails_only_on_errors_and_says_merge_decides():
    """A shard is compared only once merged: a failing case it cannot label must not fail
    its job as "no baseline" would (a baseline may well have been given); a metric that
    errored still does."""
    from checker.models.results import RunResult, ShardInfo

    shard = ShardInfo(index=2, count=3, selection="sha256:x")
    failing = results(case_result("c", metric([0.0, 0.0]))).model_copy(update={"shard": shard})
    assert not gate_failed(failing, "regression")
    assert gate_failed(failing, "failure")
    message = gate_message(failing, "regression")
    assert message.startswith("gate passed (fail-on: regression): shard 2/3, ")
    assert "evalcheck merge --baseline" in message and "no baseline" not in message
    errored = case_result("e", metric([0.0, None]))
    errored = errored.model_copy(update={"runs": [RunResult(run=1, status="failed"),
                                                  RunResult(run=2, status="error", error="boom")]})
    # An errored run is a failing run of the comparison (after its retries), decided at the
    # merge; a metric that could not be computed fails the shard: nothing can be said of it.
    with_errored_run = results(errored).model_copy(update={"shard": shard})
    assert not gate_failed(with_errored_run, "regression")
    broken_metric = case_result("m", metric([1.0, 1.0]))
    broken_metric.metrics[0] = broken_metric.metrics[0].model_copy(
        update={"status": "error", "error": "run 1: judge unreachable"})
    broken = results(broken_metric).model_copy(update={"shard": shard})
    assert gate_failed(broken, "regression")
    assert gate_message(broken, "regression").startswith("gate failed (fail-on: regression): shard 2/3")


def test_a_compared_file_compared_again_keeps_no_figures_of_the_first_comparison():
    # HEAD may be a results file that was compared before (with confirmation runs and
    # main's history): `evalcheck compare main.json pr.json` must not carry its screening,
    # fresh runs or pool indices over - they would claim confirmation runs that this
    # comparison never had ("looked worse and was not confirmed") and point into a
    # comparison.baseline.history that is not there.
    from checker.compare.comparison import compare
    from checker.compare.headline import gate_headline
    from comparehelpers import case_result, metric, results

    base = results(case_result("c", metric([1.0] * 3)))
    head = results(case_result("c", metric([1.0, 0.0, 1.0])))
    fresh = case_result("c", metric([1.0] * 5))
    first = compare([base, base], head, confirmations={("weather", "c"): fresh})
    (was,) = first.eval_sets[0].cases
    assert was.metrics[0].screened and was.metrics[0].confirm_runs and was.baseline_pool == [0, 1]
    again = compare(base, first)
    (case,) = again.eval_sets[0].cases
    assert case.baseline_pool is None
    assert (case.metrics[0].screened, case.metrics[0].confirm_runs) == (None, None)
    assert "not confirmed" not in gate_headline(again, "regression")[1]
