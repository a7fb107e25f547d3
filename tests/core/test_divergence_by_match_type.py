"""A failing tool trajectory is explained as its match type counts it (issue 40): under
ANY_ORDER and IN_ORDER the missing and the extra calls are named (the new user's case:
ANY_ORDER names ``get_forecast`` as missing, not "expected currency_agent at call 1"
although currency_agent was called); under IN_ORDER a call made but not in order is said so;
under EXACT the first differing call, as before. In the terminal, the markdown report and
the HTML report, end to end through the CLI."""

from __future__ import annotations

import re

import pytest

from checker.metrics.tool_trajectory_avg_score import MatchType, unmatched_calls
from checker.models.evalset import FunctionCall
from corehelpers import call, case, evalset, invocation, replay, run_cli, write_json

CURRENCY = call("currency_agent", request="EUR to USD")
FORECAST = call("get_forecast", city="Lisbon")
HOTELS = call("find_hotels", city="Lisbon")
EXPECTED = [CURRENCY, FORECAST]
ACTUAL = [HOTELS, CURRENCY]  # currency_agent was called, second; get_forecast never


def run_with(repo, match_type: str, expected: list[dict], actual: list[dict]):
    write_json(repo / "e/s.evalset.json", evalset("s", case("lisbon_usd", invocation("q", "ok", expected))))
    write_json(repo / "e/test_config.json", {"criteria": {"tool_trajectory_avg_score": {
        "threshold": 1.0, "match_type": match_type}}})
    write_json(repo / "runs.json", replay(("s", "lisbon_usd", 1, [invocation("q", "ok", actual)])))
    out = run_cli(["run", "e", "--replay", "runs.json", "--markdown", "r.md", "--html", "r.html"], repo)
    assert out.code == 1, out.output
    return out.stdout, (repo / "r.md").read_text(), (repo / "r.html").read_text()


def explanation_md(markdown: str) -> str:
    return markdown[markdown.index("**tool\\_trajectory\\_avg\\_score** scored"):markdown.index("</details>",
                                                                                          markdown.index("### Why"))]


def test_any_order_names_the_missing_call_not_a_position(repo):
    stdout, markdown, page = run_with(repo, "ANY_ORDER", EXPECTED, ACTUAL)
    assert ('    run 1, turn 1: missing get_forecast(city="Lisbon"); extra find_hotels(city="Lisbon")'
            in stdout.splitlines()), stdout
    assert "at call 1" not in stdout and "expected currency_agent" not in stdout
    shown = explanation_md(markdown)
    assert "; ANY\\_ORDER: 1 expected call not matched:" in shown
    assert "- missing: `get_forecast(city=\"Lisbon\")`" in shown
    assert "- extra: `find_hotels(city=\"Lisbon\")` (ANY\\_ORDER allows extra calls)" in shown
    assert "first divergence" not in shown and "➜" not in shown
    assert "| 1 | `currency_agent(request=\"EUR to USD\")` | `find_hotels(city=\"Lisbon\")` *(extra)* |" in shown
    assert "| 2 | `get_forecast(city=\"Lisbon\")` *(missing)* | `currency_agent(request=\"EUR to USD\")` |" in shown
    evidence = page[page.index('<div class="evidence trajectory">'):]
    evidence = evidence[:evidence.index("</table>")]
    assert "Missing: <code>get_forecast(city=&quot;Lisbon&quot;)</code>" in evidence
    assert "Extra (ANY_ORDER allows extra calls): <code>find_hotels(city=&quot;Lisbon&quot;)</code>" in evidence
    assert "first divergence" not in evidence
    assert re.search(r"<tr class=\"differs\"><td>2</td><td><code>get_forecast.*?</td><td>missing</td></tr>",
                     evidence), evidence


def test_in_order_names_the_missing_call_and_the_call_out_of_order(repo):
    # get_forecast then currency_agent expected in that order; both called, the wrong way round.
    stdout, markdown, page = run_with(repo, "IN_ORDER", [FORECAST, CURRENCY, call("book_hotel", city="Lisbon")],
                                      [CURRENCY, FORECAST, HOTELS])
    line = next(x for x in stdout.splitlines() if x.startswith("    run 1, turn 1: "))
    assert line == ('    run 1, turn 1: missing book_hotel(city="Lisbon"); out of order '
                    'currency_agent(request="EUR to USD"); extra find_hotels(city="Lisbon")'), line
    shown = explanation_md(markdown)
    assert "; IN\\_ORDER: 2 expected calls not matched:" in shown
    assert "- missing: `book_hotel(city=\"Lisbon\")`" in shown
    assert "- out of order: `currency_agent(request=\"EUR to USD\")` (called, not after the calls before it)" in shown
    assert "- extra: `find_hotels(city=\"Lisbon\")` (IN\\_ORDER allows extra calls)" in shown
    assert "Out of order (called, not after the calls before it): <code>currency_agent" in page


def test_exact_keeps_the_first_differing_call(repo):
    stdout, markdown, page = run_with(repo, "EXACT", EXPECTED, ACTUAL)
    assert ('    run 1, turn 1: expected currency_agent(request="EUR to USD") at call 1, got '
            'find_hotels(city="Lisbon")') in stdout.splitlines(), stdout
    shown = explanation_md(markdown)
    assert "; first divergence at call 1:" in shown and "missing:" not in shown
    assert "| **➜ 1** | `currency_agent(request=\"EUR to USD\")` | `find_hotels(city=\"Lisbon\")` |" in shown
    assert '<tr class="divergence"><td>1</td>' in page and "Missing:" not in page


def test_a_results_file_of_an_older_evalcheck_is_still_explained_by_position(repo):
    """Details without ``missing``/``extra`` (written before): the first divergence, as before."""
    from checker.report.differences import terminal_notes

    inv = {"score": 0.0, "firstDivergence": 0, "listedFrom": 0, "expected": [CURRENCY], "actual": [HOTELS]}
    assert terminal_notes("tool_trajectory_avg_score", [inv], 1.0) == [
        'turn 1: expected currency_agent(request="EUR to USD") at call 1, got find_hotels(city="Lisbon")']


def f(name: str, **args) -> FunctionCall:
    return FunctionCall(name=name, args=args)


@pytest.mark.parametrize("match_type, expected, actual, missing, extra, moved", [
    # ANY_ORDER is multiset inclusion: a second expected "a" needs a second actual "a".
    (MatchType.ANY_ORDER, ["a", "a", "b"], ["a", "c", "b"], [1], [1], None),
    (MatchType.ANY_ORDER, ["a", "b"], ["b", "a"], [], [], None),
    # IN_ORDER: the longest common subsequence is matched; what is left of expected is
    # missing, or out of order when an equal call was made elsewhere.
    (MatchType.IN_ORDER, ["a", "b", "c"], ["b", "a", "x"], [2], [2], [1]),
    (MatchType.IN_ORDER, ["a", "b", "c"], ["a", "x", "c"], [1], [1], []),
    (MatchType.IN_ORDER, ["a", "b"], ["x", "a", "y", "b"], [], [0, 2], []),
])
def test_unmatched_calls_pinned(match_type, expected, actual, missing, extra, moved):
    found = unmatched_calls([f(n) for n in actual], [f(n) for n in expected], match_type, ignore_args=False)
    assert [c["index"] for c in found["missing"]] == missing and found["missingCount"] == len(missing)
    assert [c["index"] for c in found["extra"]] == extra
    if moved is None:  # ANY_ORDER has no order to be out of
        assert "outOfOrder" not in found
    else:
        assert [c["index"] for c in found["outOfOrder"]] == moved


def test_arguments_count_unless_ignored():
    found = unmatched_calls([f("get", city="Oslo")], [f("get", city="Rome")], MatchType.ANY_ORDER, False)
    assert (found["missingCount"], found["extraCount"]) == (1, 1)
    found = unmatched_calls([f("get", city="Oslo")], [f("get", city="Rome")], MatchType.ANY_ORDER, True)
    assert (found["missingCount"], found["extraCount"]) == (0, 0)
