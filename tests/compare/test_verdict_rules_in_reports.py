"""A case failed under a rule that counts runs is explained in that rule's terms: under
all-runs a mean of 0.75 against a threshold of 0.50 fails, and no report may say
"0.75 < 0.50" (user audit)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from checker.models.results import MetricResult
from checker.report.junit import render_junit
from checker.report.markdown import render_markdown
from checker.report.terminal import failure_lines
from comparehelpers import case_result, results


def failed_under(rule: str, runs: list[float], threshold: float):
    scored = sum(runs) / len(runs)
    metric = MetricResult(name="tool_trajectory_avg_score", threshold=threshold, score=scored,
                          status="failed", runs=runs)
    found = results(case_result("c4", metric))
    return found.model_copy(update={"verdict_rule": rule})


def test_all_runs_failure_says_how_many_runs_reached_the_threshold():
    found = failed_under("all-runs", [1.0, 1.0, 1.0, 0.0], 0.5)
    expected = "tool_trajectory_avg_score 3/4 runs >= 0.50, all-runs needs 4 (mean 0.75)"
    (line,) = [l for l in failure_lines(found) if "tool_trajectory_avg_score" in l]
    assert line.endswith(expected)
    markdown = render_markdown(found)
    assert "0.75 < 0.50" not in markdown
    assert "3/4 runs &gt;= 0.50, all-runs needs 4 (mean 0.75)" in markdown  # in a <summary>
    assert "(needs 0.50 in 4 of 4 runs under all-runs; 3 reached it)" in markdown
    junit = ET.fromstring(render_junit(found).split("\n", 1)[1])
    (failure,) = junit.iter("failure")
    assert failure.get("message").endswith(expected)


def test_k_of_n_and_majority_say_what_they_need():
    k_of_n = failed_under("k-of-n:3", [1.0, 1.0, 0.0, 0.0], 0.5)
    assert any(l.endswith("2/4 runs >= 0.50, k-of-n:3 needs 3 (mean 0.50)") for l in failure_lines(k_of_n))
    majority = failed_under("majority", [1.0, 1.0, 0.0, 0.0], 0.5)
    assert any(l.endswith("2/4 runs >= 0.50, majority needs 3 (mean 0.50)") for l in failure_lines(majority))


def test_the_mean_rule_keeps_the_score_against_the_threshold():
    found = failed_under("mean", [1.0, 0.0, 0.0], 0.5)
    assert any(l.endswith("tool_trajectory_avg_score 0.33 < 0.50") for l in failure_lines(found))
    assert "(needs 0.50)" in render_markdown(found)
