"""Bounded inputs (issue 11 item 5), through the real command line: caps on runs and
timeouts, deep JSON, NUL ids, unreadable folders - each a clear error, never a traceback."""

from __future__ import annotations

import pytest

from corehelpers import case, evalset, invocation, replay, run_cli, write_json

from checker.limits import MAX_RUNS, MAX_TURN_TIMEOUT


def assert_one_line_error(outcome, *fragments: str) -> str:
    assert outcome.code == 2, outcome.output
    assert "Traceback" not in outcome.output
    lines = outcome.stderr.strip().splitlines()
    assert len(lines) == 1, outcome.stderr
    for fragment in fragments:
        assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"
    return lines[0]


@pytest.fixture
def evals(repo):
    write_json(repo / "evals" / "s.evalset.json", evalset("s", case("c1")))
    write_json(repo / "runs.json", replay(("s", "c1", 1, [invocation()])))
    return repo


def test_num_runs_above_the_cap_is_a_clear_error(evals):
    outcome = run_cli(["run", "evals", "--agent-command", "true", "--num-runs", str(MAX_RUNS + 1)], evals)
    assert_one_line_error(outcome, f"num-runs is {MAX_RUNS + 1}", f"maximum of {MAX_RUNS}")


def test_num_runs_at_the_cap_is_accepted(evals):
    outcome = run_cli(["run", "evals", "--replay", "runs.json", "--num-runs", str(MAX_RUNS)], evals)
    assert outcome.code == 0, outcome.output


@pytest.mark.parametrize("value", ["nan", "inf", "1e300"])
def test_turn_timeout_must_be_finite(evals, value):
    outcome = run_cli(["run", "evals", "--agent-command", "true", "--turn-timeout", value], evals)
    assert outcome.code == 2, outcome.output
    assert "Traceback" not in outcome.output
    assert "turn-timeout" in outcome.output


def test_turn_timeout_cap_is_a_day(evals):
    outcome = run_cli(["run", "evals", "--agent-command", "true",
                       "--turn-timeout", str(MAX_TURN_TIMEOUT + 1)], evals)
    assert_one_line_error(outcome, "turn-timeout", f"maximum of {MAX_TURN_TIMEOUT:g} s")


# ------------------------------------------------------------------ case lines (item 7)

def test_case_lines_with_escapes_and_decoys(repo):
    """One pass over the file finds each id however it is escaped, skipping an earlier
    mention of the same text as another key's value, and keeps file order for the rest."""
    from checker.evalfile import load_eval_file

    text = ('{"eval_set_id": "s", "eval_cases": [\n'
            '  {"eval_id": "\\u0063afe", "conversation": [{"invocation_id": "i",\n'
            '    "user_content": {"role": "user", "parts": [{"text": "eval_id: second"}]}}]},\n'
            '  {"eval_id":\n"second", "conversation": []},\n'
            '  {"eval_id": "third", "conversation": []}\n]}\n')
    path = repo / "s.evalset.json"
    path.write_text(text, encoding="utf-8")
    assert load_eval_file(path).case_lines == {"cafe": 2, "second": 4, "third": 6}
