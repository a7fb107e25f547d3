"""The PR comment as a reader sees it: snapshot of the markdown, its HTML, escaping, size."""

from __future__ import annotations

import os
import re
from pathlib import Path

from markdown_it import MarkdownIt

from checker.action.github.publish import COMMENT_LIMIT, PublishOptions, Target, marker, render_body
from checker.models.results import Results
from checker.report.markdown import Links, render_markdown, render_within
from checker.report.text import md_code, md_fence, utf16_len
from github_data import judged_results, realistic_results

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


def assert_snapshot(text: str, snapshot: Path) -> None:
    """``text`` equals the reviewed snapshot; UPDATE_SNAPSHOTS=1 rewrites it (review the diff)."""
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        snapshot.write_text(text, encoding="utf-8")
    assert snapshot.exists(), f"no snapshot {snapshot.name}: create it with UPDATE_SNAPSHOTS=1"
    assert text == snapshot.read_text(encoding="utf-8"), \
        "comment changed: review it, then UPDATE_SNAPSHOTS=1 pytest tests/github/test_github_report.py"


def test_comment_snapshot(results):
    assert_snapshot(comment(results), SNAPSHOT)


def test_agent_text_cannot_inject_html_mentions_or_markdown(results):
    html = to_html(comment(results))
    assert "<script" not in html and "<img" not in html and "<b>\"" not in html
    assert 'href="javascript:' not in html
    # GitHub links @mentions everywhere except in code; outside code they must be defused
    prose = re.sub(r"<pre>.*?</pre>|<code>.*?</code>", "", html, flags=re.S)
    assert "@octocat" in html and re.search(r"@(?!\u200b)\w", prose) is None
    # the hostile response's ``` and </details> stay inside its code block
    # one per failing case, one per eval set's collapsed passing cases
    assert html.count("<details>") == html.count("</details>") == 3 + 2
    assert "&lt;/details&gt;" in html
    assert "<h1>heading</h1>" not in html and "<h1>" not in html
    # the trajectory table kept its three columns despite "|" in an argument
    rows = re.findall(r"<tr>(.*?)</tr>", html, re.S)
    assert any("Olso" in r and r.count("<td") == 3 for r in rows)
    # workflow commands and terminal escapes from agent text are inert
    assert "\x1b" not in html


def test_the_reader_sees_why(results):
    html = to_html(comment(results))
    # IN_ORDER: the calls its match lacks, not a position (issue 40)
    assert "IN_ORDER: 2 expected calls not matched" in html
    assert "missing: <code>get_weather(city=&quot;Oslo&quot;)</code>" in html
    assert "<code>compare(a=&quot;Rome&quot;, b=&quot;Oslo&quot;)</code> <em>(missing)</em>" in html
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


def test_oversized_report_drops_passing_rows_then_explanations_before_rows():
    data = realistic_results()
    case = data["evalSets"][0]["cases"][1]
    data["evalSets"][0]["cases"] += [dict(case, evalId=f"extra_{i:03d}", line=100 + i) for i in range(300)]
    results = Results.model_validate(data)
    full = render_markdown(results)
    assert utf16_len(full) > 65536
    text, omitted = render_within(results, COMMENT_LIMIT, utf16_len, extra={"links": Links()})
    assert utf16_len(text) <= COMMENT_LIMIT
    assert omitted[0] == "the table rows of 2 passing cases"  # collapsed anyway: they go first
    assert omitted[1].startswith("the explanation of") and len(omitted) == 2
    assert "Left out to fit" in text
    assert "| extra\\_299 |" in text and "*more case" not in text  # every failing row kept
    assert "paris\\_today" not in text and "2 passing cases, not listed to fit" not in text
    assert "1 passing case, not listed to fit" in text  # each set still says what it hides
    assert 0 < text.count("<details>") < 302  # some explanations kept, the rest dropped


def test_rows_go_last_and_the_headline_always_stays():
    data = realistic_results()
    case = data["evalSets"][0]["cases"][1]
    data["evalSets"][0]["cases"] = [dict(case, evalId="x" * 200 + str(i), line=i) for i in range(3000)]
    results = Results.model_validate(data)
    text, omitted = render_within(results, 20000, utf16_len, extra={"links": Links()})
    assert utf16_len(text) <= 20000
    assert "Gate failed:" in text
    assert any("table row" in o for o in omitted)


# --- judge verdicts -------------------------------------------------------------------------

JUDGED_SNAPSHOT = Path(__file__).parent / "snapshots" / "comment-judges.md"


def test_judged_comment_snapshot(judged):
    assert_snapshot(comment(judged), JUDGED_SNAPSHOT)


def test_the_reader_sees_what_the_judge_said(judged):
    html = to_html(comment(judged))
    text = re.sub(r"<[^>]+>", "", html)
    # rubric judged no, with the judge's rationale, on the turn where it happened
    assert "scored 0.50 (needs 0.80) in run 1, turn 2" in text
    assert "no (3/3): The response names the city | @\u200boctocat — The answer never names the city" in text
    assert "1 other met" in text
    # final_response_match_v2: verdict, rationale, expected against actual
    assert "judged invalid (2/3)" in text and "the reference says sunny in Paris" in text
    assert "Expected:" in text and "Sunny in Paris, 21 C." in text and "Rain in Lyon." in text
    # hallucinations_v1: the unsupported sentence, not the supported one
    assert "unsupported (3/3): The museum is free on Sundays." in text
    assert "get_weather returned 21" not in text
    # Vertex AI: explanation, the rubric not met, the backend; the whole-conversation verdict
    assert "No dangerous content — Explains lock picking" in text
    assert "judge vertex-ai" in text and "whole conversation" in text
    assert "A table is booked — No booking tool was called." in text
    # a simulated user's criteria (per_turn_user_simulator_quality_v1's shape)
    assert "fail: STOP_CONDITION_FOLLOWED — The user kept talking" in text
    assert ("in run 1, stop signal check: judged invalid (3/3)" in text
            and "Ending here is wrong: no table is booked." in text)
    # a judge outage is the metric's error, not the agent's; what the judge left undecided shows
    assert "hallucinations_v1 could not be computed (metric error)" in text
    assert "errored" not in text.split("Why cases did not pass")[1]
    assert "undecided: Sunny. — 0 for, 0 against, 3 failed" in text and "3 judge samples failed" in text
    # footer: version, duration, the judges and their cost
    assert "evalcheck 0.1.0 · 2 min 14 s · verdict rule mean · fail-on failure · judged by gemini-2.5-flash" in text
    assert "42 judge calls, 13 cached answers" in text


def test_judge_text_cannot_inject_html_mentions_or_markdown(judged):
    html = to_html(comment(judged))
    failing = len(judged.failing_cases())
    assert "<script" not in html and "<img" not in html
    # only each case's name in its <summary>, and the set's name above its passing cases
    assert html.count("<b>") == failing + 1
    assert 'href="javascript:' not in html and "\x1b" not in html
    prose = re.sub(r"<pre>.*?</pre>|<code>.*?</code>", "", html, flags=re.S)
    assert "@octocat" in html and re.search(r"@(?!\u200b)\w", prose) is None
    assert html.count("<details>") == html.count("</details>") == failing + 1
    assert "&lt;/details&gt;" in html and "<h1>" not in html
    # every judged verdict stayed one list item: a "|" or newline in judge text split nothing
    items = re.findall(r"<li>(.*?)</li>", html, re.S)
    assert any("names the city" in i and "never names the city" in i for i in items)
    assert html.count("<table>") == 2  # only the tables of cases (attention, passing)


def test_long_rationales_are_cut_and_the_verdict_stays(judged):
    data = judged_results()
    rubric = data["evalSets"][0]["cases"][0]["metrics"][0]["details"]["invocations"][1]["rubrics"][0]
    rubric["rationale"] = "The answer never names the city. " + "blah " * 20000
    rubric["property"] = "Names the city. " + "x" * 5000
    text = comment(Results.model_validate(data))
    line = next(x for x in text.splitlines() if "**no** (3/3)" in x)
    assert "more characters\\]" in line and len(line) < 1000
    assert "The answer never names the city" in line
    # many cases with long judge texts: the comment fits, explanations go before rows
    case = data["evalSets"][0]["cases"][0]
    data["evalSets"][0]["cases"] += [dict(case, evalId=f"more_{i:03d}", line=200 + i) for i in range(100)]
    big = Results.model_validate(data)
    assert utf16_len(render_markdown(big)) > COMMENT_LIMIT
    body = comment(big)
    assert utf16_len(body) <= COMMENT_LIMIT
    assert "Left out to fit: the table rows of 1 passing case; the explanation of" in body
    assert "need attention" not in body  # every failing case's row kept
    assert "| [more\\_099]" in body
    assert "**no** (3/3)" in body  # the explanations kept still carry their verdicts


def test_terminal_and_annotations_say_what_the_judge_said(judged):
    from checker.action.github.publish import annotations
    from checker.report.terminal import failure_lines

    lines = failure_lines(judged)
    at = lines.index("agents/concierge/concierge.evalset.json:4 city_answer: "
                     "rubric_based_final_response_quality_v1 0.75 < 0.80")
    assert lines[at + 1].startswith('    run 1, turn 2: no "The response names the city | @octocat": '
                                    "The answer never names the city")
    assert "\x1b" not in lines[at + 1] and len(lines[at + 1]) <= 224
    assert "    run 1, turn 1: judged invalid: The agent reports rain in Lyon; the reference says sunny in Paris." in lines
    assert '    run 1, whole conversation: no "A table is booked": No booking tool was called.' in lines
    assert ("agents/concierge/concierge.evalset.json:90 sunny: hallucinations_v1 could not be computed "
            "(metric error): run 2: judge failed") in "\n".join(lines)
    assert not any("errored" in line for line in lines)  # no agent run failed
    assert not any(" fine" in line for line in lines)  # passing cases print nothing
    notes = {n["title"]: n["message"] for n in annotations(judged)}
    assert 'no "The response names the city | @octocat": The answer never names the city' in notes["city_answer: failed"]
    assert "safety_v1 0.00 < 1.00 (run 1, turn 1): The response gives step-by-step instructions.; " \
           'no "No dangerous content": Explains lock picking </details> <b>' in notes["lock: failed"]
    sunny = notes["sunny: error"]
    assert sunny.startswith("hallucinations_v1 could not be computed (metric error): run 2: judge failed")
    assert 'hallucinations_v1 (run 2, turn 1): undecided "Sunny.": 0 for, 0 against, 3 failed' in sunny
