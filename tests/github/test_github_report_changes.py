"""The PR comment against a baseline: what changed leads, problems first, passing collapsed."""

from __future__ import annotations

import re
from pathlib import Path

from checker.action.github.publish import COMMENT_LIMIT
from checker.models.results import Results
from checker.report.markdown import Links, render_markdown
from checker.report.text import utf16_len
from github_data import compared_results, realistic_results
from test_github_report import TARGET, assert_snapshot, comment, to_html

SNAPSHOT = Path(__file__).parent / "snapshots" / "comment-compared.md"
PROBLEMS = ["weather\\_07", "booking\\_03", "concierge\\_new\\_refund"]


def first_screen(markdown: str) -> str:
    """What a reader sees before expanding anything or scrolling past the problems."""
    return markdown.split("### Why cases did not pass")[0]


def test_compared_comment_snapshot(compared):
    assert_snapshot(comment(compared), SNAPSHOT)


def test_the_comment_leads_with_what_changed(compared):
    lines = comment(compared).splitlines()
    assert lines[3] == ("**1 regression**, 2 improvements, 1 flaky, 1 new, 1 changed, 2 removed — "
                        "compared with `main` at [abc1234](https://github.com/octo/agents/commit/"
                        "abc1234def5678abc1234def5678abc1234def56) (merge base).")


def test_the_three_problems_come_first_and_the_57_passing_cases_are_collapsed(compared):
    text = comment(compared)
    top = first_screen(text)
    assert [p for p in PROBLEMS if p in top] == PROBLEMS  # regression, then flaky, then new... per set
    assert top.count("| [") == 3  # three rows, nothing else
    html = to_html(text)
    # every passing case sits inside a closed <details>, one per eval set, with its counts
    outside = re.sub(r"<details>.*?</details>", "", html, flags=re.S)
    assert "weather_00" not in outside and "booking_11" not in outside
    assert "<b>weather</b>: 24 passing cases (23 unchanged, 1 improved)" in html
    assert "<b>concierge</b>: 14 passing cases (13 unchanged, 1 changed)" in html


def test_labels_deltas_and_noise_are_shown(compared):
    text = comment(compared)
    row = next(x for x in text.splitlines() if "[weather\\_07]" in x)
    assert "📉 regressed" in row and "❌ 0.00 (-1.00)" in row
    flaky = next(x for x in text.splitlines() if "[booking\\_03]" in x)
    # k/N with its Wilson 95% interval (2/3 -> 0.21-0.94), the baseline's k/N, and the drop
    # that the exact test cannot tell from noise, with its p-value
    assert "🎲 flaky 2/3 <sub>95% CI 0.21–0.94; baseline 3/3</sub>" in flaky
    assert "✅ 0.83 (-0.17) <sub>0.50–1.00 · within noise, p of the pass rate 0.50</sub>" in flaky
    assert "| unchanged |" in flaky
    assert "🆕 new" in next(x for x in text.splitlines() if "concierge\\_new\\_refund]" in x)
    assert "📈 improved" in next(x for x in text.splitlines() if "[booking\\_11]" in x)
    assert "✏️ changed" in next(x for x in text.splitlines() if "[concierge\\_04]" in x)


def test_removed_cases_suite_deltas_and_footer(compared):
    text = comment(compared)
    assert "**Removed since the baseline** (2): `concierge / concierge_09`, `weather / old_<b>@octocat`." in text
    assert "| tool\\_trajectory\\_avg\\_score | 25 | -0.02 | -0.06 to +0.00 | 25/25 (0.87–1.00) | 24/25 (0.80–0.99) |" in text
    footer = text.rstrip().splitlines()[-1]
    assert "verdict rule `mean`" in footer and "baseline `main` at [abc1234]" in footer
    html = to_html(text)
    assert "<b>@" not in html and "old_&lt;b&gt;@octocat" in html


def test_baseline_behind_the_merge_base_and_a_file_baseline():
    data = compared_results()
    data["comparison"]["baseline"]["commitsBehind"] = 3
    assert "at [abc1234](" in comment(Results.model_validate(data))
    assert "(3 commits behind the merge base)." in comment(Results.model_validate(data))
    data["comparison"]["baseline"] = {"path": "base/results.json"}  # evalcheck compare, --baseline
    assert "— compared with `base/results.json`." in comment(Results.model_validate(data))


def test_without_a_baseline_failing_and_flaky_come_first_and_a_note_says_why():
    data = realistic_results()
    flaky = data["evalSets"][1]["cases"][1]  # booking/cancel: passes, one run of two fails
    flaky["flaky"] = True
    flaky["metrics"][0]["runs"] = [1.0, 0.7]
    data["metadata"] = {"baselineNotes": ["no baseline: no unexpired artifact named 'evalcheck-results'"]}
    text = comment(Results.model_validate(data))
    assert text.splitlines()[3] == "**1 flaky** · not compared with a baseline (see the note below)."
    top = first_screen(text)
    assert "| Change |" not in top
    assert "🎲 flaky 1/2 <sub>95% CI 0.09–0.91</sub>" in top and "paris\\_today" not in top
    assert "> - no baseline: no unexpired artifact named 'evalcheck-results'" in text
    assert "baseline" not in text.rstrip().splitlines()[-1]  # footer: no baseline claimed


def test_a_500_case_suite_with_3_problems_shows_them_on_the_first_screen():
    data = compared_results()
    weather = data["evalSets"][0]
    template = weather["cases"][0]
    weather["cases"] += [dict(template, evalId=f"weather_bulk_{i:03d}", line=400 + i) for i in range(440)]
    results = Results.model_validate(data)
    assert sum(len(s.cases) for s in results.eval_sets) == 500
    text = comment(results)
    assert utf16_len(text) <= COMMENT_LIMIT
    head = text[:2500]  # the first screen: headline and the problem rows
    assert all(p in head for p in PROBLEMS)
    links = Links(run_url=TARGET.run_url, blob_base=TARGET.blob_base)
    assert utf16_len(render_markdown(results, extra={"links": links})) > COMMENT_LIMIT  # so rows were cut
    assert ("weather** (agents/weather/weather.evalset.json): 464 passing cases (463 unchanged, "
            "1 improved), not listed to fit.") in text.replace("\\_", "_")
    assert "Left out to fit: the table rows of 497 passing cases." in text
