"""The quarantine file (docs/quarantine.md): read from the base branch - the commit
--quarantine-ref names, not the fork point the pull request branched from - never from the
pull request; a quarantined case runs and is
reported, and never gates; an expired entry gates again with a warning naming its owner; a
bad entry is bad input naming the file, the entry's path and the fix."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from changed_repo import commit, git
from checker.compare.gate import gate_failed
from checker.compare.headline import gate_headline
from checker.compare.overrides import apply_quarantine
from checker.errors import InputError
from checker.inputs.quarantine import Quarantine, parse_quarantine
from checker.models.results import Results
from corehelpers import case, evalset, invocation, replay, run_cli, write_json

REFERENCE = "It is sunny and warm."
QUARANTINE = ".evalcheck/quarantine.yml"
MAIN_FILE = """\
- case: weather/rainy
  reason: the forecast tool flakes; fix in progress
  owner: "@alice"
  expires: 2099-01-31
- case: "weather/wind*"
  reason: known bad answer
  owner: "@bob"
  expires: 2020-01-01
"""


def _answer(ok: bool) -> list[dict]:
    return [invocation(query="weather?", response=REFERENCE if ok else "No idea.")]


def build(tmp_path: Path, *, failing: tuple[str, ...] = ("rainy", "windy"),
          quarantine: str | None = MAIN_FILE) -> Path:
    """main: an eval set of three cases and the quarantine file; the checkout is on a
    branch "pr" whose recorded runs fail ``failing``."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    cases = [case(name, invocation(query="weather?", response=REFERENCE)) for name in ("sunny", "rainy", "windy")]
    write_json(repo / "evals" / "weather.evalset.json", evalset("weather", *cases))
    write_json(repo / "evals" / "test_config.json", {"criteria": {"response_match_score": 0.8}})
    if quarantine is not None:
        (repo / ".evalcheck").mkdir()
        (repo / QUARANTINE).write_text(quarantine)
    commit(repo, "main")
    git(repo, "checkout", "-q", "-b", "pr")
    write_json(repo / "runs.json", replay(*(("weather", name, 1, _answer(name not in failing))
                                            for name in ("sunny", "rainy", "windy"))))
    return repo


def run(repo: Path, *args: str):
    out = run_cli(["run", "evals", "--replay", "runs.json", "--results", "r.json", *args], repo)
    results = json.loads((repo / "r.json").read_text()) if (repo / "r.json").exists() else None
    return out, results


def cases_of(results: dict) -> dict[str, dict]:
    return {c["evalId"]: c for s in results["evalSets"] for c in s["cases"]}


def test_a_quarantined_case_runs_is_reported_and_does_not_gate(tmp_path):
    repo = build(tmp_path, failing=("rainy",))
    plain, _ = run(repo)
    assert plain.code == 1  # without the quarantine, rainy fails the gate
    out, results = run(repo, "--quarantine-ref", "main")
    assert out.code == 0, out.output
    rainy = cases_of(results)["rainy"]
    assert rainy["status"] == "failed" and rainy["runs"]  # it ran and failed, as reported
    assert rainy["quarantined"] == {"reason": "the forecast tool flakes; fix in progress",
                                    "owner": "@alice", "expires": "2099-01-31"}
    assert "quarantined" not in cases_of(results)["sunny"]
    assert results["metadata"]["quarantine"]["quarantined"] == 1
    assert "1 case quarantined, not gating (1 did not pass)" in out.stdout
    for fail_on in ("error", "regression"):
        assert run(repo, "--quarantine-ref", "main", "--fail-on", fail_on)[0].code == 0
    run(repo, "--quarantine-ref", "main", "--html", "r.html", "--markdown", "r.md")
    assert ("Quarantined until 2099-01-31 by the base branch's quarantine file (@alice: the "
            "forecast tool flakes; fix in progress): reported, not gating.") in (repo / "r.html").read_text()
    markdown = (repo / "r.md").read_text()
    assert "| rainy | ❌ failed · 🔒 quarantined |" in markdown
    assert ("**Quarantined** (run and reported, never gating) by the base branch's "
            ".evalcheck/quarantine.yml (at ") in markdown
    assert "weather/rainy (failed) until 2099-01-31, @​alice: the forecast tool flakes; fix in progress." in markdown


def test_an_expired_entry_gates_again_with_a_warning_naming_its_owner(tmp_path):
    repo = build(tmp_path, failing=("windy",))
    out, results = run(repo, "--quarantine-ref", "main")
    assert out.code == 1, out.output
    assert "quarantined" not in cases_of(results)["windy"]
    warning = next(line for line in out.stderr.splitlines() if "expired" in line)
    assert warning.startswith("evalcheck: warning: .evalcheck/quarantine.yml (at ")
    assert ("at $[1]: the quarantine of weather/wind* expired on 2020-01-01 (owner @bob); the case "
            "it matches gates again: @bob, renew it (a later expires) or remove it on the base "
            "branch") in warning
    assert warning.removeprefix("evalcheck: warning: ") in results["metadata"]["warnings"]


def test_the_pull_requests_own_quarantine_edits_change_nothing(tmp_path):
    """The PR quarantines the case it breaks - committed on its branch and in the working
    tree - and removes main's entry: the base branch's file decides, as without the edits."""
    repo = build(tmp_path, failing=("rainy", "sunny"))
    before, results_before = run(repo, "--quarantine-ref", "main")
    (repo / QUARANTINE).write_text(
        '- {case: "weather/*", reason: mine now, owner: "@mallory", expires: 2099-12-31}\n')
    commit(repo, "the PR quarantines everything")
    (repo / QUARANTINE).write_text("[]\n")  # and, uncommitted, drops main's entries
    after, results_after = run(repo, "--quarantine-ref", "main")
    assert before.code == after.code == 1  # sunny is not quarantined on main: it gates
    assert {k: c.get("quarantined") for k, c in cases_of(results_after).items()} == \
        {k: c.get("quarantined") for k, c in cases_of(results_before).items()} == \
        {"sunny": None, "rainy": {"reason": "the forecast tool flakes; fix in progress",
                                  "owner": "@alice", "expires": "2099-01-31"}, "windy": None}


def test_a_base_branch_without_the_file_quarantines_nothing(tmp_path):
    repo = build(tmp_path, failing=("rainy",), quarantine=None)
    (repo / ".evalcheck").mkdir()
    (repo / QUARANTINE).write_text(MAIN_FILE)  # the PR adds one: not the base branch's
    commit(repo, "PR adds a quarantine file")
    out, results = run(repo, "--quarantine-ref", "main")
    assert out.code == 1
    assert "quarantine" not in results["metadata"]


@pytest.mark.parametrize("text, path, message, fix", [
    ("- {case: weather/rainy, reason: r, owner: '@a', expires: 2026-13-01}\n", "$[0].expires",
     "expires must be a date YYYY-MM-DD, got '2026-13-01'", "write the last day the quarantine holds"),
    ("- {case: weather/rainy, reason: r, owner: '@a', expire: 2026-01-01}\n", "$[0].expire",
     "unknown key 'expire' (did you mean 'expires'?)", "an entry has exactly case, reason, owner and expires"),
    ("- {case: weather/rainy, reason: r, expires: 2026-01-01}\n", "$[0].owner",
     "owner must be a non-empty string, got missing", "give each entry case, reason, owner and expires"),
    ("- {case: rainy, reason: r, owner: '@a', expires: 2026-01-01}\n", "$[0].case",
     "case 'rainy' names no eval set", "write SET/ID"),
    ("- case: weather/rainy\n  owner: @alice\n", "$",
     "not valid YAML (line 2, column 10)", 'quote a value that starts with @ (owner: "@alice")'),
    ("case: weather/rainy\n", "$", "must be a list of entries, got a dict", "start each entry with '- '"),
    ("- weather/rainy\n", "$[0]", "an entry must be a mapping", "e.g. - {case: weather/rainy_day"),
])
def test_bad_entries_name_the_file_the_path_and_the_fix(text, path, message, fix):
    with pytest.raises(InputError) as caught:
        parse_quarantine(text.encode(), ".evalcheck/quarantine.yml")
    said = str(caught.value)
    assert said.startswith(f".evalcheck/quarantine.yml at {path}: {message}"), said
    assert f"({fix}" in said, said


def test_a_bad_file_on_the_base_branch_is_bad_input_before_anything_runs(tmp_path):
    repo = build(tmp_path, quarantine="- {case: weather/rainy, reason: r, owner: '@a', expires: soon}\n")
    out, results = run(repo, "--quarantine-ref", "main")
    assert out.code == 2 and results is None
    base = git(repo, "rev-parse", "main")
    assert (f"evalcheck: error: .evalcheck/quarantine.yml (at {base[:12]}, the base commit main) at "
            "$[0].expires: expires must be a date YYYY-MM-DD, got 'soon'") in out.stderr
    assert run(repo, "--quarantine-ref", "nope")[0].stderr.count("'nope' names no commit") == 1


def test_an_entry_holds_through_its_expiry_day_and_globs_match_set_and_id():
    entries = parse_quarantine(b"- {case: 'weather/r*', reason: r, owner: '@a', expires: 2026-05-01}\n"
                               b"- {case: 'shop/[ab]', reason: r, owner: '@b', expires: 2026-05-01}\n", "q.yml")
    results = Results.model_validate({"passed": False, "summary": {"cases": 4}, "evalSets": [
        {"evalSetId": "weather", "path": "w.json", "cases": [
            {"evalId": "rainy", "status": "failed"}, {"evalId": "sunny", "status": "failed"}]},
        {"evalSetId": "shop", "path": "s.json", "cases": [
            {"evalId": "a", "status": "passed"}, {"evalId": "c", "status": "passed"}]}]})
    quarantine = Quarantine(entries, "q.yml")
    assert apply_quarantine(results, quarantine, date(2026, 5, 1)) == []
    marked = [(s.eval_set_id, c.eval_id) for s in results.eval_sets for c in s.cases if c.quarantined]
    assert marked == [("weather", "rainy"), ("shop", "a")]
    assert gate_failed(results, "failure")  # sunny fails and is not quarantined
    results.eval_sets[0].cases[1].status = "passed"
    results.summary.passed, results.summary.failed = 3, 1
    assert not gate_failed(results, "failure")
    from checker.compare.headline import headline

    said = headline(results, "failure")
    assert said.sentence == "Gate passed: 1 of 4 cases did not pass, each quarantined (not gating)."
    assert said.lines == ["2 cases quarantined, not gating (1 did not pass)"]
    for case_result in (c for s in results.eval_sets for c in s.cases):
        case_result.quarantined = None
    warnings = apply_quarantine(results, quarantine, date(2026, 5, 2))
    assert len(warnings) == 2 and not any(c.quarantined for s in results.eval_sets for c in s.cases)
    assert gate_failed(results, "failure")


def test_base_names_the_branch_whose_quarantine_applies(tmp_path):
    """`run --base REF` (the checkout is a change of REF): REF's quarantine applies as with
    --quarantine-ref REF."""
    repo = build(tmp_path, failing=("rainy",))
    out, results = run(repo, "--base", "main")
    assert out.code == 0, out.output
    assert cases_of(results)["rainy"]["quarantined"]["owner"] == "@alice"


def test_quarantine_marks_a_results_file_brings_along_decide_nothing(tmp_path):
    """A results file read back (HEAD of `compare`, a shard's file to merge: the pull
    request's to write) that marks its failing case quarantined gates as if it did not."""
    repo = build(tmp_path, failing=("rainy",))
    out, results = run(repo)
    assert out.code == 1
    cases_of(results)["rainy"]["quarantined"] = {"reason": "mine", "owner": "@mallory", "expires": "2099-12-31"}
    (repo / "head.json").write_text(json.dumps(results))
    compared = run_cli(["compare", "r.json", "head.json", "--results", "c.json"], repo)
    assert compared.code == 1, compared.output
    assert "quarantined" not in cases_of(json.loads((repo / "c.json").read_text()))["rainy"]
    honoured = run_cli(["compare", "r.json", "head.json", "--quarantine-ref", "main", "--results", "c.json"], repo)
    assert honoured.code == 0  # main's own entry for rainy
    assert cases_of(json.loads((repo / "c.json").read_text()))["rainy"]["quarantined"]["owner"] == "@alice"


def test_a_base_the_checkout_lacks_applies_no_quarantine_and_says_so_when_the_checkout_has_one(tmp_path):
    """--base (not --quarantine-ref) in a shallow checkout: no quarantine, the run goes on
    and says so; an explicit --quarantine-ref there is bad input."""
    repo = build(tmp_path, failing=("rainy",))
    commit(repo, "the PR's runs")
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", "--branch", "pr", f"file://{repo}", str(shallow))
    main = git(repo, "rev-parse", "main")
    out, _ = run(shallow, "--base", main)
    assert out.code == 1, out.output
    assert (".evalcheck/quarantine.yml not applied, every case gates: the base branch's version could "
            "not be read") in out.stderr
    assert run(shallow, "--quarantine-ref", main)[0].code == 2


def test_an_entry_main_removed_does_not_come_back_for_a_branch_older_than_the_removal(tmp_path):
    """main quarantined rainy, then removed the entry; a pull request branched from the commit
    before the removal breaks rainy: main as it is now decides, not the fork point."""
    repo = build(tmp_path, failing=("rainy",))
    commit(repo, "pr: its recorded runs")
    git(repo, "checkout", "-q", "main")
    (repo / QUARANTINE).write_text("[]\n")
    tip = commit(repo, "main: rainy is fixed, its quarantine removed")
    git(repo, "checkout", "-q", "pr")  # branched before the removal
    out, results = run(repo, "--quarantine-ref", "main")
    assert out.code == 1, out.output
    assert "quarantined" not in cases_of(results)["rainy"]
    assert results["metadata"]["quarantine"]["commit"] == tip
    out, results = run(repo, "--base", "main")  # --base names the same branch
    assert out.code == 1 and "quarantined" not in cases_of(results)["rainy"], out.output
    # the control: branched from main's tip, the entry is gone as well; and before the
    # removal, the entry main had then applies
    git(repo, "checkout", "-q", "-b", "pr-new", "main")
    write_json(repo / "runs.json", replay(*(("weather", name, 1, _answer(name != "rainy"))
                                            for name in ("sunny", "rainy", "windy"))))
    assert run(repo, "--quarantine-ref", "main")[0].code == 1
    (repo / "runs.json").unlink()
    git(repo, "checkout", "-q", "pr")
    out, results = run(repo, "--quarantine-ref", "main~1")
    assert out.code == 0 and cases_of(results)["rainy"]["quarantined"]["owner"] == "@alice", out.output


def test_a_quarantine_file_main_reaches_through_a_link_is_refused_with_the_reason(tmp_path):
    repo = build(tmp_path, quarantine=None)
    commit(repo, "pr: its recorded runs")
    git(repo, "checkout", "-q", "main")
    (repo / "settings").mkdir()
    (repo / "settings" / "quarantine.yml").write_text(MAIN_FILE)
    import os

    os.symlink("settings", repo / ".evalcheck")
    commit(repo, "main: .evalcheck -> settings")
    out, _ = run(repo, "--quarantine-ref", "main")
    assert out.code == 2, out.output
    assert (".evalcheck/quarantine.yml at " in out.stderr and "is reached through .evalcheck, a "
            "symbolic link, not a folder" in out.stderr), out.stderr
    assert "Traceback" not in out.output


ENTRY = "- {case: weather/rainy, reason: the forecast tool flakes, owner: '@alice', expires: 2099-01-31}\n"


@pytest.mark.parametrize("text, said", [
    ("[" * 20_000, "nested more than 10 levels deep (line 1, column 11)"),
    (ENTRY * 1400, "bytes, more than the 128 KiB a quarantine file may have"),
    ("- &e {case: weather/rainy, reason: r, owner: '@a', expires: 2099-01-31}\n" + "- *e\n" * 100,
     "an alias (*e): a quarantine file has no use for anchors and aliases (line 2, column 3)"),
], ids=["nested", "large", "aliases"])
def test_a_quarantine_file_too_deep_too_large_or_aliased_is_bad_input_naming_the_limit(tmp_path, text, said):
    """Issue 39: 20,000 nested ``[`` (40 KB) were a RecursionError traceback; 1 MiB took 17 s."""
    repo = build(tmp_path, quarantine=text)
    out, results = run(repo, "--quarantine-ref", "main")
    assert out.code == 2 and results is None, out.stderr
    base = git(repo, "rev-parse", "main")
    assert f"evalcheck: error: .evalcheck/quarantine.yml (at {base[:12]}, the base commit main) at $: " in out.stderr
    assert said in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_a_quarantine_file_just_under_the_caps_is_read(tmp_path):
    """The honest control of the caps: 1,300 entries (124 KiB), nested three deep, apply."""
    text = ENTRY * 1300
    assert 120 * 1024 < len(text) < 128 * 1024
    repo = build(tmp_path, failing=("rainy",), quarantine=text)
    out, results = run(repo, "--quarantine-ref", "main")
    assert out.code == 0, out.stderr
    assert cases_of(results)["rainy"]["quarantined"]["owner"] == "@alice"
