"""The trend of main: with 5 results of main as the baseline (--baseline given 5 times), the
report shows one Mermaid xychart-beta per series (pass rate, each gating metric's mean), this
PR the last point; cmark-gfm (GitHub's cmark) passes each through as a mermaid code block,
and a parser of xychart-beta's grammar accepts it; the terminal says the same in text."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from checker.models.results import BaselineFile, BaselineInfo, Comparison, Results, Summary
from checker.report.trend import INIT, _labels
from corehelpers import case, evalset, invocation, replay, run_cli, write_json

CASES = ("c1", "c2", "c3", "c4")


def results_of(repo, name: str, failing: int, *args: str):
    write_json(repo / "evals/s.evalset.json", evalset("s", *[case(c, invocation("q", "right answer"))
                                                           for c in CASES]))
    write_json(repo / "evals/test_config.json", {"criteria": {"response_match_score": 0.9}})
    write_json(repo / f"{name}.runs.json", replay(*[
        ("s", c, n, [invocation("q", "wrong" if i < failing else "right answer")])
        for i, c in enumerate(CASES) for n in (1, 2)]))
    return run_cli(["run", "evals", "--replay", f"{name}.runs.json", "--results", f"{name}.json",
                    "--markdown", f"{name}.md", *args], repo)


def parse_xychart(source: str) -> dict:
    """xychart-beta's grammar as Mermaid 11 documents it, for what evalcheck writes: the init
    line (the line's colour), the keyword, then title "..", x-axis ".." [".." , ..], y-axis
    ".." MIN --> MAX, line [numbers]."""
    lines = [line.strip() for line in source.strip().splitlines()]
    assert lines[0] == INIT and lines[1] == "xychart-beta"
    chart = {}
    for line in lines[2:]:
        if m := re.fullmatch(r'title "([^"\n]*)"', line):
            chart["title"] = m.group(1)
        elif m := re.fullmatch(r'x-axis "([^"\n]*)" \[((?:"[^"\n]*"(?:, )?)+)\]', line):
            chart["x title"] = m.group(1)
            chart["x"] = re.findall(r'"([^"]*)"', m.group(2))
        elif m := re.fullmatch(r'y-axis "([^"\n]*)" (-?[0-9.]+) --> (-?[0-9.]+)', line):
            chart["y"] = (float(m.group(2)), float(m.group(3)))
        elif m := re.fullmatch(r"line \[((?:-?[0-9.]+(?:, )?)+)\]", line):
            chart["line"] = [float(v) for v in m.group(1).split(", ")]
        else:
            raise AssertionError(f"not xychart-beta: {line!r}")
    assert len(chart["x"]) == len(chart["line"]) and set(chart) == {"title", "x title", "x", "y", "line"}
    return chart


def charts(markdown: str) -> list[str]:
    return re.findall(r"```mermaid\n(.*?)```", markdown, re.S)


def started(repo, name: str, when: str) -> None:
    """The result's date, as a run on that day would have written it."""
    data = json.loads((repo / f"{name}.json").read_text())
    data["metadata"]["startedAt"] = when
    write_json(repo / f"{name}.json", data)


@pytest.fixture
def history(repo):
    for k, failing in enumerate((0, 1, 0, 2, 1)):  # main-5 (oldest) .. main-1 (newest)
        assert results_of(repo, f"main{5 - k}", failing).code in (0, 1)
        started(repo, f"main{5 - k}", f"2026-11-0{k + 1}T09:30:00Z")
    return [f"main{i}.json" for i in range(1, 6)]  # newest first


def test_five_results_of_main_make_a_chart_this_pr_last(repo, history):
    out = results_of(repo, "pr", 3, *[a for f in history for a in ("--baseline", f)])
    found = charts((repo / "pr.md").read_text())
    assert len(found) == 2  # the pass rate and response_match_score's mean
    rate, metric = (parse_xychart(c) for c in found)
    assert rate["line"] == [1.0, 0.75, 1.0, 0.5, 0.75, 0.25]  # oldest first, this PR last
    # Main's results named by their dates here (no commit known; never by the file's name),
    # oldest first, said once.
    assert rate["x"] == ["2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04", "2026-11-05", "this PR"]
    assert rate["x title"] == "results of main, oldest to newest, then this PR" and rate["y"] == (0.0, 1.0)
    assert rate["title"] == "Suite pass rate: last 5 results of main, then this PR"  # punctuation kept
    assert metric["title"] == "response_match_score (mean): last 5 results of main, then this PR"
    assert "trend of main: Suite pass rate over 5 results: 1.00 0.75 1.00 0.50 0.75 -> this PR 0.25" \
        in out.output


def test_one_result_of_main_is_no_trend(repo, history):
    results_of(repo, "pr", 0, "--baseline", history[0])
    assert charts((repo / "pr.md").read_text()) == []


@pytest.mark.skipif(shutil.which("cmark-gfm") is None, reason="cmark-gfm not installed")
def test_cmark_gfm_passes_the_chart_through_as_a_mermaid_block(repo, history):
    results_of(repo, "pr", 1, *[a for f in history for a in ("--baseline", f)])
    html = subprocess.run(["cmark-gfm", "--unsafe", "-e", "table", "-e", "tagfilter"],
                          input=(repo / "pr.md").read_text(), capture_output=True, text=True,
                          check=True).stdout
    blocks = re.findall(r'<pre><code class="language-mermaid">(.*?)</code></pre>', html, re.S)
    assert len(blocks) == 2
    for block in blocks:
        parse_xychart(block.replace("&quot;", '"').replace("&gt;", ">"))


def _trend(*points: dict) -> list[dict]:
    return [{"passRate": 1.0, "metrics": {}, **p} for p in points]


def test_labels_by_commit_else_the_coarsest_date_that_tells_them_apart():
    here = Results(passed=True, summary=Summary())
    here.comparison = Comparison(baseline=BaselineInfo(history=[BaselineFile(path=f"h{i}.json") for i in (1, 2, 3)]))
    # Three results of one day: the minute tells them apart; a commit wins over a date.
    day = _trend({"date": "2026-11-03T09:30:05Z"}, {"date": "2026-11-03T11:02:00Z", "commit": "a" * 40},
                 {"date": "2026-11-03T14:45:59Z"})
    assert _labels(here, day) == ["11-03 09:30", "aaaaaaa", "11-03 14:45"]
    # One minute: the second; one second: numbered; no date (an older trend): the place, never "h1.json".
    assert _labels(here, _trend({"date": "2026-11-03T09:30:05Z"}, {"date": "2026-11-03T09:30:07Z"}, {})) == \
        ["11-03 09:30:05", "11-03 09:30:07", "#3"]
    assert _labels(here, _trend(*[{"date": "2026-11-03T09:30:05Z"}] * 3)) == \
        ["11-03 09:30:05", "11-03 09:30:05 (2)", "11-03 09:30:05 (3)"]
    assert _labels(here, _trend({"date": "2026-11-01T23:59:59+02:00"}, {"date": "not a date"}, {"date": 7})) == \
        ["2026-11-01", "#2", "#3"]
