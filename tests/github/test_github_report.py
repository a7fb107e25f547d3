"""The PR comment as a reader sees it: snapshot of the markdown, its HTML, escaping, size."""

from __future__ import annotations

import os
import re
from pathlib import Path

from markdown_it import MarkdownIt

from checker.github.publish import COMMENT_LIMIT, PublishOptions, Target, marker, render_body
from checker.models.results import Results
from checker.report.markdown import Links, render_markdown, render_within
from checker.report.text import md_code, md_fence, utf16_len
from conftest import realistic_results

SNAPSHOT = Path(__file__).parent / "snapshots" / "comment.md"
SHA = "a" * 40
TARGET = Target(owner="octo", repo="agents", sha=SHA, pr_number=7,
                run_url="https://github.com/octo/agents/actions/runs/4242",
                blob_base=f"https://github.com/octo/agents/blob/{SHA}")


def comment(results: Results) -> str:
    return render_body(results, TARGET, PublishOptions(), COMMENT_LIMIT, prefix=marker("default") + "\n")


def to_html(markdown: str) -> str:
    # GitHub-like: CommonMark + tables + strikethrough, raw HTML passed through (GitHub
    # sanitises it afterwards; we must not depend on that for agent text).
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).render(markdown)


def test_comment_snapshot(results):
    text = comment(results)
    if os.environ.get("UPDATE_SNAPSHOTS") == "1" or not SNAPSHOT.exists():
        SNAPSHOT.write_text(text, encoding="utf-8")
    assert text == SNAPSHOT.read_text(encoding="utf-8"), \
        "comment changed: review it, then UPDATE_SNAPSHOTS=1 pytest tests/github/test_github_report.py"


def test_agent_text_cannot_inject_html_mentions_or_markdown(results):
    html = to_html(comment(results))
    assert "<script" not in html and "<img" not in html and "<b>\"" not in html
    assert 'href="javascript:' not in html
    # GitHub links @mentions everywhere except in code; outside code they must be defused
    prose = re.sub(r"<pre>.*?</pre>|<code>.*?</code>", "", html, flags=re.S)
    assert "@octocat" in html and re.search(r"@(?!\u200b)\w", prose) is None
    # the hostile response's ``` and </details> stay inside its code block
    assert html.count("<details>") == html.count("</details>") == 3  # one per failing case
    assert "&lt;/details&gt;" in html
    assert "<h1>heading</h1>" not in html and "<h1>" not in html
    # the trajectory table kept its three columns despite "|" in an argument
    rows = re.findall(r"<tr>(.*?)</tr>", html, re.S)
    assert any("Olso" in r and r.count("<td") == 3 for r in rows)
    # workflow commands and terminal escapes from agent text are inert
    assert "\x1b" not in html


def test_the_reader_sees_why(results):
    html = to_html(comment(results))
    assert "first divergence at call 2" in html
    assert "<strong>➜ 2</strong>" in html
    assert "missing: <code>book_table(people=4)</code>" in html
    assert "KeyError: 'OPENWEATHER_KEY'" in html
    assert 'href="https://github.com/octo/agents/actions/runs/4242"' in html
    assert f'href="https://github.com/octo/agents/blob/{SHA}/agents/weather/weather.evalset.json#L22"' in html
    assert "Failing metrics:" in html


def test_code_span_and_fence_cannot_be_closed():
    for nasty in ["a`b", "``", "` x `", "|pipe|", "```"]:
        span = md_code(nasty)
        html = to_html(f"| h |\n|---|\n| {span} |\n")
        assert html.count("<td>") == 1 and "<code>" in html
    html = to_html(md_fence("before\n````\n# not a heading\n```") + "\n\n# after\n")
    assert html.count("<pre>") == 1 and "<h1>after</h1>" in html and "<h1>not" not in html


def test_oversized_report_drops_explanations_before_rows():
    data = realistic_results()
    case = data["evalSets"][0]["cases"][1]
    data["evalSets"][0]["cases"] += [dict(case, evalId=f"extra_{i:03d}", line=100 + i) for i in range(300)]
    results = Results.model_validate(data)
    full = render_markdown(results)
    assert utf16_len(full) > 65536
    text, omitted = render_within(results, COMMENT_LIMIT, utf16_len, extra={"links": Links()})
    assert utf16_len(text) <= COMMENT_LIMIT
    assert omitted and omitted[0].startswith("the explanation of")
    assert "Left out to fit" in text
    assert "| extra\\_299 |" in text and "*more case" not in text  # every row kept
    assert 0 < text.count("<details>") < 302  # some explanations kept, the rest dropped


def test_rows_go_last_and_the_headline_always_stays():
    data = realistic_results()
    case = data["evalSets"][0]["cases"][1]
    data["evalSets"][0]["cases"] = [dict(case, evalId="x" * 200 + str(i), line=i) for i in range(3000)]
    results = Results.model_validate(data)
    text, omitted = render_within(results, 20000, utf16_len, extra={"links": Links()})
    assert utf16_len(text) <= 20000
    assert "Agent evaluation failed" in text
    assert any("table row" in o for o in omitted)
