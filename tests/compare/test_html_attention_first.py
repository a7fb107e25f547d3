"""The HTML report puts what needs attention first, in the markdown's order (issue 40 point
5): the eval sets with failing, regressed, new or flaky cases before the passing ones, and in
each set those cases worst first, then the rest in file order; checked in headless Chromium."""

from __future__ import annotations

import re

from test_html_report import chromium, console_errors  # skips the module without chromium

from checker.compare.comparison import compare
from checker.models.results import EvalSetResult
from checker.report.html import render_html
from checker.report.markdown import render_markdown
from checker.scoring.pipeline import summarize
from comparehelpers import case_result, metric, results


def _two_sets(cases_of_b):
    calm = results(case_result("calm_1", metric([1.0] * 3)), set_id="calm").eval_sets[0]
    second = EvalSetResult(eval_set_id="trouble", path="trouble.evalset.json", cases=cases_of_b)
    found = results()
    found.eval_sets = [calm, second]
    found.summary = summarize(found.eval_sets)
    return found


def test_sets_and_cases_in_the_markdowns_order(tmp_path):
    steady = [case_result(n, metric([1.0] * 3)) for n in ("ok_1", "drops", "ok_2", "gone_bad")]
    base = _two_sets(steady)
    wobbly = case_result("wobbly", metric([1.0, 0.0, 1.0], threshold=0.5))
    wobbly.flaky = True
    head = _two_sets([case_result("ok_1", metric([1.0] * 3)), wobbly, case_result("drops", metric([0.0] * 3)),
                      case_result("ok_2", metric([1.0] * 3)), case_result("gone_bad", metric([0.5] * 3))])
    compared = compare(base, head)
    page = tmp_path / "report.html"
    page.write_text(re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "",
                           render_html(compared, fail_on="regression")), encoding="utf-8")
    dom = chromium(page, "--dump-dom")
    assert console_errors(dom.stderr) == []
    sections = re.findall(r"<section><h2>(.*?)</h2>", dom.stdout)
    assert sections == ["trouble", "calm"]  # file order is calm, trouble
    shown = re.findall(r'<details class="case"[^>]*><summary><code>(.*?)</code>', dom.stdout)
    # regressed first, then failing, new, flaky (wobbly is new and flaky); the rest in file order
    assert shown == ["drops", "gone_bad", "wobbly", "ok_1", "ok_2", "calm_1"]
    markdown = render_markdown(compared, fail_on="regression")
    attention = markdown[markdown.index("### Needs attention"):markdown.index("### Why cases")]
    in_markdown = re.findall(r"^\| (\w+) \|", attention.replace("\\_", "_"), re.M)
    assert in_markdown == ["Case", *shown[:3]]  # the same order as the comment's table (after its header)
