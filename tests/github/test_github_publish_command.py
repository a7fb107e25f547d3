"""`evalcheck publish`: the second half of the fork-safe workflow_run pair."""

from __future__ import annotations

import json

from click.testing import CliRunner

from checker.cli import main
from github_data import pr_event, realistic_results, write_json

HEAD = "e" * 40


def workflow_run_env(tmp_path, fake, pull_requests=()):
    event = {"action": "completed", "workflow_run": {
        "head_sha": HEAD, "event": "pull_request", "conclusion": "failure",
        "pull_requests": list(pull_requests), "head_repository": {"full_name": "someone/agents"}}}
    summary = tmp_path / "summary.md"
    return {"GITHUB_EVENT_PATH": str(write_json(tmp_path / "event.json", event)),
            "GITHUB_EVENT_NAME": "workflow_run", "GITHUB_REPOSITORY": "octo/agents",
            "GITHUB_API_URL": fake.base_url, "GITHUB_RUN_ID": "77", "GITHUB_SHA": "f" * 40,
            "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(tmp_path / "out.txt"),
            "GITHUB_TOKEN": fake.token}


def invoke(args, env):
    return CliRunner().invoke(main, ["publish", *args], env=env, catch_exceptions=False)


def test_publishes_a_fork_prs_artifact_on_the_verified_pr(tmp_path, fake):
    fake.pulls[7] = HEAD
    fake.pull_repos[7] = "someone/agents"
    env = workflow_run_env(tmp_path, fake)
    results = write_json(tmp_path / "results.json", realistic_results())
    artifact_event = write_json(tmp_path / "pr-event.json", pr_event(7, head_sha=HEAD, fork=True))
    result = invoke(["--results", str(results), "--event", str(artifact_event), "--commit-status"], env)
    assert result.exit_code == 0, result.output
    assert fake.comments[7][0]["body"].startswith("<!-- evalcheck:default -->")
    (run,) = fake.check_runs.values()
    assert run["head_sha"] == HEAD and run["conclusion"] == "failure"
    assert fake.statuses[0]["sha"] == HEAD
    assert "Gate failed:" in (tmp_path / "summary.md").read_text()
    assert fake.token not in result.output.replace(f"::add-mask::{fake.token}", "")


def test_refuses_a_pr_number_whose_head_is_another_commit(tmp_path, fake):
    fake.pulls[8] = "9" * 40  # the artifact claims PR 8, which is not what was evaluated
    env = workflow_run_env(tmp_path, fake)
    results = write_json(tmp_path / "results.json", realistic_results())
    result = invoke(["--results", str(results), "--pr", "8"], env)
    assert result.exit_code == 2
    assert "pull request #8 is at 999999999999" in result.output
    assert "::warning::evalcheck publish: refused, nothing posted" in result.output
    assert fake.writes() == []


VICTIM = "a" * 40


def test_refuses_an_artifact_naming_another_commit_than_the_workflow_run(tmp_path, fake):
    """Issue 22: a fork's artifact named its own PR (whose head is the evaluated commit) but
    the victim PR's head SHA in event.json: a success check run and status landed on the
    victim's commit. The commit comes from workflow_run only."""
    fake.pulls[9] = HEAD
    fake.pull_repos[9] = "someone/agents"
    env = workflow_run_env(tmp_path, fake)
    results = write_json(tmp_path / "results.json", realistic_results())
    forged = pr_event(9, head_sha=VICTIM, fork=True)
    artifact_event = write_json(tmp_path / "pr-event.json", forged)
    result = invoke(["--results", str(results), "--event", str(artifact_event), "--commit-status"], env)
    assert result.exit_code == 2, result.output
    assert "names commit aaaaaaaaaaaa, but the evaluated run was on eeeeeeeeeeee" in result.output
    assert fake.writes() == [] and fake.statuses == [] and fake.check_runs == {}


def test_refuses_an_artifact_that_names_no_pr(tmp_path, fake):
    """A fork's workflow_run lists no PR; an artifact naming none gave a check run and a
    status on whatever commit it named, unchecked."""
    env = workflow_run_env(tmp_path, fake)
    results = write_json(tmp_path / "results.json", realistic_results())
    result = invoke(["--results", str(results), "--commit-status"], env)
    assert result.exit_code == 2, result.output
    assert "names no pull request" in result.output
    assert fake.writes() == []


def test_refuses_a_pr_from_another_repository_at_the_same_commit(tmp_path, fake):
    """A fork of the fork at the same commit is not the evaluated run's head repository."""
    fake.pulls[11] = HEAD
    fake.pull_repos[11] = "mallory/agents"
    env = workflow_run_env(tmp_path, fake)
    results = write_json(tmp_path / "results.json", realistic_results())
    result = invoke(["--results", str(results), "--pr", "11"], env)
    assert result.exit_code == 2, result.output
    assert "comes from mallory/agents" in result.output
    assert fake.writes() == []


def test_same_repo_pr_number_comes_from_the_workflow_run_event(tmp_path, fake):
    fake.pulls[5] = HEAD
    env = workflow_run_env(tmp_path, fake, pull_requests=[{"number": 5, "head": {"sha": HEAD}}])
    results = write_json(tmp_path / "results.json", realistic_results())
    result = invoke(["--results", str(results), "--no-check-run"], env)
    assert result.exit_code == 0, result.output
    assert 5 in fake.comments and fake.check_runs == {}


def test_bad_results_file_is_a_clear_error(tmp_path, fake):
    env = workflow_run_env(tmp_path, fake)
    bad = tmp_path / "results.json"
    bad.write_text(json.dumps({"version": 1, "passed": "maybe"}))
    result = invoke(["--results", str(bad)], env)
    assert result.exit_code == 2 and "not a results file" in result.output
    assert "Traceback" not in result.output
