"""The terminal's last line is always the gate's decision with its rule, in one form for every
``--fail-on`` rule ("gate passed (fail-on: RULE): what decided it"), and agrees with the exit
status; the line before it counts the cases and carries no verdict of its own. Run, compare
and merge end alike; a failed token gate fails the last line too."""

from __future__ import annotations

import re

import pytest

from corehelpers import case, evalset, invocation, replay, run_cli, write_json

LAST = re.compile(r"gate (passed|failed) \(fail-on: (failure|regression|drop|error|never)\): \S.*")
COUNTS = re.compile(r"\d+ eval cases? in \d+ eval sets?( in [0-9.]+ s)?: \d+ passed, \d+ failed, \d+ errored.*")
CASES = ("steady", "breaks", "broken")


def results_of(repo, name: str, wrong: set[str], *args: str, errored: bool = False):
    """Five runs a case; the cases in ``wrong`` answer wrongly; ``errored``: steady's 2nd run errors."""
    write_json(repo / "evals/s.evalset.json", evalset("s", *[case(c, invocation("q", "right answer"))
                                                           for c in CASES]))
    write_json(repo / "evals/test_config.json", {"criteria": {"response_match_score": 0.9}})
    runs = []
    for c in CASES:
        for n in range(1, 6):
            if errored and c == "steady" and n == 2:
                runs.append({"evalSetId": "s", "evalId": c, "run": n, "invocations": [], "error": "agent crashed"})
            else:
                runs.append(("s", c, n, [invocation("q", "wrong" if c in wrong else "right answer")]))
    write_json(repo / f"{name}.runs.json", replay(*runs))
    return run_cli(["run", "evals", "--replay", f"{name}.runs.json", "--results", f"{name}.json",
                    "--num-runs", "5", *args], repo)


def ending(out) -> tuple[str, str]:
    lines = out.stdout.splitlines()
    return lines[-2], lines[-1]


def check(out, rule: str, passed: bool) -> str:
    counts, last = ending(out)
    assert LAST.fullmatch(last), last
    assert last.startswith(f"gate {'passed' if passed else 'failed'} (fail-on: {rule}): "), last
    assert out.code == (0 if passed else 1), out.output
    assert COUNTS.fullmatch(counts), counts
    assert "FAILED" not in counts and "PASSED" not in counts
    return last


@pytest.mark.parametrize("rule, passed, says", [
    ("failure", False, "1 of 3 cases did not pass"),
    ("error", True, "no run or metric errored; 1 of 3 cases did not pass"),
    ("never", True, "1 of 3 cases did not pass (advisory)"),
    ("regression", False, "1 of 3 cases did not pass (no baseline to compare with: gated on failure)"),
    ("drop", False, "1 of 3 cases did not pass (no baseline to compare with: gated on failure)"),
])
def test_without_a_baseline_every_rule_ends_with_its_decision(repo, rule, passed, says):
    out = results_of(repo, "pr", {"broken"}, "--fail-on", rule)
    assert check(out, rule, passed).endswith(f"): {says}")


def test_errors_are_counted_in_the_error_rules_line(repo):
    out = results_of(repo, "pr", set(), "--fail-on", "error", errored=True)
    assert check(out, "error", False) == "gate failed (fail-on: error): 1 run errored; 1 of 3 cases did not pass"


@pytest.mark.parametrize("rule", ["failure", "error", "never", "regression", "drop"])
def test_all_passing_every_rule_passes(repo, rule):
    out = results_of(repo, "pr", set(), "--fail-on", rule)
    last = check(out, rule, True)
    assert last.endswith("all 3 cases passed" + (" (advisory)" if rule == "never" else "")
                         + (" (no baseline to compare with: gated on failure)" if rule in ("regression", "drop") else ""))


@pytest.mark.parametrize("rule, passed", [("regression", False), ("drop", False), ("failure", False),
                                          ("error", True), ("never", True)])
def test_against_a_baseline_every_rule_ends_with_its_decision(repo, rule, passed):
    results_of(repo, "main", {"broken"})
    out = results_of(repo, "pr", {"broken", "breaks"}, "--baseline", "main.json", "--fail-on", rule)
    last = check(out, rule, passed)
    if rule in ("regression", "drop"):
        assert last == f"gate failed (fail-on: {rule}): 1 case regressed (breaks); 1 case fails, as on main"


def test_a_gate_that_passes_with_failing_cases_says_so_last(repo):
    """The issue's example: failing cases, as on main, and the regression gate passes (exit 0)."""
    results_of(repo, "main", {"broken"})
    out = results_of(repo, "pr", {"broken"}, "--baseline", "main.json", "--fail-on", "regression")
    last = check(out, "regression", True)
    assert last == "gate passed (fail-on: regression): no regression; 1 case fails, as on main"
    assert ending(out)[0].endswith(": 2 passed, 1 failed, 0 errored")


def test_compare_and_merge_end_the_same_way(repo):
    results_of(repo, "main", {"broken"})
    results_of(repo, "pr", {"broken", "breaks"}, "--inference-out", "pr.inference.json")
    compared = run_cli(["compare", "main.json", "pr.json", "--fail-on", "regression"], repo)
    assert check(compared, "regression", False) == \
        "gate failed (fail-on: regression): 1 case regressed (breaks); 1 case fails, as on main"
    for i in (1, 2):
        run_cli(["run", "evals", "--replay", "pr.runs.json", "--num-runs", "5", "--shard", f"{i}/2",
                 "--results", f"s{i}.json"], repo)
    merged = run_cli(["merge", "s1.json", "s2.json", "--baseline", "main.json", "--fail-on", "never"], repo)
    assert check(merged, "never", True).startswith("gate passed (fail-on: never): 2 of 3 cases did not pass")


def test_a_failed_token_gate_fails_the_last_line(repo):
    """--max-token-increase fails the job whatever fail-on says: the last line says so."""
    def turn(prompt: int) -> dict:
        inv = invocation("q", "right answer")
        inv["intermediate_data"] = {"invocation_events": [
            {"author": "agent", "usage_metadata": {"prompt_token_count": prompt, "candidates_token_count": 20}}]}
        return inv

    write_json(repo / "evals/s.evalset.json", evalset("s", case("c1", invocation("q", "right answer"))))
    write_json(repo / "evals/test_config.json", {"criteria": {"response_match_score": 0.9}})
    for name, prompt in (("main", 100), ("pr", 340)):
        write_json(repo / f"{name}.runs.json", replay(*[("s", "c1", n, [turn(prompt)]) for n in (1, 2)]))
    run_cli(["run", "evals", "--replay", "main.runs.json", "--results", "main.json"], repo)
    out = run_cli(["run", "evals", "--replay", "pr.runs.json", "--baseline", "main.json",
                   "--fail-on", "regression", "--max-token-increase", "150"], repo)
    last = check(out, "regression", False)
    assert last == ("gate failed (fail-on: regression): no regression; token gate failed: 1 case used "
                    "more than 150% more agent tokens per run than on main: s/c1 (+200%)")
