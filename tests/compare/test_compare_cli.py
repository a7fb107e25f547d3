"""`evalcheck compare` and `evalcheck run --baseline/--verdict/--fail-on`, end to end (replay)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corehelpers import call, case, evalset, invocation, replay, run_cli, write_json

RIGHT = invocation("Weather in Paris?", "Sunny", [call("get_weather", city="Paris")])
WRONG = invocation("Weather in Paris?", "Rain", [call("get_weather", city="Lyon")])


def setup(repo: Path) -> None:
    write_json(repo / "evals" / "w.evalset.json",
               evalset("w", case("steady", RIGHT), case("breaks", RIGHT), case("broken", RIGHT)))
    write_json(repo / "evals" / "test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})


def record(repo: Path, name: str, outcomes: dict[str, list[bool]]) -> Path:
    runs = [("w", eval_id, n, [RIGHT if ok else WRONG])
            for eval_id, oks in outcomes.items() for n, ok in enumerate(oks, start=1)]
    return write_json(repo / f"{name}.replay.json", replay(*runs))


def run(repo: Path, name: str, outcomes: dict[str, list[bool]], *extra: str):
    record(repo, name, outcomes)
    return run_cli(["run", "evals", "--replay", f"{name}.replay.json",
                    "--results", f"{name}.json", *extra], repo)


MAIN = {"steady": [True] * 3, "breaks": [True] * 3, "broken": [False] * 3}


def test_compare_cli_end_to_end(repo):
    setup(repo)
    assert run(repo, "base", MAIN).code == 1  # "broken" fails on main already
    run(repo, "head", {**MAIN, "breaks": [False] * 3})
    out = run_cli(["compare", "base.json", "head.json", "--results", "cmp.json",
                   "--junit", "cmp.xml", "--markdown", "cmp.md", "--fail-on", "regression"], repo)
    assert out.code == 1, out.output
    assert ("breaks [regressed]: tool_trajectory_avg_score 0.00 < 1.00 (baseline 1.00, p of the pass rate 0.05, "
            "every run the same on each side)") in out.stdout
    assert "compared with baseline base.json: 1 regressed, 0 improved, 2 unchanged" in out.stdout
    # compare ran nothing: the head file's own run time is not said as the comparison's
    assert out.stdout.splitlines()[-2:] == ["3 eval cases in 1 eval set: 1 passed, 2 failed, 0 errored",
                                            "gate failed (fail-on: regression): 1 case regressed (breaks); "
                                            "1 case fails, as on main"]
    data = json.loads((repo / "cmp.json").read_text())
    cases = {c["evalId"]: c for c in data["evalSets"][0]["cases"]}
    assert cases["breaks"]["change"] == "regressed" and cases["broken"]["change"] == "unchanged"
    trajectory = cases["breaks"]["metrics"][0]
    assert (trajectory["baselineScore"], trajectory["delta"]) == (1.0, -1.0)
    assert abs(trajectory["pValue"] - 0.05) < 1e-12
    assert data["comparison"]["summary"] == {"regressed": 1, "improved": 0, "unchanged": 2,
                                             "new": 0, "changed": 0, "removed": 0}
    assert data["comparison"]["baseline"] == {"path": "base.json"}
    assert cases["breaks"]["fingerprint"].startswith("sha256:")
    assert "regressed" in (repo / "cmp.xml").read_text()


def test_old_failures_do_not_fail_the_regression_gate(repo):
    setup(repo)
    run(repo, "base", MAIN)
    out = run(repo, "head", MAIN, "--baseline", "base.json", "--fail-on", "regression")
    assert out.code == 0, out.output
    assert "gate passed (fail-on: regression)" in out.stdout
    # the plain gate still fails on the old failure
    assert run(repo, "head2", MAIN, "--baseline", "base.json").code == 1


def test_flaky_case_is_labelled_not_regressed(repo):
    setup(repo)
    run(repo, "base", MAIN)
    out = run(repo, "head", {**MAIN, "breaks": [True, False, True]}, "--baseline", "base.json",
              "--fail-on", "regression", "--verdict", "majority")
    assert out.code == 0, out.output
    assert ("breaks [flaky 2/3 runs passed, baseline 3/3]: passed; tool_trajectory_avg_score "
            "0.67 (baseline 1.00, p of the pass rate 0.5, within noise)") in out.stdout
    data = json.loads((repo / "head.json").read_text())
    assert data["verdictRule"] == "majority"
    breaks = [c for c in data["evalSets"][0]["cases"] if c["evalId"] == "breaks"][0]
    assert breaks["flaky"] is True and breaks["change"] == "unchanged"
    assert abs(breaks["metrics"][0]["pValue"] - 0.5) < 1e-12
    assert breaks["metrics"][0]["baselineRuns"] == [1.0, 1.0, 1.0]


def test_regression_without_baseline_gates_on_failure_and_says_so(repo):
    setup(repo)
    out = run(repo, "head", MAIN, "--fail-on", "regression")
    assert out.code == 1
    assert out.stdout.splitlines()[-1] == ("gate failed (fail-on: regression): 1 of 3 cases did not pass "
                                           "(no baseline to compare with: gated on failure)")


def test_bad_baseline_is_bad_input(repo):
    setup(repo)
    run(repo, "base", MAIN)
    data = json.loads((repo / "base.json").read_text())
    data["evalSets"][0]["cases"][1]["metrics"][0]["runs"] = "high"
    write_json(repo / "bad.json", data)
    out = run(repo, "head", MAIN, "--baseline", "bad.json")
    assert out.code == 2
    assert "bad.json at $.evalSets[0].cases[1].metrics[0].runs" in out.stderr, out.stderr
    assert "Traceback" not in out.output
    out = run_cli(["compare", "missing.json", "base.json"], repo)
    assert out.code == 2 and "missing.json: baseline not found" in out.stderr
    write_json(repo / "other.json", {"version": 1, "runs": []})  # a replay file, not results
    out = run_cli(["compare", "other.json", "base.json"], repo)
    assert out.code == 2 and "other.json" in out.stderr and "results" in out.stderr


def test_verdict_rule_usage_errors(repo):
    setup(repo)
    out = run_cli(["run", "evals", "--agent-command", "true", "--verdict", "k-of-n:3"], repo)
    assert out.code == 2 and "needs at least 3 runs" in out.output
    out = run_cli(["run", "evals", "--agent-command", "true", "--verdict", "often"], repo)
    assert out.code == 2 and "unknown verdict rule" in out.stderr


def test_cli_choices_match_the_gate():
    from checker import cli
    from checker.compare.gate import FAIL_ON

    assert cli.FAIL_ON == FAIL_ON


def test_run_options_importable_from_main_and_options():
    from checker.commands.run import RunOptions as FromMain
    from checker.options import RunOptions

    assert FromMain is RunOptions


def test_edited_case_is_changed_and_its_failure_gates(repo):
    setup(repo)
    run(repo, "base", MAIN)
    # The PR edits the expected tool call of "steady": a new test, not comparable.
    write_json(repo / "evals" / "w.evalset.json",
               evalset("w", case("steady", WRONG), case("breaks", RIGHT), case("broken", RIGHT)))
    out = run(repo, "head", {**MAIN, "steady": [True] * 3}, "--baseline", "base.json",
              "--fail-on", "regression")
    data = json.loads((repo / "head.json").read_text())
    steady = [c for c in data["evalSets"][0]["cases"] if c["evalId"] == "steady"][0]
    assert steady["change"] == "changed" and "baselineScore" not in steady["metrics"][0]
    assert steady["status"] == "failed" and out.code == 1  # a changed case that fails gates
    assert "steady [changed]" in out.stdout


def test_a_template_with_a_syntax_error_is_bad_input_before_any_work(repo):
    """run, compare and merge: exit 2 with the file and line, no traceback; run says so
    before the agent runs (no results written)."""
    setup(repo)
    run(repo, "base", MAIN)
    (repo / "bad.md.j2").write_text("line one\n{{ results.passed \n")
    record(repo, "head", MAIN)
    out = run_cli(["run", "evals", "--replay", "head.replay.json", "--results", "head.json",
                   "--template", "bad.md.j2", "--markdown", "r.md"], repo)
    assert out.code == 2, out.output
    assert "bad.md.j2:2: template error: unexpected end of template" in out.stderr
    assert not (repo / "head.json").exists()  # found before anything ran or was written
    out = run_cli(["compare", "base.json", "base.json", "--template", "bad.md.j2",
                   "--markdown", "c.md", "--results", "c.json"], repo)
    assert out.code == 2 and "template error" in out.stderr and not (repo / "c.json").exists()
    out = run_cli(["merge", "base.json", "--template", "bad.md.j2", "--markdown", "m.md"], repo)
    assert out.code == 2 and "template error" in out.stderr


def test_replay_with_fewer_runs_than_k_of_n_needs_is_bad_input(repo):
    """Four recorded runs a case cannot meet k-of-n:5: exit 2, as --num-runs 4 would be live,
    not a suite of failures with "1.00 < 1.00"."""
    setup(repo)
    record(repo, "four", {"steady": [True] * 4, "breaks": [True] * 4, "broken": [True] * 2})
    out = run_cli(["run", "evals", "--replay", "four.replay.json", "--verdict", "k-of-n:5"], repo)
    assert out.code == 2, out.output
    assert "four.replay.json" in out.stderr and "--verdict k-of-n:5 needs at least 5 runs" in out.stderr
    assert "holds at most 4" in out.stderr
    out = run_cli(["run", "evals", "--replay", "four.replay.json", "--verdict", "k-of-n:3"], repo)
    assert out.code == 1  # "broken" has 2 runs: it cannot pass, and is said to be short
    assert "1 case(s) have fewer than 3 recorded runs and cannot pass --verdict k-of-n:3" in out.stderr


def test_one_shards_results_are_not_a_baseline_nor_a_side_of_compare(repo):
    """A shard's file would show the other shards' cases as removed or new: refused, with
    the fix (merge first)."""
    setup(repo)
    record(repo, "base", MAIN)
    out = run_cli(["run", "evals", "--replay", "base.replay.json", "--shard", "1/2",
                   "--results", "shard1.json"], repo)
    assert out.code in (0, 1), out.output
    run(repo, "head", MAIN)
    for args in (["compare", "shard1.json", "head.json"], ["compare", "head.json", "shard1.json"],
                 ["run", "evals", "--replay", "head.replay.json", "--baseline", "shard1.json"]):
        out = run_cli(args, repo)
        assert out.code == 2, (args, out.output)
        assert "shard1.json" in out.stderr and "one shard's results (shard 1/2)" in out.stderr
        assert "evalcheck merge" in out.stderr


def test_a_key_missing_from_a_results_file_is_named_as_the_file_spells_it(repo):
    setup(repo)
    run(repo, "base", MAIN)
    data = json.loads((repo / "base.json").read_text())
    del data["evalSets"][0]["cases"][0]["evalId"]  # its siblings are one-word keys
    write_json(repo / "bad.json", data)
    out = run_cli(["compare", "bad.json", "base.json"], repo)
    assert out.code == 2
    assert "missing required key 'evalId' (add 'evalId')" in out.stderr


def test_a_users_template_is_rendered_sandboxed(repo):
    """The template is the repository's code and the checker may run as root: a template
    reaching for Python internals is a template error (exit 2), and runs nothing."""
    setup(repo)
    run(repo, "base", MAIN)
    marker = repo / "ran.txt"
    (repo / "evil.md.j2").write_text(
        "{{ lipsum.__globals__['__builtins__']['open']('" + str(marker) + "', 'w').write('x') }}\n")
    out = run_cli(["compare", "base.json", "base.json", "--template", "evil.md.j2",
                   "--markdown", "c.md"], repo)
    assert out.code == 2, out.output
    assert "template error" in out.stderr and "unsafe" in out.stderr
    assert not marker.exists()
    (repo / "fine.md.j2").write_text("{{ results.summary.cases }} cases, {{ report.sets | length }} set\n")
    out = run_cli(["compare", "base.json", "base.json", "--template", "fine.md.j2",
                   "--markdown", "c.md"], repo)
    assert out.code == 1 and (repo / "c.md").read_text() == "3 cases, 1 set\n"


def test_the_actions_private_template_copy_is_what_is_rendered(tmp_path):
    from checker.report.markdown import private_template_copy

    original = tmp_path / "work" / "report.j2"
    original.parent.mkdir()
    original.write_text("ours\n")
    private = tmp_path / "private"
    private.mkdir()
    copy = private_template_copy(original, private)
    original.write_text("rewritten by the agent\n")  # while the agent runs
    assert copy.read_text() == "ours\n" and copy.parent == private


@pytest.mark.parametrize("body, message", [
    ("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "recursion too deep"),
    ("{{ 'a' * 3000000000 }}", "a repetition of more than 1,000,000 items"),
    ("{{ 9 ** 9999999 }}", "a power of more than 100,000 bits"),
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
     "rendering took longer than 1 s"),
])
def test_a_template_that_would_exhaust_memory_or_time_is_a_template_error(repo, monkeypatch, body, message):
    """Red-team: a traceback (recursion), 8.8 GB of memory, a render without end."""
    import checker.report.user_template as bounds

    monkeypatch.setattr(bounds, "RENDER_SECONDS", 1.0)
    setup(repo)
    run(repo, "base", MAIN)
    (repo / "heavy.md.j2").write_text(body + "\n")
    out = run_cli(["compare", "base.json", "base.json", "--template", "heavy.md.j2",
                   "--markdown", "c.md"], repo)
    assert out.code == 2, out.output
    assert "template error" in out.stderr and message in out.stderr


MUTATING_TEMPLATE = (
    "{%- for s in results.eval_sets %}{% for c in s.cases[:] %}"
    "{% if c.change == 'regressed' and s.cases.remove(c) %}{% endif %}{% endfor %}{% endfor %}"
    "{% for k in results.metadata.keys() | list %}{% if results.metadata.pop(k) %}{% endif %}{% endfor -%}"
    "{{ results.eval_sets[0].cases | length }} case(s)\n")


@pytest.mark.parametrize("command", ["compare", "run"])
def test_a_template_cannot_change_the_verdict_or_the_results(repo, command):
    """Issue 22: Jinja's sandbox lets a template call list.remove(); with the live results a
    template removed the regressed case and the gate passed (exit 0 instead of 1)."""
    setup(repo)
    run(repo, "base", MAIN)
    (repo / "t.j2").write_text(MUTATING_TEMPLATE)
    if command == "compare":
        run(repo, "head", {**MAIN, "breaks": [False] * 3})
        out = run_cli(["compare", "base.json", "head.json", "--results", "cmp.json", "--markdown", "cmp.md",
                       "--template", "t.j2", "--fail-on", "regression"], repo)
    else:
        out = run(repo, "head", {**MAIN, "breaks": [False] * 3}, "--baseline", "base.json",
                  "--markdown", "cmp.md", "--template", "t.j2", "--fail-on", "regression")
        (repo / "head.json").rename(repo / "cmp.json")
    assert out.code == 1, out.output
    assert (repo / "cmp.md").read_text() == "2 case(s)\n"  # the template's own copy changed
    data = json.loads((repo / "cmp.json").read_text())
    assert "breaks" in {c["evalId"] for c in data["evalSets"][0]["cases"]}


def test_compare_pools_several_baselines_and_bad_comparison_input_is_exit_2(repo):
    setup(repo)
    for name in ("m1", "m2", "m3"):
        run(repo, name, MAIN)
    run(repo, "head", {**MAIN, "breaks": [False, False]})
    out = run_cli(["compare", "m1.json", "m2.json", "m3.json", "head.json", "--results", "c.json",
                   "--fail-on", "regression"], repo)
    assert out.code == 1, out.output
    data = json.loads((repo / "c.json").read_text())
    assert [h["path"] for h in data["comparison"]["baseline"]["history"]] == ["m1.json", "m2.json", "m3.json"]
    breaks = next(c for c in data["evalSets"][0]["cases"] if c["evalId"] == "breaks")
    # 9/9 pooled against 0/2: p = 1 / C(11, 2) = 1/55 (one file alone, 3/3 vs 0/2: p = 0.1).
    assert breaks["change"] == "regressed" and abs(breaks["metrics"][0]["pValue"] - 1 / 55) < 1e-12
    assert data["comparison"]["familywise"]["confirmed"] is False
    # Bad input, one message each, exit 2.
    write_json(repo / "other" / "w.evalset.json",
               evalset("w", case("steady", WRONG), case("breaks", WRONG), case("broken", WRONG)))
    other = run_cli(["run", "other", "--replay", "m1.replay.json", "--results", "other.json"], repo)
    assert other.code in (0, 1), other.output
    for args, message in (
            (["compare", "m1.json", "other.json", "head.json"], "not one of their fingerprints"),
            (["run", "evals", "--replay", "head.replay.json", "--alpha", "0.6"], "--alpha"),
            (["run", "evals", "--replay", "head.replay.json", "--alpha", "0"], "--alpha"),
            (["run", "evals", "--agent-command", "true", "--confirm-runs", "101",
              "--baseline", "m1.json"], "confirm-runs is 101, above the maximum"),
            (["run", "evals", "--agent-command", "true", "--confirm-runs", "-1"], "--confirm-runs"),
            (["compare", "m1.json", "head.json", "--alpha", "0.7"], "--alpha")):
        out = run_cli(args, repo)
        assert out.code == 2, (args, out.output)
        assert message in out.stderr, (args, out.stderr)
        assert "Traceback" not in out.output


@pytest.mark.parametrize("command", ["compare", "merge"])
def test_the_markdown_headline_states_the_gate_of_fail_on_not_of_failure(repo, command):
    # An old failure, as on main: --fail-on regression passes (exit 0), and the report's
    # first line must say so - not "Gate failed" (of fail-on: failure) over a green check.
    setup(repo)
    run(repo, "base", MAIN)
    run(repo, "head", MAIN)
    files = ["base.json", "head.json"] if command == "compare" else ["head.json", "--baseline", "base.json"]
    if command == "merge":  # a one-shard merge is a plain merge of the whole suite's file
        assert run(repo, "head", MAIN, "--shard", "1/1").code in (0, 1)
    out = run_cli([command, *files, "--markdown", "out.md", "--fail-on", "regression"], repo)
    assert out.code == 0, out.output
    first = (repo / "out.md").read_text().splitlines()[0]
    assert first == "## ✅ Gate passed: no regression.", first
    assert "fail-on `regression`" in (repo / "out.md").read_text()


def test_the_gate_line_of_compare_claims_no_confirmation_it_did_not_run(repo):
    # compare runs nothing again: "no regression", as the report's headline says, not
    # "no confirmed regression".
    setup(repo)
    run(repo, "base", MAIN)
    run(repo, "head", MAIN)
    out = run_cli(["compare", "base.json", "head.json", "--fail-on", "regression"], repo)
    assert out.code == 0, out.output
    assert out.stdout.splitlines()[-1] == "gate passed (fail-on: regression): no regression; 1 case fails, as on main"
