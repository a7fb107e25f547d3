"""Overrides in the Action, end to end in-process against the fake GitHub (docs/quarantine.md):
the accept label read from the pull request's timeline (who added it, when; removed again it
accepts nothing; a timeline that cannot be read accepts nothing, with a warning), and the
quarantine file read from the base branch with git - the pull request's own edits to it
change nothing, an expired entry gates again."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from fake_github import Fault, FakeGitHub
from github_data import pr_event
from runner_env import Runner, input_env, run_in_workspace

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from changed_repo import commit, git  # noqa: E402
from corehelpers import case, evalset, invocation, replay, run_cli, write_json  # noqa: E402

HEAD = "a" * 40
RUNS = 8  # a side: enough for a drop from 8/8 to 0/8 to be a confirmed regression at alpha 0.05
REFERENCE = "It is sunny and warm."
LABEL = "evalcheck:accept-regression"
QUARANTINE = ".evalcheck/quarantine.yml"


def _runs(failing: tuple[str, ...]) -> dict:
    return replay(*(("weather", name, n, [invocation(query="weather?", response="No idea." if name in failing
                                                     else REFERENCE)])
                    for name in ("sunny", "rainy") for n in range(1, RUNS + 1)))


@pytest.fixture
def workspace(tmp_path: Path) -> Runner:
    """A checkout on branch pr of a repository whose main has the eval set and a quarantine
    file; main's results (every run passed) in main.json; the PR's recorded runs fail rainy."""
    runner = Runner.create(tmp_path, pr_event(head_sha=HEAD))
    ws = runner.workspace
    shutil.rmtree(ws)  # the example Runner copies in; this test's own repository instead
    ws.mkdir()
    git(ws, "init", "-q", "-b", "main")
    git(ws, "config", "user.email", "t@example.com")
    git(ws, "config", "user.name", "t")
    write_json(ws / "evals" / "weather.evalset.json", evalset(
        "weather", *(case(name, invocation(query="weather?", response=REFERENCE)) for name in ("sunny", "rainy"))))
    write_json(ws / "evals" / "test_config.json", {"criteria": {"response_match_score": 0.8}})
    commit(ws, "main")
    write_json(ws / "main_runs.json", _runs(()))
    done = run_cli(["run", "evals", "--replay", "main_runs.json", "--num-runs", str(RUNS),
                    "--results", str(tmp_path / "main.json")], ws)
    assert done.code == 0, done.output
    (ws / "main_runs.json").unlink()
    git(ws, "checkout", "-q", "-b", "pr")
    write_json(ws / "runs.json", _runs(("rainy",)))
    return runner


def set_base(runner: Runner, sha: str) -> None:
    event = pr_event(head_sha=HEAD)
    event["pull_request"]["base"].update(ref="main", sha=sha)
    (runner.workflow / "event.json").write_text(json.dumps(event))


def act(runner: Runner, fake: FakeGitHub, capfd, **inputs: str):
    env = {**runner.github_env(fake.base_url, in_container=False, head_sha=HEAD),
           **input_env(fake.token, **{"replay": "runs.json", "paths": "evals", "num-runs": str(RUNS),
                                      "baseline": str(runner.root / "main.json"),
                                      "fail-on": "regression", **inputs})}
    code = run_in_workspace(runner, env)
    out = capfd.readouterr()
    path = runner.workspace / "evalcheck-report" / "results.json"
    results = json.loads(path.read_text()) if path.exists() else None
    return code, results, out.out + out.err


def timeline_requests(fake: FakeGitHub) -> list:
    return [r for r in fake.requests if r.path.endswith("/timeline")]


def test_a_regression_accepted_by_label_passes_with_the_trail(workspace, fake, capfd):
    set_base(workspace, git(workspace.workspace, "rev-parse", "main"))
    for i in range(120):  # the label comes on the timeline's second page
        fake.add_timeline_comment(7, f"comment {i}")
    fake.add_label_event(7, "needs-review", actor="dave", created_at="2026-11-19T08:00:00Z")
    fake.add_label_event(7, LABEL, actor="carol", created_at="2026-11-20T10:00:00Z")
    code, results, log = act(workspace, fake, capfd)
    assert code == 0, log
    rainy = next(c for s in results["evalSets"] for c in s["cases"] if c["evalId"] == "rainy")
    assert rainy["change"] == "regressed" and rainy["status"] == "failed"  # the verdicts stay
    assert results["comparison"]["accepted"] == {
        "label": LABEL, "actor": "carol", "time": "2026-11-20T10:00:00Z", "commit": HEAD,
        "cases": [{"evalSetId": "weather", "evalId": "rainy"}]}
    trail = (f"1 regression accepted by label `{LABEL}` (added by @carol at 2026-11-20 10:00 UTC "
             f"after the push of {HEAD[:7]}, read from the pull request's timeline)")
    assert f"gate passed (fail-on: regression): {trail}" in log
    (run,) = fake.check_runs.values()
    assert run["conclusion"] != "failure"
    assert run["output"]["title"].startswith(f"Gate passed: {trail} · ")
    assert "**Accepted by label** `evalcheck:accept-regression`, added by @\u200bcarol at 2026-11-20 " \
           "10:00 UTC (read from the pull request's timeline): 1 regression (weather/rainy) does not " \
           "fail the gate." in run["output"]["summary"]
    (comment,) = fake.comments[7]
    assert "📉 regressed · ✅ accepted by label" in comment["body"]
    (note,) = [a for notes in fake.annotations.values() for a in notes]
    assert (note["annotation_level"], note["title"]) == ("warning", "rainy: failed, regressed, accepted")
    assert note["message"].startswith(f"regression accepted by label {LABEL}\nregressed against the baseline")
    pages = timeline_requests(fake)
    assert len(pages) == 2 and pages[0].query["per_page"] == ["100"]


def test_a_label_removed_again_accepts_nothing(workspace, fake, capfd):
    set_base(workspace, git(workspace.workspace, "rev-parse", "main"))
    fake.add_label_event(7, LABEL, actor="carol")
    fake.add_label_event(7, LABEL, actor="carol", event="unlabeled", created_at="2026-11-20T11:00:00Z")
    code, results, log = act(workspace, fake, capfd)
    assert code == 1, log
    assert "accepted" not in results["comparison"]
    assert "gate failed (fail-on: regression): 1 case regressed" in log


def test_a_timeline_that_cannot_be_read_accepts_nothing_and_says_so(workspace, fake, capfd):
    set_base(workspace, git(workspace.workspace, "rev-parse", "main"))
    fake.add_label_event(7, LABEL, actor="carol")
    fake.faults.append(Fault("GET", r"/timeline$", 403, message="Resource not accessible by integration"))
    code, results, log = act(workspace, fake, capfd)
    assert code == 1 and "accepted" not in results["comparison"]
    assert ("::warning::evalcheck: accept-label: could not read pull request #7's timeline: HTTP 403: "
            "Resource not accessible by integration (the job needs `pull-requests: read` or "
            "`issues: read`); no regression is accepted") in log


def test_an_empty_accept_label_reads_no_timeline(workspace, fake, capfd):
    set_base(workspace, git(workspace.workspace, "rev-parse", "main"))
    fake.add_label_event(7, LABEL, actor="carol")
    code, _, _ = act(workspace, fake, capfd, **{"accept-label": ""})
    assert code == 1 and timeline_requests(fake) == []


def _quarantine(expires: str, case: str = "weather/rainy", owner: str = "@alice") -> str:
    return f'- {{case: "{case}", reason: flaky forecast tool, owner: "{owner}", expires: {expires}}}\n'


def on_main(runner: Runner, text: str) -> str:
    """Commit ``text`` as main's quarantine file; the PR branch is rebased on it."""
    ws = runner.workspace
    git(ws, "stash", "-q", "-u")
    git(ws, "checkout", "-q", "main")
    (ws / ".evalcheck").mkdir(exist_ok=True)
    (ws / QUARANTINE).write_text(text)
    sha = commit(ws, "quarantine")
    git(ws, "checkout", "-q", "pr")
    git(ws, "rebase", "-q", "main")
    git(ws, "stash", "pop", "-q")
    set_base(runner, sha)
    return sha


def test_the_base_branchs_quarantine_holds_and_the_pull_requests_edits_change_nothing(workspace, fake, capfd):
    on_main(workspace, _quarantine("2099-01-31"))
    ws = workspace.workspace
    # The PR drops main's entry and quarantines another case: committed, and in the work tree.
    (ws / QUARANTINE).write_text(_quarantine("2099-12-31", case="weather/sunny", owner="@mallory"))
    commit(ws, "the PR's own quarantine")
    (ws / QUARANTINE).write_text("[]\n")
    code, results, log = act(workspace, fake, capfd, **{"fail-on": "failure", "accept-label": ""})
    assert code == 0, log  # rainy fails, quarantined by main's file
    marks = {c["evalId"]: c.get("quarantined") for s in results["evalSets"] for c in s["cases"]}
    assert marks == {"sunny": None, "rainy": {"reason": "flaky forecast tool", "owner": "@alice",
                                              "expires": "2099-01-31"}}
    assert "1 case quarantined, not gating (1 did not pass, 1 regressed)" in log
    (comment,) = fake.comments[7]
    assert "🔒 quarantined" in comment["body"] and "**Quarantined** (run and reported, never gating)" in comment["body"]
    (note,) = [a for notes in fake.annotations.values() for a in notes]
    assert (note["annotation_level"], note["title"]) == ("warning", "rainy: failed, regressed, quarantined")
    assert note["message"].startswith("quarantined until 2099-01-31 (@alice: flaky forecast tool); not gating\n")


def test_an_expired_entry_gates_again_naming_its_owner(workspace, fake, capfd):
    on_main(workspace, _quarantine("2020-01-01", owner="@bob"))
    code, results, log = act(workspace, fake, capfd, **{"fail-on": "failure", "accept-label": ""})
    assert code == 1, log
    assert all("quarantined" not in c for s in results["evalSets"] for c in s["cases"])
    assert ("the quarantine of weather/rainy expired on 2020-01-01 (owner @bob); the case it matches "
            "gates again: @bob, renew it") in log


def test_a_base_commit_missing_from_the_checkout_applies_no_quarantine_and_says_so(workspace, fake, capfd):
    on_main(workspace, _quarantine("2099-01-31"))
    set_base(workspace, "b" * 40)  # as after a shallow checkout: the base commit is not there
    code, results, log = act(workspace, fake, capfd, **{"fail-on": "failure", "accept-label": ""})
    assert code == 1, log
    assert ".evalcheck/quarantine.yml not applied, every case gates: the base branch's version could " \
           "not be read" in log and "fetch-depth: 0" in log


def test_a_quarantined_regression_does_not_fail_the_regression_gate(workspace, fake, capfd):
    on_main(workspace, _quarantine("2099-01-31"))
    code, results, log = act(workspace, fake, capfd, **{"accept-label": ""})
    rainy = next(c for s in results["evalSets"] for c in s["cases"] if c["evalId"] == "rainy")
    assert rainy["change"] == "regressed" and rainy["quarantined"]["owner"] == "@alice"
    assert code == 0, log
    assert "gate passed (fail-on: regression): no regression outside the quarantined cases; 1 case " \
           "quarantined, not gating (1 did not pass, 1 regressed)" in log


def test_the_command_lines_accept_label_reads_the_same_timeline(workspace, fake, capfd, monkeypatch):
    """`evalcheck compare --accept-label` in a pull request's job (GITHUB_TOKEN, the event):
    the same trail; outside a pull request's job it is bad input."""
    ws = workspace.workspace
    done = run_cli(["run", "evals", "--replay", "runs.json", "--num-runs", str(RUNS), "--results", "head.json"], ws)
    assert done.code == 1
    compare = ["compare", str(workspace.root / "main.json"), "head.json", "--fail-on", "regression",
               "--accept-label", LABEL, "--results", "compared.json"]
    outside = run_cli(compare, ws)
    assert outside.code == 2 and "--accept-label reads the pull request's timeline, and this is no " \
        "pull request's job" in outside.stderr
    fake.add_label_event(7, LABEL, actor="carol", created_at="2026-11-20T10:00:00Z")
    for name, value in workspace.github_env(fake.base_url, in_container=False, head_sha=HEAD).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GITHUB_TOKEN", fake.token)
    inside = run_cli(compare, ws)
    assert inside.code == 0, inside.output
    assert ("gate passed (fail-on: regression): 1 regression accepted by label `evalcheck:accept-regression` "
            f"(added by @carol at 2026-11-20 10:00 UTC after the push of {HEAD[:7]}, read from the pull "
            "request's timeline)") in inside.stdout
    accepted = json.loads((ws / "compared.json").read_text())["comparison"]["accepted"]
    assert accepted["actor"] == "carol" and accepted["cases"] == [{"evalSetId": "weather", "evalId": "rainy"}]


def test_an_entry_main_removed_does_not_come_back_for_an_older_branch(workspace, fake, capfd):
    """main quarantined rainy, then removed the entry; the pull request branched before the
    removal breaks rainy: the base commit (pull_request.base.sha) decides, not the fork point."""
    on_main(workspace, _quarantine("2099-01-31"))
    ws = workspace.workspace
    git(ws, "stash", "-q", "-u")
    git(ws, "checkout", "-q", "main")
    (ws / QUARANTINE).write_text("[]\n")
    tip = commit(ws, "rainy fixed: its quarantine removed")
    git(ws, "checkout", "-q", "pr")  # not rebased: its merge base still has the entry
    git(ws, "stash", "pop", "-q")
    set_base(workspace, tip)
    code, results, log = act(workspace, fake, capfd)
    assert code == 1, log
    assert all("quarantined" not in c for s in results["evalSets"] for c in s["cases"])
    assert results["metadata"]["quarantine"]["commit"] == tip
    assert "gate failed (fail-on: regression): 1 case regressed" in log


# ------------------------------------------------ a label accepts what it was given for (issue 39 point 3)

PREDATES = f"the accept label predates the latest push ({HEAD[:7]}): add it again to accept"


def test_a_label_added_after_the_last_push_accepts_as_before(workspace, fake, capfd):
    """The control: pushes, then the label, then a comment (not a push)."""
    set_base(workspace, git(workspace.workspace, "rev-parse", "main"))
    fake.add_push_event(7, "b" * 40, created_at="2026-11-20T09:00:00Z")
    fake.add_push_event(7, HEAD, event="head_ref_force_pushed", created_at="2026-11-20T09:30:00Z")
    fake.add_label_event(7, LABEL, actor="carol", created_at="2026-11-20T10:00:00Z")
    fake.add_timeline_comment(7, "thanks")
    code, results, log = act(workspace, fake, capfd)
    assert code == 0, log
    assert results["comparison"]["accepted"]["commit"] == HEAD
    assert fake.violations == []


@pytest.mark.parametrize("push", ["committed", "head_ref_force_pushed", "head_ref_restored"])
def test_a_label_older_than_the_latest_push_accepts_nothing_and_says_so(workspace, fake, capfd, push):
    """The label was added at 10:00 for one regression; at 11:00 a push brings more: nothing
    is accepted, and the report says why."""
    set_base(workspace, git(workspace.workspace, "rev-parse", "main"))
    fake.add_label_event(7, LABEL, actor="carol", created_at="2026-11-20T10:00:00Z")
    fake.add_push_event(7, HEAD, event=push, created_at="2026-11-20T11:00:00Z")
    code, results, log = act(workspace, fake, capfd)
    assert code == 1, log
    assert "accepted" not in results["comparison"]
    assert f"gate failed (fail-on: regression): 1 case regressed (rainy); {PREDATES}" in log
    assert f"::warning::evalcheck: label '{LABEL}' on pull request #7: {PREDATES}" in log
    (comment,) = fake.comments[7]
    assert PREDATES in "\n".join(comment["body"].splitlines()[1:8])  # a line under the headline
    (run,) = fake.check_runs.values()
    assert run["conclusion"] == "failure" and PREDATES in run["output"]["title"]
    assert fake.violations == []
    # added again after the push: it accepts
    fake.add_label_event(7, LABEL, actor="carol", event="unlabeled", created_at="2026-11-20T11:05:00Z")
    fake.add_label_event(7, LABEL, actor="carol", created_at="2026-11-20T11:06:00Z")
    code, results, log = act(workspace, fake, capfd)
    assert code == 0 and results["comparison"]["accepted"]["time"] == "2026-11-20T11:06:00Z", log


def test_a_label_from_an_account_below_the_required_permission_accepts_nothing(workspace, fake, capfd):
    set_base(workspace, git(workspace.workspace, "rev-parse", "main"))
    fake.roles["trina"] = "triage"
    fake.add_label_event(7, LABEL, actor="trina")
    code, results, log = act(workspace, fake, capfd)
    assert code == 1 and "accepted" not in results["comparison"], log
    said = ("the accept label was added by @trina, whose permission on the repository is triage, "
            "below the write it needs: nothing accepted")
    assert f"gate failed (fail-on: regression): 1 case regressed (rainy); {said}" in log
    (asked,) = [r for r in fake.requests if r.path.endswith("/permission")]
    assert asked.path == "/repos/octo/agents/collaborators/trina/permission"
    # the permission is the workflow's to set: triage then suffices
    code, results, log = act(workspace, fake, capfd, **{"accept-label-permission": "triage"})
    assert code == 0 and results["comparison"]["accepted"]["actor"] == "trina", log
    assert fake.violations == []


def test_a_maintainer_passes_the_default_and_an_unknown_account_accepts_nothing(workspace, fake, capfd):
    set_base(workspace, git(workspace.workspace, "rev-parse", "main"))
    fake.roles.update(mona="maintain", ghost=None)
    fake.add_label_event(7, LABEL, actor="mona")
    code, results, _ = act(workspace, fake, capfd)
    assert code == 0 and results["comparison"]["accepted"]["actor"] == "mona"
    fake.add_label_event(7, LABEL, actor="ghost", created_at="2026-11-20T12:00:00Z")
    code, results, log = act(workspace, fake, capfd)
    assert code == 1 and "accepted" not in results["comparison"], log
    assert ("::warning::evalcheck: accept-label: could not read @ghost's permission on the repository "
            "(HTTP 404: Not Found): nothing accepted") in log


def test_a_bot_accepts_only_when_allowed_by_name(workspace, fake, capfd):
    set_base(workspace, git(workspace.workspace, "rev-parse", "main"))
    fake.add_label_event(7, LABEL, actor="labeller[bot]", actor_type="Bot")
    code, results, log = act(workspace, fake, capfd)
    assert code == 1 and "accepted" not in results["comparison"], log
    assert ("the accept label was added by @labeller[bot], a bot that accept-label-bots does not "
            "name: nothing accepted") in log
    assert not [r for r in fake.requests if r.path.endswith("/permission")]
    code, results, log = act(workspace, fake, capfd, **{"accept-label-bots": "renovate[bot] labeller[bot]"})
    assert code == 0 and results["comparison"]["accepted"]["actor"] == "labeller[bot]", log
    code, _, log = act(workspace, fake, capfd, **{"accept-label-bots": "labeller"})
    assert code == 2 and "input 'accept-label-bots': 'labeller' is not a bot's login" in log
    code, _, log = act(workspace, fake, capfd, **{"accept-label-permission": "owner"})
    assert code == 2 and "input 'accept-label-permission' must be one of read, triage, write" in log


def test_the_command_line_holds_the_label_to_the_latest_push_and_the_permission(workspace, fake, monkeypatch):
    """`evalcheck compare --accept-label` in a pull request's job: a label older than the
    latest push accepts nothing; --accept-label-permission sets the role it needs."""
    ws = workspace.workspace
    assert run_cli(["run", "evals", "--replay", "runs.json", "--num-runs", str(RUNS),
                    "--results", "head.json"], ws).code == 1
    compare = ["compare", str(workspace.root / "main.json"), "head.json", "--fail-on", "regression",
               "--accept-label", LABEL, "--results", "compared.json"]
    for name, value in workspace.github_env(fake.base_url, in_container=False, head_sha=HEAD).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GITHUB_TOKEN", fake.token)
    fake.add_label_event(7, LABEL, actor="carol", created_at="2026-11-20T10:00:00Z")
    fake.add_push_event(7, HEAD, created_at="2026-11-20T11:00:00Z")
    done = run_cli(compare, ws)
    assert done.code == 1, done.output
    assert f"gate failed (fail-on: regression): 1 case regressed (rainy); {PREDATES}" in done.stdout
    assert "accepted" not in json.loads((ws / "compared.json").read_text())["comparison"]
    fake.add_label_event(7, LABEL, actor="trina", created_at="2026-11-20T12:00:00Z")
    fake.roles["trina"] = "triage"
    done = run_cli(compare, ws)
    assert done.code == 1 and "whose permission on the repository is triage, below the write" in done.stdout
    done = run_cli([*compare, "--accept-label-permission", "triage"], ws)
    assert done.code == 0, done.output
    assert json.loads((ws / "compared.json").read_text())["comparison"]["accepted"]["commit"] == HEAD
    done = run_cli([*compare, "--accept-label-permission", "boss"], ws)
    assert done.code == 2 and "--accept-label-permission must be one of read, triage, write" in done.stderr
