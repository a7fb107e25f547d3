"""The headline is one sentence saying what decides the gate under the chosen fail-on
(issue 40): "Gate failed: 2 cases regressed (lisbon_usd, rome_find_and_book)."; the rest as
short lines under it; a suite's drop only where it gates (fail-on drop) or as a plain line
of the body, never in a passing headline; a metric's change says what its p is of. The
terminal's last line keeps its one form (tests/core/test_last_line.py)."""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess

from checker.compare.comparison import compare
from checker.compare.headline import gate_message, headline
from checker.report.html import render_html
from checker.report.markdown import render_markdown
from comparehelpers import case_result, metric, results

SIX = [1.0] * 6


def top(markdown: str) -> tuple[str, list[str]]:
    lines = markdown.splitlines()
    return lines[0], [x[2:] for x in itertools.takewhile(lambda x: x.startswith("- "), lines[2:])]


def two_regressed():
    """6/6 -> 0/6 (p = 1/924) on two cases: both called at 0.05 over 2 tests; one case failing
    on main too."""
    base = results(case_result("lisbon_usd", metric(SIX)), case_result("rome_find_and_book", metric(SIX)),
                   case_result("paris", metric([0.0] * 6)), set_id="trip")
    head = results(case_result("lisbon_usd", metric([0.0] * 6)), case_result("rome_find_and_book", metric([0.0] * 6)),
                   case_result("paris", metric([0.0] * 6)), set_id="trip")
    return compare(base, head)


def test_the_gate_in_one_sentence_the_rest_below():
    compared = two_regressed()
    said = headline(compared, "regression")
    assert said.sentence == "Gate failed: 2 cases regressed (lisbon_usd, rome_find_and_book)."
    assert said.lines == ["1 case fails, as on main"]
    first, below = top(render_markdown(compared, fail_on="regression"))
    assert first == "## ❌ Gate failed: 2 cases regressed (lisbon\\_usd, rome\\_find\\_and\\_book)."
    assert below == ["1 case fails, as on main"]
    # The terminal's last line keeps its form: the rule, what decided it, then the rest.
    assert gate_message(compared, "regression") == (
        "gate failed (fail-on: regression): 2 cases regressed (lisbon_usd, rome_find_and_book); "
        "1 case fails, as on main")
    page = render_html(compared, fail_on="regression")
    assert '<h1 class="gate failed">Gate failed: 2 cases regressed (lisbon_usd, rome_find_and_book).</h1>' in page
    assert '<ul class="headline"><li>1 case fails, as on main</li></ul>' in page
    # Under fail-on failure, what decides is the cases that did not pass.
    assert headline(compared, "failure").sentence == "Gate failed: 3 of 3 cases did not pass."


def test_many_names_are_cut_and_counted():
    names = [f"case_{i}" for i in range(5)]
    base = results(*(case_result(n, metric([1.0] * 12)) for n in names))
    head = results(*(case_result(n, metric([0.0] * 12)) for n in names))
    assert headline(compare(base, head), "regression").sentence == (
        "Gate failed: 5 cases regressed (case_0, case_1, case_2 and 2 more).")


def drop_suite():
    """Eight cases each 3/3 -> 1/3: none regresses alone (p = 0.2), the suite mean drops."""
    cases = [f"c{i}" for i in range(8)]
    base = results(*(case_result(c, metric([1.0] * 3)) for c in cases))
    head = results(*(case_result(c, metric([1.0, 0.0, 0.0])) for c in cases))
    return compare(base, head)


def test_a_suite_drop_is_in_the_headline_only_where_it_gates():
    compared = drop_suite()
    drop = "tool_trajectory_avg_score -0.67 (95% interval -0.67 to -0.67)"
    passing = headline(compared, "regression")
    assert passing.passed and passing.sentence == "Gate passed: no regression."
    assert not any("drop" in line for line in passing.lines)  # a passing headline lists no drops
    markdown = render_markdown(compared, fail_on="regression")
    assert "dropped" not in "\n".join(top(markdown)[1]) and "Suite dropped" not in markdown
    plain = (f"The suite's mean fell, over the cases compared on both sides: {drop.replace('_', chr(92) + '_')} "
             "(gates only under `fail-on: drop`).")
    assert plain in markdown.splitlines()  # a plain line of the body
    failing = headline(compared, "drop")
    assert not failing.passed and failing.sentence == f"Gate failed: the suite dropped: {drop}."
    assert f"The suite's mean fell, over the cases compared on both sides: {drop.replace('_', chr(92) + '_')}." \
        in render_markdown(compared, fail_on="drop").splitlines()
    page = render_html(compared, fail_on="regression")
    assert f"The suite&#x27;s mean fell: {drop}, over the cases compared on both sides (gates only under " \
           "fail-on drop)" in page
    if shutil.which("cmark-gfm"):  # GitHub's renderer: the headline, then the list of short lines
        html = subprocess.run(["cmark-gfm", "--unsafe", "-e", "table"], input=render_markdown(two_regressed(),
                              fail_on="regression"), capture_output=True, text=True, check=True).stdout
        assert re.search(r"<h2>❌ Gate failed: 2 cases regressed \(lisbon_usd, rome_find_and_book\)\.</h2>\n"
                         r"<ul>\n<li>1 case fails, as on main</li>\n</ul>", html), html[:500]


def test_a_metrics_change_says_what_its_p_is_of():
    compared = drop_suite()
    markdown = render_markdown(compared, fail_on="regression")
    assert "within noise, p of the pass rate 0.20" in markdown
    page = render_html(compared, fail_on="regression")
    assert "-0.67 (p of the pass rate 0.20)" in page and "(p 0.20)" not in page
