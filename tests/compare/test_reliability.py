"""pass^k and pass@k per case and for the suite (checker/compare/reliability.py), pinned
against hand-computed values, and written into the results file beside the summary."""

from __future__ import annotations

import json

import pytest

from checker.compare.reliability import case_reliability, run_counts, suite_k, suite_reliability
from checker.compare.stats import pass_at_k, pass_hat_k, wilson
from checker.models.results import CaseResult, RunResult
from checker.report.results_json import results_json
from comparehelpers import results


def _case(eval_id: str, *statuses: str) -> CaseResult:
    runs = [RunResult(run=i + 1, status=s) for i, s in enumerate(statuses)]  # type: ignore[arg-type]
    return CaseResult(eval_id=eval_id, status="passed", runs=runs)


P, F, E, N = "passed", "failed", "error", "not_evaluated"
# 15 cases whose 3 runs pass (one of them with a 4th run the model service refused: no run),
# 5 that pass 1 of 3, one 2 of 3 and an errored run, one 0 of 3, one 6 of 8 (adaptive runs),
# one with 2 runs only (fewer than k = 3: left out of the suite's figures).
SUITE = ([_case(f"all{i}", P, P, P) for i in range(14)] + [_case("refused", P, N, P, P)]
         + [_case(f"one{i}", F, P, F) for i in range(5)] + [_case("errored", P, E, P), _case("none", F, F, F),
            _case("long", P, P, F, P, P, F, P, P), _case("short", P, P)])


def test_pass_hat_k_and_pass_at_k_exact_fractions():
    # 8 runs, 6 passing, k = 3: C(6,3)/C(8,3) = 20/56 (k = 2 would give 15/28, c = 5 10/56)
    assert pass_hat_k(8, 6, 3) == pytest.approx(20 / 56, abs=1e-15)
    # 8 runs, 3 passing: 1 - C(5,3)/C(8,3) = 1 - 10/56 (c = 2: 1 - 20/56; k = 2: 1 - 10/28)
    assert pass_at_k(8, 3, 3) == pytest.approx(46 / 56, abs=1e-15)
    assert pass_at_k(8, 6, 3) == 1.0  # two failures cannot fill three draws
    assert pass_hat_k(3, 3, 3) == 1.0 and pass_hat_k(3, 2, 3) == 0.0 and pass_at_k(3, 0, 3) == 0.0


@pytest.mark.parametrize("k,n,interval", [
    (14, 20, (0.4810, 0.8545)),                # the "pass^3 0.70 (95% 0.48-0.85)"
    (15 + 20 / 56, 23, (0.4639, 0.8235)),      # a mean of estimates: p 0.6677, by hand below
    (22, 23, (0.7901, 0.9923)),
])
def test_wilson_of_a_count_or_a_sum_of_estimates(k, n, interval):
    # 15.357/23: centre (p + z^2/2n) / (1 + z^2/n) = 0.75121 / 1.16702 = 0.64370, half
    # z sqrt(p(1-p)/n + z^2/4n^2) / (1 + z^2/n) = 1.959964 * 0.107063 / 1.16702 = 0.17981.
    low, high = wilson(k, n)
    assert (round(low, 4), round(high, 4)) == interval


def test_runs_counted_and_k():
    assert run_counts(_case("x", P, E, N, F, P)) == (2, 4)  # errored: not passing; refused: no run
    assert suite_k(SUITE) == 3
    assert suite_k([_case("a", P, P), _case("b", P, P, P)]) == 2  # a tie: the fewer
    assert suite_k([_case("a", N)]) is None


def test_each_case():
    errored = case_reliability(_case("errored", P, E, P), 3)
    assert errored is not None and (errored.passed, errored.runs) == (2, 3)
    assert (errored.pass_hat_k, errored.pass_at_k) == (0.0, 1.0)
    assert (round(errored.pass_rate.low, 4), round(errored.pass_rate.high, 4)) == (0.2077, 0.9385)
    long = case_reliability(SUITE[-2], 3)
    assert long is not None and long.pass_hat_k == pytest.approx(20 / 56) and long.pass_at_k == 1.0
    assert long.pass_rate.rate == 6 / 8 and (round(long.pass_rate.low, 4), round(long.pass_rate.high, 4)) == (0.4093, 0.9285)
    short = case_reliability(SUITE[-1], 3)
    assert short is not None and short.pass_hat_k is None and short.pass_at_k is None
    assert case_reliability(_case("refused", N, N), 3) is None


def test_the_suite():
    found = suite_reliability(SUITE)
    assert found is not None and (found.k, found.cases, found.fewer_runs) == (3, 23, 1)
    assert found.pass_hat_k.rate == pytest.approx((15 + 20 / 56) / 23)
    assert found.pass_at_k.rate == pytest.approx(22 / 23)
    assert (round(found.pass_hat_k.low, 4), round(found.pass_hat_k.high, 4)) == (0.4639, 0.8235)
    assert (round(found.pass_at_k.low, 4), round(found.pass_at_k.high, 4)) == (0.7901, 0.9923)
    assert suite_reliability([]) is None and suite_reliability([_case("a", N)]) is None


def test_written_in_the_results_file():
    data = json.loads(b"".join(results_json(results(*SUITE))))
    summary = data["summary"]["reliability"]
    assert (summary["k"], summary["cases"], summary["fewerRuns"]) == (3, 23, 1)
    assert summary["passAtK"]["rate"] == pytest.approx(22 / 23)
    cases = {c["evalId"]: c.get("reliability") for c in data["evalSets"][0]["cases"]}
    assert cases["errored"] == {"runs": 3, "passed": 2, "passRate": {"rate": 2 / 3, "low": pytest.approx(0.2077, abs=1e-4),
                                                                        "high": pytest.approx(0.9385, abs=1e-4)},
                                "k": 3, "passHatK": 0.0, "passAtK": 1.0}
    assert "passHatK" not in cases["short"]  # fewer than k runs: no estimate
