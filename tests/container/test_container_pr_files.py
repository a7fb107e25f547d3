"""In the real image, as the runner starts it: what a pull request commits - a judge cache
in the workspace, a rewritten baseline file - does not open the gate, and the honest
setups (a cache under the runner's home, a baseline the pull request left alone) work as
before (docs/github-action.md#the-judge-cache, #baseline)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from test_container_action import (HEAD, FakeGitHub, Runner, _hand_to_runner_user, docker_run, event,  # noqa: F401
                                   image, input_env)

from fake_gemini import FakeGemini, verdict
from runner_env import as_checkout
from test_action_pr_files import broken_recordings, rewrite_baseline

MATCH = "You grade answers given by an AI agent"  # final_response_match_v2's prompt
RUNNER_UID = 1001


def judged_workspace(runner: Runner) -> None:
    """One case judged by final_response_match_v2, whose recorded answer is wrong."""
    turn = {"invocation_id": "inv-1", "user_content": {"role": "user", "parts": [{"text": "Capital of France?"}]},
            "final_response": {"role": "model", "parts": [{"text": "Paris."}]}}
    evals = runner.workspace / "judged"
    evals.mkdir()
    (evals / "j.evalset.json").write_text(json.dumps(
        {"eval_set_id": "j", "eval_cases": [{"eval_id": "capital", "conversation": [turn]}]}))
    (evals / "test_config.json").write_text(json.dumps({"criteria": {
        "final_response_match_v2": {"threshold": 1.0, "judge_model_options": {"num_samples": 1}}}}))
    wrong = {**turn, "final_response": {"role": "model", "parts": [{"text": "Lyon."}]}}
    (runner.workspace / "judged_runs.json").write_text(json.dumps({"version": 1, "runs": [
        {"evalSetId": "j", "evalId": "capital", "run": 1, "invocations": [wrong]}]}))


def judged_env(runner: Runner, github: FakeGitHub, gemini: FakeGemini, cache: str) -> dict[str, str]:
    return {**runner.github_env(github.base_url, in_container=True, head_sha=HEAD),
            **input_env(github.token, replay="judged_runs.json", paths="judged", judge_cache=cache),
            "GOOGLE_API_KEY": "test-key", "EVALCHECK_GEMINI_BASE_URL": gemini.url}


def test_a_judge_cache_in_the_workspace_is_refused_and_one_in_the_runners_home_works(image, tmp_path):  # noqa: F811
    with FakeGitHub() as github, FakeGemini() as gemini:
        # The attack: the pull request commits the entries its author's own judge wrote.
        gemini.on(MATCH, verdict(True))
        attack = Runner.create(tmp_path / "attack", event())
        judged_workspace(attack)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "GEMINI_", "EVALCHECK_"))}
        authors = subprocess.run([sys.executable, "-m", "checker.cli", "run", "judged", "--replay",
                                  "judged_runs.json", "--judge-cache", ".judge-cache"], cwd=attack.workspace,
                                 env={**env, "GOOGLE_API_KEY": "k", "EVALCHECK_GEMINI_BASE_URL": gemini.url},
                                 capture_output=True, text=True, timeout=120)
        assert authors.returncode == 0 and list((attack.workspace / ".judge-cache").rglob("*.json")), authors
        gemini.reset()
        gemini.on(MATCH, verdict(False, "Lyon is not the capital"))  # the real judge, from here on
        _hand_to_runner_user(attack)
        done = docker_run(image, attack, judged_env(attack, github, gemini, ".judge-cache"))
        log = done.stdout + done.stderr
        assert done.returncode == 2, log[-3000:]  # without the check: "0 calls, 1 cache hits", passed
        assert "input 'judge-cache': " in log and "is inside the workspace" in log
        assert "judge-cache: /github/home/judge-cache" in log and "Traceback" not in log
        assert gemini.requests == [] and github.writes() == []

        # The honest setup: the cache under the runner's home, as actions/cache keeps it.
        honest = Runner.create(tmp_path / "honest", event())
        judged_workspace(honest)
        _hand_to_runner_user(honest)
        env = judged_env(honest, github, gemini, "/github/home/judge-cache")
        first = docker_run(image, honest, env)
        assert first.returncode == 1, (first.stdout + first.stderr)[-3000:]
        assert len(gemini.requests) == 1
        entries = [p for p in (honest.home / "judge-cache").rglob("*")]
        assert entries and all(p.stat().st_uid == RUNNER_UID for p in entries), \
            [(str(p), p.stat().st_uid) for p in entries]  # actions/cache saves them as the runner's user
        second = docker_run(image, honest, env)
        assert second.returncode == 1 and len(gemini.requests) == 1, (second.stdout + second.stderr)[-3000:]
        results = json.loads((honest.workspace / "evalcheck-report" / "results.json").read_text())
        assert results["metadata"]["judge"]["cacheHits"] == 1


def git(ws, *args: str) -> None:
    subprocess.run(["git", "-C", str(ws), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
                   check=True, capture_output=True)


def baseline_run(image, tmp_path, *, attack: bool):  # noqa: F811
    with FakeGitHub() as fake:
        runner = Runner.create(tmp_path / ("attack" if attack else "honest"), event())
        base = as_checkout(runner)
        broken_recordings(runner.workspace)
        if attack:
            rewrite_baseline(runner.workspace)
        git(runner.workspace, "commit", "-q", "-am", "the pull request")
        _hand_to_runner_user(runner)
        env = {**runner.github_env(fake.base_url, in_container=True, head_sha=HEAD),
               **input_env(fake.token, replay="recorded_runs.json", paths="agent_evals",
                           baseline="baseline/results.json", fail_on="regression")}
        done = docker_run(image, runner, env)
        results = json.loads((runner.workspace / "evalcheck-report" / "results.json").read_text())
        return done, results, fake.comments[7][-1]["body"], base


def test_a_baseline_file_the_pull_request_rewrote_does_not_open_the_gate(image, tmp_path):  # noqa: F811
    done, results, comment, base = baseline_run(image, tmp_path, attack=True)
    log = done.stdout + done.stderr
    assert done.returncode == 1, log[-5000:]
    assert results["comparison"]["summary"]["regressed"] == 1
    assert results["comparison"]["baseline"]["commit"] == base
    headline = "\n".join(comment.splitlines()[1:8])  # the headline and the short lines under it
    assert "baseline file baseline/results.json changed by this PR: 1 case's baseline lowered" in headline
    assert f"(the gate used the base commit's version, {base[:7]})" in headline
    assert "warning: baseline file baseline/results.json changed by this PR" in log

    done, results, comment, _ = baseline_run(image, tmp_path, attack=False)
    assert done.returncode == 1, (done.stdout + done.stderr)[-5000:]  # as before: a regression
    assert results["comparison"]["summary"]["regressed"] == 1
    assert "baseline file" not in comment.splitlines()[1]
