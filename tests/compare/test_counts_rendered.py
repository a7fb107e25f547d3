"""The counts of issue 40 as a reader sees them: the HTML report in headless Chromium and the
markdown as GitHub's renderer (cmark-gfm) makes it - the removed cases named where they are
counted, the cases outside a subset run counted apart, the fresh runs that only checked
screening against confirmation said beside the regression test's."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from test_html_report import chromium, console_errors  # skips the module without chromium

from checker.compare.comparison import compare
from checker.models.results import RunResult
from checker.report.html import render_html
from checker.report.markdown import render_markdown
from comparehelpers import case_result, metric, results


def _rendered(compared, tmp_path) -> tuple[str, str]:
    page = tmp_path / "report.html"
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "",
                  render_html(compared, fail_on="regression"))
    page.write_text(text, encoding="utf-8")
    dom = chromium(page, "--dump-dom")
    assert console_errors(dom.stderr) == []
    return dom.stdout, render_markdown(compared, fail_on="regression")


def _gfm(markdown: str) -> str:
    if not shutil.which("cmark-gfm"):
        pytest.skip("cmark-gfm not installed")
    return subprocess.run(["cmark-gfm", "--unsafe", "-e", "table"], input=markdown, capture_output=True,
                          text=True, check=True).stdout


def test_removed_and_outside_cases_as_rendered(tmp_path):
    base = results(*(case_result(i, metric([1.0] * 3)) for i in ("a1", "a2", "a3", "gone")))
    head = results(*(case_result(i, metric([1.0] * 3)) for i in ("a1",)))
    head.eval_sets[0].unselected = ["a2", "a3"]  # a case filter left them out; "gone" left the file
    compared = compare(base, head)
    dom, markdown = _rendered(compared, tmp_path)
    assert "Against the baseline: 0 regressed, 0 improved, 1 unchanged, 0 new, 0 changed, 1 removed, " \
        "2 outside this run" in dom
    assert re.search(r'<p class="removed">Removed since the baseline \(1\): weather / gone\.</p>', dom)
    shown = _gfm(markdown)
    assert "<strong>Removed since the baseline</strong> (1): <code>weather / gone</code>." in shown
    assert "2 outside this run" in shown


def test_fresh_runs_of_the_screening_check_as_rendered(tmp_path):
    """main passed 3/3 twice (c and a steady case: two metrics that can be contested, level
    0.025); the PR failed c's 3 first runs, then passed 4 of its first 5 fresh runs (the
    regression test's) and 18 of the 25 the screening check read: p = C(10,3)/C(28,3) =
    120/3,276 = 0.037 > 0.025, no disagreement."""
    steady = case_result("steady", metric([1.0] * 3))
    files = [results(case_result("c", metric([1.0] * 3)), steady) for _ in range(2)]
    scores = [1.0, 1.0, 0.0, 1.0, 1.0] + [1.0, 0.0, 1.0] * 6 + [1.0, 1.0]
    fresh = case_result("c", metric(scores[:5]))
    fresh.metrics[0].confirm_budget = 30
    fresh.runs = [RunResult(run=4 + i, status="passed" if s else "failed") for i, s in enumerate(scores)]
    longer = case_result("c", metric(scores))
    longer.runs = fresh.runs
    compared = compare(files, results(case_result("c", metric([0.0] * 3)), steady),
                       confirmations={("weather", "c"): fresh}, contested_runs={("weather", "c"): longer})
    case = compared.eval_sets[0].cases[0]
    assert len(case.fresh_runs or []) == 25 and case.metrics[0].disagreement_runs == scores
    dom, markdown = _rendered(compared, tmp_path)
    assert "<td>5 fresh runs, 4 passed (budget 30); the screening check read 25, 18 passed</td>" in dom
    said = "not confirmed in 5 fresh runs (budget 30; 20 more checked that screening and confirmation agree)"
    assert said in dom and said in _gfm(markdown)
