"""Every chart the report can make, rendered by the real mermaid package (tools/mermaid) in
headless chromium, in GitHub's light and dark themes: no chart fails to render, titles keep
their punctuation, x labels name main's results (by short commit when known, else by date) oldest first and
say so once, and the line shows on either background (contrast at least 3:1, WCAG's figure
for graphics). The charts are taken from the markdown report as GitHub takes them (cmark-gfm).

Needs chromium (scripts/setup.d/40-render.sh installs it in CI) and mermaid
(scripts/setup.d/40-mermaid.sh); outside CI the test is skipped when they are missing."""

from __future__ import annotations

import json
import os
import re

import pytest

from checker.models.results import BaselineFile, Results
from checker.report.markdown import render_markdown
from checker.report.trend import LINE_COLOUR, X_TITLE, mermaid_charts
from corehelpers import call, case, evalset, invocation, replay, run_cli, write_json
from mermaid_render import THEMES, available, contrast, mermaid_blocks, render

if not available():
    if os.environ.get("CI") == "true":
        raise RuntimeError("chromium and mermaid are needed in CI: run scripts/setup")
    pytest.skip("chromium or mermaid not installed (scripts/setup.d/40-render.sh, 40-mermaid.sh)",
                allow_module_level=True)

CASES = ("c1", "c2", "c3", "c4")
GITHUB_PAGES = ("#ffffff", "#0d1117")  # GitHub's light and dark page backgrounds
# Main's results by date when no commit is known (never by the file's name), oldest first.
DATES = ["2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04", "2026-11-05", "this PR"]
COMMITS = [f"{n:x}" * 40 for n in range(10, 15)]  # newest first, as the Action records them


def results_of(repo, name: str, failing: int, criteria: dict, *args: str):
    tools = [call("get_weather", city="Paris")]
    write_json(repo / "evals/s.evalset.json", evalset("s", *[case(c, invocation("q", "right answer", tools))
                                                           for c in CASES]))
    write_json(repo / "evals/test_config.json", {"criteria": criteria})
    write_json(repo / f"{name}.runs.json", replay(*[
        ("s", c, n, [invocation("q", "wrong" if i < failing else "right answer", tools)])
        for i, c in enumerate(CASES) for n in (1, 2)]))
    done = run_cli(["run", "evals", "--replay", f"{name}.runs.json", "--results", f"{name}.json",
                    "--markdown", f"{name}.md", *args], repo)
    assert done.code in (0, 1), done.output
    return Results.model_validate(json.loads((repo / f"{name}.json").read_text()))


@pytest.fixture
def compared(repo) -> Results:
    """Five results of main, the two oldest without tool_trajectory_avg_score (its chart says
    "0 = not measured"), then this PR."""
    criteria = {"response_match_score": 0.9, "tool_trajectory_avg_score": 1.0}
    for k, failing in enumerate((0, 1, 0, 2, 1)):  # main5 (oldest) .. main1 (newest)
        results_of(repo, f"main{5 - k}", failing, criteria)
        data = json.loads((repo / f"main{5 - k}.json").read_text())
        data["metadata"]["startedAt"] = f"2026-11-0{k + 1}T09:30:00Z"  # run on five days
        write_json(repo / f"main{5 - k}.json", data)
    for older in ("main5.json", "main4.json"):  # as an evalcheck that did not score it wrote them
        data = json.loads((repo / older).read_text())
        for found in data["evalSets"][0]["cases"]:
            found["metrics"] = [m for m in found["metrics"] if m["name"] != "tool_trajectory_avg_score"]
        write_json(repo / older, data)
    history = [a for i in range(1, 6) for a in ("--baseline", f"main{i}.json")]
    return results_of(repo, "pr", 3, criteria, *history)


def with_commits(results: Results) -> Results:
    """As the Action records its automatic baseline: main's commits, newest first."""
    baseline = results.comparison.baseline.model_copy(
        update={"history": [BaselineFile(commit=c) for c in COMMITS]})
    return results.model_copy(update={"comparison": results.comparison.model_copy(update={"baseline": baseline})})


def hostile(results: Results) -> Results:
    """A metric name with what could end a Mermaid string, a code block or become markup
    (a custom metric's name is the repository's text)."""
    name = 'ev"il %%{init: {}}%% #quot; `` <b>b</b> ["x"] and a long tail past the cut'
    for eval_set in results.eval_sets:
        for found in eval_set.cases:
            for metric in found.metrics:
                if metric.name == "response_match_score":
                    metric.name = name
    trend = [{**p, "metrics": {name if k == "response_match_score" else k: v
                               for k, v in p["metrics"].items()}} for p in results.comparison.trend]
    return results.model_copy(update={"comparison": results.comparison.model_copy(update={"trend": trend})})


def check_rendered(charts: list[str], titles: list[str], labels: list[str]) -> None:
    drawn = render(charts)
    assert len(drawn) == len(charts) * len(THEMES)
    for chart in drawn:
        where = f"chart {chart['index']} in the {chart['theme']} theme"
        assert chart["error"] is None, f"{where}: {chart['error']}"
        assert chart["title"] == [titles[chart["index"]]], where
        assert chart["xLabels"] == labels and chart["xTitle"] == [X_TITLE], where
        assert chart["lines"] == [LINE_COLOUR], where
        assert chart["points"][0].count("L") == len(labels) - 1, where  # a point per label
        (background,) = chart["background"]
        for behind in (background, *GITHUB_PAGES):
            assert contrast(LINE_COLOUR, behind) >= 3, f"{where}: line on {behind}"
        assert contrast(chart["titleColour"][0], background) >= 4.5, where


def test_every_chart_of_the_report_renders_readably_in_both_themes(repo, compared):
    markdown = render_markdown(compared, fail_on="regression")
    charts = mermaid_blocks(markdown)
    assert [c.rstrip("\n") for c in charts] == mermaid_charts(compared) and len(charts) == 3
    titles = ["Suite pass rate: last 5 results of main, then this PR",
              "response_match_score (mean): last 5 results of main, then this PR",
              "tool_trajectory_avg_score (mean): last 5 results of main, then this PR (0 = not measured)"]
    labels = DATES
    check_rendered(charts, titles, labels)


def test_main_is_named_by_short_commits_oldest_first(repo, compared):
    charts = mermaid_blocks(render_markdown(with_commits(compared), fail_on="regression"))
    labels = [c[:7] for c in reversed(COMMITS)] + ["this PR"]
    assert labels[0] == "eeeeeee"  # the oldest: the last of the history
    titles = [re.search(r'title "(.*)"', c).group(1) for c in charts]
    check_rendered(charts, titles, labels)


def test_a_hostile_metric_name_stays_one_title(repo, compared):
    charts = mermaid_blocks(render_markdown(hostile(compared), fail_on="regression"))
    assert len(charts) == 3 and all(c.count("\n") == 6 for c in charts)  # nothing added a line
    # The name cut to 48 characters; the rest of the title is evalcheck's own.
    title = "ev'il % %{init: {}}% % # quot; '' \u2039b\u203ab\u2039/b\u203a ['x'] a\u2026 (mean): last 5 results of main, then this PR"
    titles = ["Suite pass rate: last 5 results of main, then this PR", title,
              "tool_trajectory_avg_score (mean): last 5 results of main, then this PR (0 = not measured)"]
    labels = DATES
    check_rendered(charts, titles, labels)


def test_the_html_reports_trend_table_names_main_by_date(repo, compared, tmp_path):
    from checker.report.html import render_html
    from checker.report.trend import trend_html
    from test_html_report import chromium, console_errors

    page = tmp_path / "report.html"
    page.write_text(re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "",
                           render_html(compared, trend=trend_html(compared))), encoding="utf-8")
    dom = chromium(page, "--dump-dom")
    assert console_errors(dom.stderr) == []
    head = re.search(r'<table class="trend"><thead><tr>(.*?)</tr>', dom.stdout).group(1)
    assert re.findall(r"<th>(.*?)</th>", head) == ["series", *DATES]
    assert ".json" not in head
