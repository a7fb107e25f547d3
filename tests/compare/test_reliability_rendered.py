"""pass^k and pass@k as a reader sees them: the suite's line under the counts and each
case's runs, in the HTML report laid out by headless Chromium and in the markdown as GitHub's
renderer (cmark-gfm) makes it."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from test_html_report import chromium, console_errors  # skips the module without chromium

from checker.report.html import render_html
from checker.report.markdown import render_markdown
from comparehelpers import case_result, metric, results

# 14 cases pass 3 of 3, 5 pass 1 of 3 (flaky), 1 fails all 3: pass^3 14/20, pass@3 19/20.
SUITE = results(*[case_result(f"steady{i}", metric([1.0] * 3)) for i in range(14)],
                *[case_result(f"flaky{i}", metric([0.0, 1.0, 0.0], threshold=0.3)) for i in range(5)],
                case_result("broken", metric([0.0] * 3)))
for case in SUITE.eval_sets[0].cases[14:19]:
    case.flaky = True  # as scoring marks runs that disagree
LINE = ("Reliability over 20 cases of 3 runs: pass^3 0.70 (every run passed; 95% 0.48\u20130.85), "
        "pass@3 0.95 (at least one passed; 95% 0.76\u20130.99).")


def _gfm(markdown: str) -> str:
    if not shutil.which("cmark-gfm"):
        pytest.skip("cmark-gfm not installed")
    return subprocess.run(["cmark-gfm", "--unsafe", "-e", "table"], input=markdown, capture_output=True,
                          text=True, check=True).stdout


def test_the_markdown_says_it_in_one_line_and_in_the_failing_row():
    markdown = render_markdown(SUITE)
    shown = _gfm(markdown)
    text = re.sub(r"</?code>", "", shown)
    assert f"<p>{LINE}</p>" in text  # its own paragraph, right under the counts
    assert shown.index("eval cases passed") < shown.index("Reliability over") < shown.index("Needs attention")
    assert "<code>pass@3</code>" in shown  # a code span: never a mention, never defused
    assert re.search(r"<td>.*broken.*</td>\s*<td>❌ failed <sub>0/3 runs passed \(95% 0.00–0.56\)</sub></td>", shown)
    # a flaky case's badge already counts its runs: no second count
    assert shown.count("runs passed") == 1


def test_the_html_report_says_it_for_the_suite_and_each_case(tmp_path):
    page = tmp_path / "report.html"
    page.write_text(re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", render_html(SUITE)),
                    encoding="utf-8")
    dom = chromium(page, "--dump-dom")
    assert console_errors(dom.stderr) == []
    assert f'<p class="reliability">{LINE}</p>' in dom.stdout
    runs = re.findall(r'<p class="reliability">Reliability: (.*?)</p>', dom.stdout)
    assert len(runs) == 20
    assert "1 of 3 runs passed (95% 0.06\u20130.79); pass^3 0.00, pass@3 1.00" in runs
    assert "0 of 3 runs passed (95% 0.00\u20130.56); pass^3 0.00, pass@3 0.00" in runs
    assert runs.count("3 of 3 runs passed (95% 0.44\u20131.00); pass^3 1.00, pass@3 1.00") == 14


def test_one_run_a_case_says_one_rate():
    one = results(case_result("a", metric([1.0])), case_result("b", metric([0.0])))
    assert "Reliability over 2 cases of 1 run: pass^1 0.50 (95% 0.09\u20130.91)." in \
        re.sub(r"`", "", render_markdown(one))
    assert "pass@1" not in render_markdown(one)
