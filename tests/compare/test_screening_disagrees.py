"""Screening against confirmation (checker/compare/disagreement.py): when the fresh runs
contradict a drop every screening run showed - beyond what the pooled pass rate explains -
the case says "screening and confirmation disagree" and fails --fail-on regression; it is
never "within noise". Figures pinned by hand (written out beside them)."""

from __future__ import annotations

import json
import math
import shlex
import sys
from pathlib import Path

import pytest

from checker.compare.comparison import compare
from checker.compare.confirm import Confirmation
from checker.compare.disagreement import contested, decided, level, p_disagree
from checker.compare.gate import gate_failed
from checker.compare.headline import gate_headline, gate_message
from checker.compare.pooling import BaselinePool
from checker.report.terminal import failure_lines
from comparehelpers import case_result, metric, results
from corehelpers import call, case, evalset, invocation, run_cli, write_json

FAIL, PASS = False, True


def test_the_disagreement_p_value_by_hand():
    """Every screening run failed: p = P(the n_s screening runs are all among the N - T
    failures) = C(N - T, n_s) / C(N, n_s)."""
    # 0/3 screening, 5/5 fresh: 3 failures in 8 runs, C(3,3)/C(8,3) = 1/56.
    assert p_disagree([FAIL] * 3, [PASS] * 5) == pytest.approx(1 / 56)
    # 0/3 against 60/60: 1/C(63,3) = 1/39,711.
    assert p_disagree([FAIL] * 3, [PASS] * 60) == pytest.approx(1 / 39711)
    # 0/3 against 54/60: 9 failures in 63, C(9,3)/C(63,3) = 84/39,711.
    assert p_disagree([FAIL] * 3, [PASS] * 54 + [FAIL] * 6) == pytest.approx(84 / 39711)
    # 0/2 against 20/20: 1/C(22,2) = 1/231.
    assert p_disagree([FAIL] * 2, [PASS] * 20) == pytest.approx(1 / 231)
    # 0/3 against 12/15: 6 failures in 18, C(6,3)/C(18,3) = 20/816.
    assert p_disagree([FAIL] * 3, [PASS] * 12 + [FAIL] * 3) == pytest.approx(20 / 816)
    # 1/3 against 5/5 (not contested, but the test is the general one): P(X <= 1) with
    # 6 passes in 8 runs and 3 drawn: [C(6,0)C(2,3) + C(6,1)C(2,2)] / C(8,3) = 6/56.
    assert p_disagree([PASS, FAIL, FAIL], [PASS] * 5) == pytest.approx(6 / 56)
    assert p_disagree([], [PASS]) == p_disagree([FAIL], []) == 1.0
    assert math.isclose(level(0.05, 40), 0.00125) and level(0.05, 0) == 0.05


@pytest.mark.parametrize("main, screening, is_contested", [
    ([PASS] * 3, [FAIL] * 3, True),
    ([PASS] * 15, [FAIL] * 2, True),
    ([PASS, PASS, FAIL], [FAIL] * 3, False),  # main did not pass every run
    ([PASS] * 3, [FAIL, FAIL, PASS], False),  # a screening run passed
    ([], [FAIL] * 3, False),
    ([PASS] * 3, [], False),
])
def test_a_metric_is_contested_when_every_screening_run_failed_where_main_passed_every_run(
        main, screening, is_contested):
    assert contested(main, screening) is is_contested


def test_more_runs_are_asked_for_only_while_they_can_change_the_verdict():
    # 0/3 against 5/5, 55 runs left, level 0.05: all passing ends at 1/39,711 (below), all
    # failing at C(58,3)/C(63,3) = 30,856/39,711 = 0.777 (above): not decided.
    assert not decided([FAIL] * 3, [PASS] * 5, 55, 0.05)
    # 40/40, 20 left: all failing ends at C(23,3)/C(63,3) = 1,771/39,711 = 0.0446 <= 0.05:
    # it disagrees whatever they do.
    assert decided([FAIL] * 3, [PASS] * 40, 20, 0.05)
    assert not decided([FAIL] * 3, [PASS] * 35, 25, 0.05)  # C(28,3)/C(63,3) = 0.0825
    # 0/10, 50 left, level 0.001: all passing ends at C(13,3)/C(63,3) = 286/39,711 = 0.0072
    # (above): it cannot disagree.
    assert decided([FAIL] * 3, [FAIL] * 10, 50, 0.001)


def _one(eval_id: str, runs: list[float]):
    return case_result(eval_id, metric(runs))


def test_fresh_runs_that_contradict_every_screening_run_fail_the_regression_gate():
    """Main passed 3/3; the PR failed 0/3 and then passed 20/20 fresh runs: p = 1/C(23,3)
    = 1/1,771 <= 0.05 / 1 (one gating metric compared). Without the disagreement it would
    be "unchanged", not confirmed, and pass."""
    compared = compare(results(_one("c", [1.0] * 3)), results(_one("c", [0.0] * 3)),
                       confirmations={("weather", "c"): _one("c", [1.0] * 20)})
    case_ = compared.eval_sets[0].cases[0]
    assert case_.change == "unchanged" and case_.screening_disagrees is True
    assert case_.metrics[0].screening_disagreement == {
        "screening": [0, 3], "fresh": [20, 20], "pValue": pytest.approx(1 / 1771), "level": 0.05}
    assert case_.metrics[0].runs == [0.0] * 3 and case_.metrics[0].confirm_runs == [1.0] * 20
    assert gate_failed(compared, "regression")
    assert gate_message(compared, "regression") == (
        "gate failed (fail-on: regression): 1 case whose screening and confirmation disagree (c)")
    assert gate_headline(compared, "regression")[1] == (
        "Gate failed: 1 case whose screening and confirmation disagree (c).")
    (line,) = failure_lines(compared)
    assert "within noise" not in line and "[screening and confirmation disagree]" in line
    assert line.endswith("screening and confirmation disagree: 0/3 screening runs passed, "
                         "20/20 fresh ones (p = 0.00056 <= 0.05))")
    data = json.loads(compared.model_dump_json(by_alias=True, exclude_none=False))
    assert data["evalSets"][0]["cases"][0]["screeningDisagrees"] is True


def test_fresh_runs_that_agree_with_the_screening_runs_are_no_disagreement():
    """Honest controls: 0/3 then 8/20 fresh (p = C(15,3)/C(23,3) = 455/1,771 = 0.257), and
    1/3 then 20/20 (not contested: a screening run passed)."""
    for head, fresh in (([0.0] * 3, [1.0] * 8 + [0.0] * 12), ([0.0, 1.0, 0.0], [1.0] * 20)):
        compared = compare(results(_one("c", [1.0] * 3)), results(_one("c", head)),
                           confirmations={("weather", "c"): _one("c", fresh)})
        case_ = compared.eval_sets[0].cases[0]
        assert not case_.screening_disagrees and case_.metrics[0].screening_disagreement is None
        assert not gate_failed(compared, "regression")


def test_the_level_is_shared_by_every_metric_main_passed_in_every_run():
    """0/3 against 20/20 (p = 1/1,771 = 0.000565) disagrees among 40 metrics main passed in
    every run (level 0.05/40 = 0.00125) and not among 100 (0.0005); metrics main failed in
    some run cannot be contested and take no share."""
    for main_runs, others, disagrees in (([1.0] * 3, 39, True), ([1.0] * 3, 99, False),
                                         ([1.0, 1.0, 0.0], 99, True)):
        steady = [_one(f"s{i}", main_runs) for i in range(others)]
        compared = compare(results(_one("c", [1.0] * 3), *steady), results(_one("c", [0.0] * 3), *steady),
                           confirmations={("weather", "c"): _one("c", [1.0] * 20)})
        assert bool(compared.eval_sets[0].cases[0].screening_disagrees) is disagrees


def test_a_contested_metric_runs_on_after_its_regression_test_stopped():
    """Main 3/3, screening 0/3 (p = 0.05: the whole budget of 60). Fresh runs all pass: the
    regression test is settled after the first round (5 runs), but the disagreement goes on
    until it is certain: with d fresh passes and 60 - d runs left all failing, p =
    C(63 - d, 3)/C(63, 3) <= 0.05 needs C(63 - d, 3) <= 1,985.55: 63 - d <= 23, d >= 40."""
    pool = BaselinePool([results(_one("c", [1.0] * 3))])
    confirmation = Confirmation(pool, 60)
    wanted = confirmation.start({("weather", "c"): _one("c", [0.0] * 3)})
    while wanted:
        confirmation.add(("weather", "c"), _one("c", [1.0] * len(wanted)))
        wanted = confirmation.next_round()
    assert confirmation.extra_runs() == 40
    assert len(confirmation.confirmations()[("weather", "c")].metrics[0].runs) == 5
    assert len(confirmation.disagreement_runs()[("weather", "c")].metrics[0].runs) == 40
    assert confirmation.metadata()["confirmContested"] == 1
    assert confirmation.metadata()["confirmContestedRuns"] == 35  # 40 asked, 5 for the regression
    # An honest flaky case (screening 1/3) stops with its regression test.
    confirmation = Confirmation(pool, 60)
    wanted = confirmation.start({("weather", "c"): _one("c", [0.0, 1.0, 0.0])})
    while wanted:
        confirmation.add(("weather", "c"), _one("c", [1.0] * len(wanted)))
        wanted = confirmation.next_round()
    assert confirmation.extra_runs() == 5 and confirmation.disagreement_runs() == {}


AGENT = (f"{shlex.quote(sys.executable)} "
         f"{shlex.quote(str(Path(__file__).parent / 'agents' / 'screening_aware_agent.py'))}")
EXPECTED = invocation("Weather in Paris?", "The weather in Paris is sunny.", [call("get_weather", city="Paris")])


def test_an_agent_broken_only_in_the_screening_runs_no_longer_passes(repo, monkeypatch):
    """Through the CLI: the agent reads EVALCHECK_RUN and fails runs 1-3 only. Main and the
    honest PR pass; the PR that detects the screening runs fails --fail-on regression,
    saying why, where it used to be "not confirmed" and pass."""
    write_json(repo / "evals" / "w.evalset.json", evalset("w", case("rain", EXPECTED), case("sun", EXPECTED)))
    write_json(repo / "evals" / "test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})
    monkeypatch.setenv("AGENT_LOG", str(repo / "agent.log"))

    def run(out: str, *extra: str):
        return run_cli(["run", "evals", "--agent-command", AGENT, "--num-runs", "3", "--results", out,
                        "--markdown", f"{out}.md", *extra], repo)

    assert run("main.json").code == 0
    honest = run("honest.json", "--baseline", "main.json", "--fail-on", "regression")
    assert honest.code == 0, honest.output
    monkeypatch.setenv("BREAK_SCREENING_RUNS", "3")
    attack = run("attack.json", "--baseline", "main.json", "--fail-on", "regression")
    assert attack.code == 1, attack.output
    data = json.loads((repo / "attack.json").read_text())
    cases = {c["evalId"]: c for c in data["evalSets"][0]["cases"]}
    for found in cases.values():  # both cases: every first run failed, every fresh run passed
        assert found["screeningDisagrees"] is True and found["change"] == "unchanged"
        metric_ = found["metrics"][0]
        assert metric_["runs"] == [0.0] * 3 and set(metric_["confirmRuns"]) == {1.0}
        # Two metrics compared: level 0.025; certain once C(63 - d, 3) <= 992.8: d >= 44, so
        # 45 fresh runs (rounds of 5).
        assert metric_["screeningDisagreement"]["fresh"] == [45, 45]
    assert "gate failed (fail-on: regression): 2 cases whose screening and confirmation disagree" \
        in attack.stdout
    assert "within noise" not in attack.output
    markdown = (repo / "attack.json.md").read_text()
    assert markdown.splitlines()[0].startswith(
        "## ❌ Gate failed: 2 cases whose screening and confirmation disagree (rain, sun).")
    assert "within noise" not in markdown
