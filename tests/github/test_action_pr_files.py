"""Through the Action's entrypoint, on a git checkout of a pull request: a baseline file the
pull request rewrote is read as the base commit has it, and recordings it changed are said
to be its own (checker/inputs/pr_files.py; docs/github-action.md#baseline)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from click.testing import CliRunner

from checker.cli import main as cli
from fake_github import FakeGitHub
from github_data import pr_event
from runner_env import EXAMPLE, Runner, as_checkout, input_env, run_in_workspace

HEAD = "a" * 40
RUNS = 12  # per case: a drop from main's 2/2 to 0/12 is a confirmed regression


def git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(ws), "-c", "user.name=t", "-c", "user.email=t@example.invalid",
                           *args], check=True, capture_output=True, text=True).stdout.strip()


def broken_recordings(ws: Path) -> None:
    """The pull request's agent: compare_cities misses a call in every run."""
    runs = json.loads((EXAMPLE / "recorded_runs.json").read_text())["runs"]
    good = next(r for r in runs if r["evalId"] == "paris_today")
    bad = next(r for r in runs if r["evalId"] == "compare_cities" and r["run"] == 2)  # the failing run
    (ws / "recorded_runs.json").write_text(json.dumps({"version": 1, "runs": [
        {**run, "run": n} for run in (good, bad) for n in range(1, RUNS + 1)]}))


def rewrite_baseline(ws: Path) -> None:
    """The attack: the baseline says main failed compare_cities too."""
    import os

    cwd = os.getcwd()
    os.chdir(ws)
    try:
        done = CliRunner().invoke(cli, ["run", "agent_evals", "--replay", "recorded_runs.json",
                                        "--results", "baseline/results.json"])
    finally:
        os.chdir(cwd)
    assert done.exit_code == 1, done.output


def run_action(runner: Runner, fake: FakeGitHub, capfd):
    env = {**runner.github_env(fake.base_url, in_container=False, head_sha=HEAD),
           **input_env(fake.token, replay="recorded_runs.json", paths="agent_evals",
                       baseline="baseline/results.json", fail_on="regression")}
    code = run_in_workspace(runner, env)
    out = capfd.readouterr()
    return code, out.out + out.err


def pull_request(tmp_path: Path, *, attack: bool) -> tuple[Runner, str]:
    runner = Runner.create(tmp_path, pr_event(head_sha=HEAD))
    base = as_checkout(runner)
    broken_recordings(runner.workspace)
    if attack:
        rewrite_baseline(runner.workspace)
    git(runner.workspace, "commit", "-q", "-am", "the pull request")
    return runner, base


def regressed_run(tmp_path: Path, fake: FakeGitHub, capfd, *, attack: bool) -> tuple[str, str, dict]:
    """The pull request evaluated: the gate fails on compare_cities's regression either way.
    (base commit, log, results)"""
    runner, base = pull_request(tmp_path, attack=attack)
    code, log = run_action(runner, fake, capfd)
    assert code == 1, log
    results = json.loads((runner.workspace / "evalcheck-report" / "results.json").read_text())
    assert results["comparison"]["summary"]["regressed"] == 1
    return base, log, results


def test_a_baseline_file_the_pull_request_rewrote_does_not_open_the_gate(tmp_path, fake, capfd):
    base, log, results = regressed_run(tmp_path, fake, capfd, attack=True)
    assert results["comparison"]["baseline"]["commit"] == base
    # (paris_today's recorded answer scores a little higher in the PR's recordings: raised)
    said = (f"baseline file baseline/results.json changed by this PR: 1 case's baseline lowered, "
            f"1 case's baseline raised (the gate used the base commit's version, {base[:7]})")
    assert f"warning: {said}" in log, log
    body = fake.comments[7][-1]["body"]
    headline = body.splitlines()[1]
    assert headline.startswith("## ❌ Gate failed: 1 case regressed ("), headline
    below = "\n".join(body.splitlines()[2:8])  # the short lines under the headline
    assert f"- {said}" in below and "- replay file recorded\\_runs.json changed by this PR" in below
    assert "lowered by the PR's version of baseline/results.json (not used for the gate): " \
           "weather/compare\\_cities (passed -&gt; failed" in body
    (check,) = fake.check_runs.values()
    assert check["conclusion"] == "failure" and said in check["output"]["title"]


def test_a_pull_request_that_leaves_the_baseline_alone_is_gated_as_before(tmp_path, fake, capfd):
    _, log, results = regressed_run(tmp_path, fake, capfd, attack=False)
    assert [c["kind"] for c in results["pullRequestFiles"]] == ["replay"]
    assert "baseline file" not in log
    assert "warning: replay file recorded_runs.json changed by this PR: the verdict is the PR's own " \
           "recordings, not a run of its agent" in log


def test_a_committed_baseline_without_the_base_commit_is_bad_input(tmp_path, fake, capfd):
    runner, _ = pull_request(tmp_path, attack=True)
    event_path = runner.workflow / "event.json"
    event = json.loads(event_path.read_text())
    event["pull_request"]["base"]["sha"] = "b" * 40  # a shallow checkout: the base is not there
    event_path.write_text(json.dumps(event))
    code, log = run_action(runner, fake, capfd)
    assert code == 2, log
    assert "the baseline file baseline/results.json: " in log and "fetch-depth: 0" in log
    assert fake.writes() == [] and "passed" not in runner.outputs()


def test_a_baseline_through_a_folder_the_pull_request_made_a_link_is_read_at_the_base_commit(
        tmp_path, fake, capfd):
    """The pull request swaps the baseline's folder for a link to a folder of its own, where
    main "failed" compare_cities too: git tracks nothing at baseline/results.json in HEAD,
    yet the file is the pull request's; main's version decides the gate."""
    import os
    import shutil

    runner = Runner.create(tmp_path, pr_event(head_sha=HEAD))
    base = as_checkout(runner)
    ws = runner.workspace
    broken_recordings(ws)
    rewrite_baseline(ws)
    shutil.move(ws / "baseline", ws / "prdata")
    os.symlink("prdata", ws / "baseline")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "the pull request: baseline -> prdata")
    assert git(ws, "ls-tree", "HEAD", "--", "baseline/results.json") == ""
    code, log = run_action(runner, fake, capfd)
    assert code == 1, log
    results = json.loads((ws / "evalcheck-report" / "results.json").read_text())
    assert results["comparison"]["summary"]["regressed"] == 1
    assert results["comparison"]["baseline"] == {"path": "baseline/results.json", "commit": base}
    said = ("baseline file baseline/results.json changed by this PR (through baseline, a symbolic "
            "link in the checkout): 1 case's baseline lowered")
    assert said in log, log
    assert said.replace("_", "\\_") in "\n".join(fake.comments[7][-1]["body"].splitlines()[3:9])  # under the headline
