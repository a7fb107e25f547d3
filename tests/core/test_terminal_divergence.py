"""The terminal says where a failing tool trajectory first diverged, in one line per failing
turn (``expected get_weather(city="Oslo") at call 2, got no call``), in every run mode."""

from __future__ import annotations

from checker.report.differences import divergence
from corehelpers import call, case, evalset, invocation, replay, run_cli, write_json

OSLO, ROME = call("get_weather", city="Oslo"), call("get_weather", city="Rome")


def test_a_missing_call_a_wrong_call_and_an_extra_call_in_words(repo):
    turns = [invocation("q1", tools=[ROME, OSLO]), invocation("q2", tools=[ROME]),
             invocation("q3", tools=[ROME]), invocation("q4", tools=[OSLO])]
    write_json(repo / "e/s.evalset.json", evalset("s", case("trip", *turns)))
    write_json(repo / "e/test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})
    actual = [invocation("q1", tools=[ROME]), invocation("q2", tools=[OSLO]),
              invocation("q3", tools=[ROME, call("get_weather", city="Bergen")]),
              invocation("q4", tools=[OSLO])]
    write_json(repo / "runs.json", replay(("s", "trip", 1, actual)))
    out = run_cli(["run", "e", "--replay", "runs.json"], repo)
    assert out.code == 1, out.output
    lines = out.stdout.splitlines()
    at = lines.index("e/s.evalset.json:5 trip: tool_trajectory_avg_score 0.25 < 1.00")
    assert lines[at + 1:at + 4] == [
        '    run 1, turn 1: expected get_weather(city="Oslo") at call 2, got no call',
        '    run 1, turn 2: expected get_weather(city="Rome") at call 1, got get_weather(city="Oslo")',
        '    run 1, turn 3: expected no further call at call 2, got get_weather(city="Bergen")']
    assert "turn 4" not in out.stdout  # a passing turn is not mentioned


def test_more_failing_turns_than_lines_point_to_the_report(repo):
    turns = [invocation(f"q{n}", tools=[OSLO]) for n in range(5)]
    write_json(repo / "e/s.evalset.json", evalset("s", case("c", *turns)))
    write_json(repo / "runs.json", replay(("s", "c", 1, [invocation(f"q{n}", tools=[]) for n in range(5)])))
    out = run_cli(["run", "e", "--replay", "runs.json"], repo)
    assert out.stdout.count("got no call") == 3
    assert "    ... more in the markdown report" in out.stdout


def test_untrusted_call_text_stays_on_one_line():
    inv = {"firstDivergence": 0, "listedFrom": 0, "actual": [],
           "expected": [{"name": "f", "args": {"q": "a\nb\x1b[31m"}}]}
    assert divergence(inv) == 'expected f(q="a\\nb\\u001b[31m") at call 1, got no call'
    assert divergence({"firstDivergence": None}) is None
    assert divergence({"firstDivergence": 3, "expected": [], "actual": []}) is None
