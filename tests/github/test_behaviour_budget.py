"""The behaviour diffs within the comment's size: a 500-case suite, 50 cases regressed (a
tool call replaced, the answer rewritten at length), scored by the CLI against three results
of main. The comment and the check run's summary each stay within GitHub's limit and show
every one of the 50 diffs (the passing rows and the eval files' explanations go first); a
tighter limit drops the last diffs and says how many."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))

from checker.action.github.publish import COMMENT_LIMIT, PublishOptions, marker, render_body  # noqa: E402
from checker.models.results import Results  # noqa: E402
from checker.report.markdown import render_within  # noqa: E402
from checker.report.text import utf16_len  # noqa: E402
from corehelpers import call, case, evalset, invocation, replay, run_cli, write_json  # noqa: E402
from test_github_report import TARGET  # noqa: E402

CASES, RUNS = 500, 5
BROKEN = set(range(0, CASES, 10))  # 50 cases
ANSWER = ("The weather in {city} today is sunny with a light breeze from the west and a high of "
          "twenty one degrees; expect clear skies tonight with a low of twelve.")
# The rewritten answer: 150 words, most of them new (a diff is cut to its first 60 words).
REWRITE = "I could not reach the weather service for {city}, so " + " ".join(f"filler{i}" for i in range(140))


def turns(i: int, broken: bool) -> list[dict]:
    city = f"City{i:03d}"
    tools = [call("lookup_city", place=city), call("search_web" if broken else "get_weather", city=city),
             call("get_forecast", city=city, days=1)]
    return [invocation(f"Weather in {city}?", (REWRITE if broken else ANSWER).format(city=city), tools)]


@pytest.fixture(scope="module")
def compared(tmp_path_factory) -> Results:
    repo = tmp_path_factory.mktemp("suite")
    (repo / ".git").mkdir()
    write_json(repo / "evals/big.evalset.json", evalset("big", *[case(f"case_{i:03d}", *turns(i, False))
                                                               for i in range(CASES)]))
    write_json(repo / "evals/test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0,
                                                              "response_match_score": 0.8}})
    for name, broken in (("main", set()), ("pr", BROKEN)):
        write_json(repo / f"{name}.runs.json", replay(*[("big", f"case_{i:03d}", n, turns(i, i in broken))
                                                      for i in range(CASES) for n in range(1, RUNS + 1)]), indent=None)
    done = run_cli(["run", "evals", "--replay", "main.runs.json", "--num-runs", str(RUNS), "--results", "main1.json"], repo)
    assert done.code == 0, done.output
    for k in (2, 3):  # three results of main, alike (the same commit's suite run three times)
        shutil.copy(repo / "main1.json", repo / f"main{k}.json")
    done = run_cli(["run", "evals", "--replay", "pr.runs.json", "--num-runs", str(RUNS), "--results", "pr.json",
                    "--fail-on", "regression", *[a for k in (1, 2, 3) for a in ("--baseline", f"main{k}.json")]], repo)
    assert done.code == 1, done.output
    return Results.model_validate(json.loads((repo / "pr.json").read_text()))


def diffs(text: str) -> list[str]:
    return re.findall(r"<summary>🔀 <b>(case_\d+)</b> \(big, regressed\): first divergence at turn 1, call 2</summary>"
                      r".*?</details>", text, re.S)


def test_every_regressed_case_has_a_diff_and_no_other_case_has_one(compared):
    cases = [c for s in compared.eval_sets for c in s.cases]
    assert compared.comparison.summary.regressed == 50
    assert sorted(c.eval_id for c in cases if c.behaviour is not None) == \
        sorted(f"case_{i:03d}" for i in BROKEN)


def test_all_50_diffs_fit_the_comment(compared):
    """(The check run's summary is rendered the same way, within 65,535.)"""
    options = PublishOptions(fail_on="regression")
    body = render_body(compared, TARGET, options, COMMENT_LIMIT, prefix=marker("default") + "\n")
    assert utf16_len(body) <= COMMENT_LIMIT
    shown = diffs(body)
    assert sorted(shown) == sorted(f"case_{i:03d}" for i in BROKEN)
    for found in re.findall(r"<summary>🔀 .*?</details>", body, re.S):
        assert "| **➜ 1 · 2** | `search_web(city=" not in found  # main's side is left
        assert re.search(r'\| \*\*➜ 1 · 2\*\* \| `get_weather\(city="City\d+"\)` \| `search_web\(city="City\d+"\)` \|', found)
        assert "<del>" in found and "<ins>" in found and "more words)*" in found  # cut to 60 words
    assert "the behaviour diff of" not in body


def test_a_tighter_limit_drops_the_last_diffs_and_says_so(compared):
    text, omitted = render_within(compared, 30_000, utf16_len, extra={"fail_on": "regression"})
    assert utf16_len(text) <= 30_000
    left_out = next(o for o in omitted if o.startswith("the behaviour diff of "))
    n = int(re.search(r"of (\d+) cases", left_out).group(1))
    assert 0 < n < 50 and len(diffs(text)) == 50 - n
    assert "the explanation of 50 failing cases" in omitted  # those go first
    assert "Left out to fit: " in text and left_out in text
