"""What the agent does differently, end to end through the CLI (replayed runs, three results
of main pooled): a case whose tool trajectory changed shows main's usual calls beside this
PR's with the first divergence at the right turn and call; a case whose answer changed shows
the same calls and the answers as a word diff; a case whose eval data changed is shown against main's newest
result; a flaky or unchanged case whose runs vary as noise shows nothing. In the results file (``behaviour``), the markdown
report and the HTML report; the agent's text stays text in both."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from checker.compare.behaviour import first_divergence
from checker.models.behaviour import TrajectoryTurn
from checker.report.behaviour import word_diff
from corehelpers import call, case, evalset, invocation, replay, run_cli, write_json

RUNS = 4
LOOKUP, WEATHER, FORECAST = call("lookup_city", place="Paris"), call("get_weather", city="Paris"), \
    call("get_forecast", city="Paris", days=1)
SEARCH = call("search_web", q="Paris weather")
ANSWER = "It is sunny in Paris today."
# The agent's text on both sides: markup and mentions kept by both, dropped by the PR, added.
HOSTILE_MAIN = "It is <b>bold</b> @octocat </details> <i>sunny</i> in Paris today."
HOSTILE = ("It is <b>bold</b> @octocat </details> <script>alert(1)</script> `x` | <img src=x onerror=alert(1)> "
           "[link](https://evil.example) in Paris today.")


def turn(query: str, answer: str, tools: list[dict]) -> dict:
    return invocation(query, answer, tools)


def main_turns(eval_id: str) -> list[dict]:
    if eval_id == "hostile":
        return [turn("Weather in Paris?", HOSTILE_MAIN, [LOOKUP, WEATHER, FORECAST])]
    if eval_id == "multi":
        return [turn("Where?", "Paris.", [LOOKUP]), turn("Weather?", ANSWER, [FORECAST])]
    return [turn("Weather in Paris?", ANSWER, [LOOKUP, WEATHER, FORECAST])]


def pr_turns(eval_id: str, run: int) -> list[dict]:
    if eval_id == "traj":
        return [turn("Weather in Paris?", ANSWER, [LOOKUP, SEARCH, FORECAST])]
    if eval_id == "multi":
        return [turn("Where?", "Paris.", [LOOKUP]), turn("Weather?", ANSWER, [])]
    if eval_id == "answer":
        return [turn("Weather in Paris?", "It is rainy in Paris today.", [LOOKUP, WEATHER, FORECAST])]
    if eval_id == "hostile":
        return [turn("Weather in Paris?", HOSTILE, [LOOKUP, WEATHER, FORECAST])]
    if eval_id == "flaky" and run % 2 == 0:
        return [turn("Weather in Paris?", ANSWER, [LOOKUP, SEARCH, FORECAST])]
    if eval_id == "renamed":
        return [turn("Weather in Paris, please?", ANSWER, [LOOKUP, SEARCH, FORECAST])]
    return main_turns(eval_id)


CASES = ("traj", "multi", "answer", "hostile", "flaky", "renamed", "same")


def write_suite(repo, renamed_query: str) -> None:
    cases = []
    for eval_id in CASES:
        turns = main_turns(eval_id)
        if eval_id == "renamed":
            turns = [turn(renamed_query, ANSWER, [LOOKUP, WEATHER, FORECAST])]
        cases.append(case(eval_id, *turns))
    write_json(repo / "evals/w.evalset.json", evalset("w", *cases))
    write_json(repo / "evals/test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0,
                                                              "response_match_score": 0.9}})


@pytest.fixture
def compared(repo):
    write_suite(repo, "Weather in Paris?")
    write_json(repo / "main.runs.json", replay(*[("w", c, n, main_turns(c)) for c in CASES
                                                 for n in range(1, RUNS + 1)]))
    for k in (1, 2, 3):
        done = run_cli(["run", "evals", "--replay", "main.runs.json", "--num-runs", str(RUNS),
                        "--results", f"main{k}.json"], repo)
        assert done.code == 0, done.output
    write_suite(repo, "Weather in Paris, please?")  # the PR changed this case's eval data
    write_json(repo / "pr.runs.json", replay(*[("w", c, n, pr_turns(c, n)) for c in CASES
                                               for n in range(1, RUNS + 1)]))
    done = run_cli(["run", "evals", "--replay", "pr.runs.json", "--num-runs", str(RUNS), "--results",
                    "pr.json", "--markdown", "pr.md", "--html", "pr.html", "--fail-on", "regression",
                    *[a for k in (1, 2, 3) for a in ("--baseline", f"main{k}.json")]], repo)
    assert done.code == 1, done.output
    data = json.loads((repo / "pr.json").read_text())
    cases = {c["evalId"]: c for c in data["evalSets"][0]["cases"]}
    return cases, (repo / "pr.md").read_text(), (repo / "pr.html").read_text()


def diff_of(markdown: str, eval_id: str) -> str:
    found = re.search(rf"<details>\n<summary>🔀 <b>{eval_id}</b> .*?</details>", markdown, re.S)
    assert found, f"no behaviour diff for {eval_id}"
    return found.group(0)


def html_case(page: str, eval_id: str) -> str:
    start = page.index(f'<summary><code>{eval_id}</code>')
    return page[start:page.index("</details>", page.index("<h4>Runs</h4>", start))]


def test_labels_the_cases_compared(compared):
    cases, _, _ = compared
    assert {k: (c["change"], c["flaky"]) for k, c in cases.items()} == {
        "traj": ("regressed", False), "multi": ("regressed", False), "answer": ("regressed", False),
        "hostile": ("regressed", False), "flaky": ("unchanged", True), "renamed": ("changed", False),
        "same": ("unchanged", False)}
    # Every case keeps its trajectories; only the unchanged, steady one has no behaviour.
    assert all(c["trajectories"] for c in cases.values())
    assert "behaviour" not in cases["same"]


def test_a_changed_trajectory_is_shown_with_its_first_divergence(compared):
    cases, markdown, page = compared
    b = cases["traj"]["behaviour"]
    assert b["firstDivergence"] == {"turn": 1, "call": 2}
    assert b["runs"] == {"baseline": 12, "here": 4}
    assert b["baseline"]["runs"] == {"baseline": 12, "here": 0} and b["here"]["runs"] == {"baseline": 0, "here": 4}
    assert [c["name"] for c in b["baseline"]["turns"][0]["calls"]] == ["lookup_city", "get_weather", "get_forecast"]
    assert [c["name"] for c in b["here"]["turns"][0]["calls"]] == ["lookup_city", "search_web", "get_forecast"]
    shown = diff_of(markdown, "traj")
    assert "(w, regressed): first divergence at turn 1, call 2</summary>" in shown
    assert "Main's usual trajectory: 12 of 12 runs of main, 0 of 4 runs here. This PR's: 4 of 4 runs here, 0 of 12 runs of main." in shown
    assert "| 1 · 1 | `lookup_city(place=\"Paris\")` | `lookup_city(place=\"Paris\")` |" in shown
    assert "| **➜ 1 · 2** | `get_weather(city=\"Paris\")` | `search_web(q=\"Paris weather\")` |" in shown
    assert "Answer," not in shown  # the same answer: no word diff
    row = re.search(r'<tr class="divergence">(.*?)</tr>', html_case(page, "traj"), re.S).group(1)
    assert "1 \u00b7 2" in row and "get_weather" in row and "search_web" in row and "first divergence" in row
    # The second turn of a two-turn case: main called get_forecast, the PR called nothing.
    assert cases["multi"]["behaviour"]["firstDivergence"] == {"turn": 2, "call": 1}
    assert "| **➜ 2 · 1** | `get_forecast(city=\"Paris\", days=1)` | *(no call)* |" in diff_of(markdown, "multi")


def test_a_changed_answer_is_a_word_diff(compared):
    cases, markdown, page = compared
    b = cases["answer"]["behaviour"]
    assert b["firstDivergence"] is None and b["here"]["turns"][0]["response"] == "It is rainy in Paris today."
    shown = diff_of(markdown, "answer")
    assert "(w, regressed): same tool calls; the answer differs</summary>" in shown
    assert ("Same tool calls on both sides, main's usual trajectory (12 of 12 runs of main, 4 of 4 runs "
            "here): `lookup_city(place=\"Paris\")`, `get_weather(city=\"Paris\")`, "
            "`get_forecast(city=\"Paris\", days=1)`.") in shown
    assert "Answer, turn 1 (main → this PR): It is <del>sunny</del> <ins>rainy</ins> in Paris today." in shown
    assert "It is <del>sunny</del> <ins>rainy</ins> in Paris today." in html_case(page, "answer")


def test_a_flaky_case_whose_runs_vary_within_noise_gets_no_diff(compared):
    """Half its runs took a call main did not make, half main's usual trajectory: no call in
    most runs of one side and few of the other's, no other most common trajectory."""
    cases, markdown, page = compared
    assert "behaviour" not in cases["flaky"]
    assert "🔀 <b>flaky</b>" not in markdown
    assert "Behaviour against main" not in html_case(page, "flaky")


def test_shift_pinned():
    """Beyond noise: main's most common trajectory is not the PR's (no tie on either side), or
    a call in more than half the runs of one side and at most a quarter of the other's."""
    from checker.compare.behaviour import shift

    def counted(*sides: tuple[int, list[str]]) -> dict:
        return {",".join(names): (runs, [TrajectoryTurn(calls=[{"name": n, "args": {}} for n in names])])
                for runs, names in sides}

    # The new user's case: currency_agent in 2 of 3 runs of main, 0 of 23 here; book_hotel in
    # 1 of 3 of main is not few (1/3 > 1/4), but the most common trajectories differ.
    moved = shift(counted((2, ["currency_agent"]), (1, ["book_hotel"])), counted((23, ["book_hotel"])), 3, 23)
    assert moved.usual and [(c.call["name"], c.runs.baseline, c.runs.here) for c in moved.calls] == [
        ("currency_agent", 2, 0)]
    # Half and half here, all main's usual on main: a tie here, 2/4 is not "most", 2/4 not "few".
    assert shift(counted((12, ["a", "b"])), counted((2, ["a", "b"]), (2, ["a", "c"])), 12, 4) is None
    # 3 of 4 here: c in 0.75 > 0.5 of the PR's runs, 0 of main's; b in 0.25 here, 12/12 on main.
    moved = shift(counted((12, ["a", "b"])), counted((1, ["a", "b"]), (3, ["a", "c"])), 12, 4)
    assert moved.usual and {(c.call["name"], c.runs.baseline, c.runs.here) for c in moved.calls} == {
        ("c", 0, 3), ("b", 12, 1)}
    # "a" in 2 of 3 on main, 1 of 3 here: 1/3 is not few; but main's most common is "a", the
    # PR's "x" (2 of 3): that alone is a change.
    moved = shift(counted((2, ["a"]), (1, ["x"])), counted((1, ["a"]), (2, ["x"])), 3, 3)
    assert moved.usual and moved.calls == []
    # Ties on main (1 and 1): no usual to compare; "x" in 1 of 2 of main is not few.
    assert shift(counted((1, ["a"]), (1, ["x"])), counted((3, ["x"])), 2, 3) is None
    # The same behaviour: nothing.
    assert shift(counted((3, ["a"])), counted((5, ["a"])), 3, 5) is None


def test_a_case_whose_eval_data_changed_is_shown_against_mains_newest(compared):
    cases, markdown, _ = compared
    b = cases["renamed"]["behaviour"]
    assert b["runs"] == {"baseline": 4, "here": 4}  # not pooled: main's newest result only
    assert b["firstDivergence"] == {"turn": 1, "call": 2}
    assert "(w, changed, behaviour changed): first divergence at turn 1, call 2" in diff_of(markdown, "renamed")


def test_nothing_for_an_unchanged_case(compared):
    _, markdown, page = compared
    section = markdown[markdown.index("### What the agent does differently"):markdown.index("### Why cases did not pass")]
    assert section.count("<summary>🔀") == 5 and "<b>same</b>" not in section
    assert "Behaviour against main" not in html_case(page, "same")
    assert page.count("<h4>Behaviour against main") == 5


def test_the_agents_text_stays_text(compared):
    _, markdown, page = compared
    shown = diff_of(markdown, "hostile")
    assert "<del>&lt;i&gt;sunny&lt;/i&gt;</del>" in shown and "&lt;script&gt;" in shown
    assert "It is &lt;b&gt;bold&lt;/b&gt; @\u200boctocat &lt;/details&gt;" in shown  # kept by both
    for markup in ("<script>", "<img", "<b>", "<i>", "@octocat"):
        assert markup not in shown.split("</summary>")[1], markup
    assert "</details>" not in shown[:-len("</details>")]  # only its own closing tag
    block = html_case(page, "hostile")
    for markup in ("<script>", "<img", "<b>", "<i>"):
        assert markup not in block.split("<h4>Why it did not pass")[0], markup
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in block and "<del>&lt;i&gt;sunny&lt;/i&gt;</del>" in block
    if shutil.which("cmark-gfm"):  # as GitHub parses the comment
        rendered = subprocess.run(["cmark-gfm", "--unsafe", "-e", "table", "-e", "strikethrough", "-e", "autolink",
                                   "-e", "tagfilter"], input=markdown, capture_output=True, text=True, check=True).stdout
        # A bare URL is autolinked as GitHub does, to itself; never a link under other words.
        assert "<script>" not in rendered and "<img" not in rendered and ">link</a>" not in rendered
        assert len(re.findall(r"<details[ >]", rendered)) == rendered.count("</details>")


def test_first_divergence_and_word_diff_pinned():
    def t(*names: str, response: str = "") -> TrajectoryTurn:
        return TrajectoryTurn(calls=[{"name": n, "args": {}} for n in names], response=response)

    assert first_divergence([t("a", "b")], [t("a", "b")]) is None
    assert first_divergence([t("a", "b")], [t("a", "c")]).model_dump() == {"turn": 1, "call": 2}
    assert first_divergence([t("a")], [t("a", "b")]).model_dump() == {"turn": 1, "call": 2}
    assert first_divergence([t("a"), t("b")], [t("a"), t()]).model_dump() == {"turn": 2, "call": 1}
    assert first_divergence([t("a")], [t("a"), t("b")]).model_dump() == {"turn": 2, "call": 1}
    diff = word_diff("one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen",
                     "one two three four five six seven eight NINE ten eleven twelve thirteen fourteen fifteen sixteen",
                     context=2)
    assert diff.parts == [("\u2026", ""), ("=", "seven eight"), ("-", "nine"), ("+", "NINE"),
                          ("=", "ten eleven"), ("\u2026", "")]
    cut = word_diff("a", "b c d e f", limit=3)
    assert cut.parts == [("-", "a"), ("+", "b c")] and cut.words_hidden == 3


def test_runs_are_summarised_by_their_calls_errored_runs_left_out():
    from checker.models.records import RecordedRun
    from checker.models.behaviour import MAX_ARGS
    from checker.scoring.trajectories import summarise

    def run(n: int, tools: list[dict], answer: str = ANSWER, error: str | None = None) -> RecordedRun:
        return RecordedRun.model_validate({"evalSetId": "w", "evalId": "c", "run": n, "error": error,
                                           "invocations": [] if error else [turn("q", answer, tools)]})

    found = summarise([run(3, [LOOKUP, SEARCH]), run(1, [LOOKUP, WEATHER]), run(2, [LOOKUP, SEARCH], "other words"),
                       run(4, [], error="agent crashed")])
    assert [t.runs for t in found] == [[2, 3], [1]]  # most common first; the errored run took none
    assert found[0].turns[0].response == "other words"  # the answers of its first run
    assert summarise([run(1, [], error="boom")]) is None
    big = summarise([run(1, [call("search", q="x" * 2000)])])[0].turns[0].calls[0]
    assert big["name"] == "search" and len(next(iter(big["args"].values()))) < MAX_ARGS + 40
