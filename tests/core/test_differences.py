"""Failure details a reader could not work out alone: an empty reference, differences that
are invisible on screen (Unicode normalisation, whitespace, zero-width characters), and
only the failing turns - in the markdown report and on the terminal."""

from __future__ import annotations

import unicodedata

import pytest

from checker.report.differences import difference_note, escape_code_points, invisible_difference
from corehelpers import case, evalset, invocation, replay, run_cli, write_json

NFC = unicodedata.normalize("NFC", "caf\u00e9 cr\u00e8me")
NFD = unicodedata.normalize("NFD", NFC)


@pytest.mark.parametrize(("expected", "actual", "reasons"), [
    (NFC, NFD, ["Unicode normalisation"]),
    ("Oslo", "Oslo\u200b", ["invisible characters"]),
    ("Oslo", "\ufeffOslo", ["invisible characters"]),
    ("a b", "a  b", ["whitespace"]),
    ("a b", "a\u00a0b", ["whitespace"]),  # NBSP: whitespace, and NFKC folds it too
    ("a b", "a\tb\n", ["whitespace"]),
    (NFC + " x", NFD + "  x\u200b", ["Unicode normalisation", "whitespace", "invisible characters"]),
])
def test_invisible_differences_are_named(expected, actual, reasons):
    assert invisible_difference(expected, actual) == reasons


@pytest.mark.parametrize(("expected", "actual"), [("same", "same"), ("Oslo", "Bergen"),
                                                  ("Oslo", "oslo")])
def test_equal_or_visibly_different_texts_get_no_note(expected, actual):
    assert invisible_difference(expected, actual) is None
    assert difference_note(expected, actual) is None


def test_code_points_are_escaped_where_they_differ():
    note = difference_note(NFC, NFD)
    assert note == ('the texts differ only in Unicode normalisation: expected "caf\\u00e9 cr\\u00e8me", '
                    'got "cafe\\u0301 cre\\u0300me"')
    assert escape_code_points("a  b ") == "a\\u0020\\u0020b\\u0020"
    assert escape_code_points("x\\y\t\U0001F600") == "x\\\\y\\t\\U0001f600"


def test_long_texts_show_a_window_around_the_first_difference():
    note = difference_note("x" * 100 + "Oslo" + "y" * 100, "x" * 100 + "Oslo\u200b" + "y" * 100)
    assert note is not None and "\u2026" + "x" * 20 + "Oslo\\u200byyy" in note and len(note) < 200


def report(repo, expected_texts, actual_texts, threshold=0.9):
    invs = [invocation(f"q{k}", text, invocation_id=f"i{k}") for k, text in enumerate(expected_texts)]
    write_json(repo / "evals/s.evalset.json", evalset("s", case("c1", *invs)))
    write_json(repo / "evals/test_config.json", {"criteria": {"response_match_score": threshold}})
    runs = [invocation(f"q{k}", text, invocation_id=f"i{k}") for k, text in enumerate(actual_texts)]
    write_json(repo / "runs.json", replay(("s", "c1", 1, runs)))
    out = run_cli(["run", "evals", "--replay", "runs.json", "--markdown", "r.md"], repo)
    assert out.code == 1, out.output
    return out.stdout, (repo / "r.md").read_text(encoding="utf-8")


def test_empty_reference_is_explained_and_only_the_failing_turn_is_listed(repo):
    terminal, markdown = report(repo, ["The weather in Oslo is sunny", ""],
                                ["The weather in Oslo is sunny", "It is sunny"])
    why = markdown.split("### Why cases did not pass")[1]
    assert "no reference text: ROUGE-1 is 0, as in ADK" in why
    assert "turn 2" in why and "turn 1" not in why  # the passing turn is not listed
    assert "Expected:" not in why  # no empty block
    assert "turn 2: no reference text: ROUGE-1 is 0, as in ADK" in terminal


def test_an_invisible_difference_is_shown_escaped(repo):
    # A soft hyphen splits a word for ROUGE-1 but is not drawn: the texts look the same.
    terminal, markdown = report(repo, ["Oslo: sunny"], ["Oslo: sun\u00adny"])
    assert "differ only in invisible characters" in markdown
    assert 'got "Oslo: sun\\\\u00adny"' in markdown  # the backslash escaped for markdown
    assert ('turn 1: the texts differ only in invisible characters: expected "Oslo: sunny", '
            'got "Oslo: sun\\u00adny"') in terminal


def test_a_trajectory_row_differing_in_normalisation_shows_the_code_points(repo):
    want = {"name": "get_weather", "args": {"city": "Z\u00fcrich"}}
    got = {"name": "get_weather", "args": {"city": "Zu\u0308rich"}}
    write_json(repo / "evals/s.evalset.json",
               evalset("s", case("c1", invocation("q", "ok", tools=[want]))))
    write_json(repo / "runs.json", replay(("s", "c1", 1, [invocation("q", "ok", tools=[got])])))
    out = run_cli(["run", "evals", "--replay", "runs.json", "--markdown", "r.md"], repo)
    assert out.code == 1, out.output
    note = ('the calls at position 1 differ only in Unicode normalisation: '
            'expected "get_weather(city="Z\\u00fcrich")", got "get_weather(city="Zu\\u0308rich")"')
    assert "turn 1: " + note in out.stdout
    markdown = (repo / "r.md").read_text(encoding="utf-8")
    assert "Z\\\\u00fcrich" in markdown and "Zu\\\\u0308rich" in markdown


def test_f1_lists_only_the_turns_below_the_threshold(repo):
    from corehelpers import call

    expected = [invocation("q1", "ok", tools=[call("a"), call("b"), call("c"), call("d")], invocation_id="i1"),
                invocation("q2", "ok", tools=[call("a"), call("b")], invocation_id="i2")]
    actual = [invocation("q1", "ok", tools=[call("a"), call("b"), call("c")], invocation_id="i1"),
              invocation("q2", "ok", tools=[call("x")], invocation_id="i2")]
    write_json(repo / "evals/s.evalset.json", evalset("s", case("c1", *expected)))
    write_json(repo / "evals/test_config.json", {"criteria": {"tool_trajectory_f1": 0.8}})
    write_json(repo / "runs.json", replay(("s", "c1", 1, actual)))
    out = run_cli(["run", "evals", "--replay", "runs.json", "--markdown", "r.md"], repo)
    assert out.code == 1, out.output  # turn 1: F1 0.86 passes the bar, turn 2: 0 fails it
    why = (repo / "r.md").read_text(encoding="utf-8").split("### Why cases did not pass")[1]
    assert "turn 2" in why and "turn 1" not in why
