"""Through the action's entrypoint, on the runner's layout: symlinks under the workspace
that lead out of it are not followed (checker/safety/confine.py), and the caps of checker/safety/limits.py
hold for the inputs too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fake_github import FakeGitHub
from github_data import pr_event
from runner_env import Runner, input_env, run_in_workspace

HEAD = "a" * 40
SECRET = "outside-secret-8d1f"


def run_action(tmp_path: Path, fake: FakeGitHub, capfd, prepare, **inputs: str):
    runner = Runner.create(tmp_path / "runner", pr_event(head_sha=HEAD))
    outside = tmp_path / "outside"
    outside.mkdir()
    prepare(runner.workspace, outside)
    env = {**runner.github_env(fake.base_url, in_container=False, head_sha=HEAD),
           **input_env(fake.token, **{"replay": "recorded_runs.json", "paths": "agent_evals", **inputs})}
    code = run_in_workspace(runner, env)
    out = capfd.readouterr()
    return code, runner, outside, out.out + out.err


def test_an_eval_file_linking_out_of_the_workspace_is_not_read(tmp_path, fake, capfd):
    def prepare(workspace: Path, outside: Path) -> None:
        (outside / "x.evalset.json").write_text(json.dumps({"eval_set_id": SECRET, "eval_cases": [
            {"eval_id": SECRET, "conversation": []}]}))
        (workspace / "agent_evals" / "linked.evalset.json").symlink_to(outside / "x.evalset.json")

    code, runner, _, log = run_action(tmp_path, fake, capfd, prepare)
    assert code == 2, log
    assert "linked.evalset.json" in log and "outside the workspace: not followed in the Action" in log
    # nothing posted (the automatic baseline's search only reads, before the evaluation)
    assert SECRET not in log and fake.writes() == []
    assert "passed" not in runner.outputs()


def test_a_config_linking_out_of_the_workspace_is_not_read(tmp_path, fake, capfd):
    def prepare(workspace: Path, outside: Path) -> None:
        config = workspace / "agent_evals" / "test_config.json"
        (outside / "c.json").write_text(config.read_text())
        config.unlink()
        config.symlink_to(outside / "c.json")

    code, _, _, log = run_action(tmp_path, fake, capfd, prepare)
    assert code == 2 and "test_config.json is a symlink" in log.replace("agent_evals/", ""), log


def test_a_report_folder_linking_out_is_not_written_through(tmp_path, fake, capfd):
    def prepare(workspace: Path, outside: Path) -> None:
        (workspace / "evalcheck-report").symlink_to(outside)

    code, _, outside, log = run_action(tmp_path, fake, capfd, prepare)
    assert code == 2, log
    assert "the folder of this output is a symlink" in log
    assert list(outside.iterdir()) == []


def test_a_results_file_linking_out_is_replaced_not_followed(tmp_path, fake, capfd):
    def prepare(workspace: Path, outside: Path) -> None:
        (outside / "precious.txt").write_text("keep me")
        (workspace / "evalcheck-report").mkdir()
        (workspace / "evalcheck-report" / "results.json").symlink_to(outside / "precious.txt")

    code, runner, outside, log = run_action(tmp_path, fake, capfd, prepare)
    assert code == 1, log  # the example's failing case: evaluated as usual
    assert (outside / "precious.txt").read_text() == "keep me"
    results = runner.workspace / "evalcheck-report" / "results.json"
    assert not results.is_symlink() and json.loads(results.read_text())["passed"] is False
    assert runner.outputs()["passed"] == "false"


def test_num_runs_above_the_cap_is_bad_input_in_the_action(tmp_path, fake, capfd):
    from checker.safety.limits import MAX_RUNS

    code, runner, _, log = run_action(tmp_path, fake, capfd, lambda ws, out: None,
                                      num_runs=str(MAX_RUNS + 1), turn_timeout="inf")
    assert code == 2, log
    assert "Traceback" not in log and fake.writes() == []  # nothing posted
    assert "passed" not in runner.outputs()


def test_a_custom_function_file_named_outside_the_workspace_is_not_read(tmp_path, fake, capfd):
    """Not only a symlink: a path an eval or config file names outside the workspace
    (an absolute one, or one climbing out) is refused before anything reads it."""
    def prepare(workspace: Path, outside: Path) -> None:
        (outside / "fn.py").write_text(f"def evaluate(instance):\n    return {{'score': 1.0}}  # {SECRET}\n")
        evals = workspace / "tests" / "eval"
        (evals / "datasets").mkdir(parents=True)
        (evals / "datasets" / "d.json").write_text(json.dumps({"eval_cases": [
            {"eval_case_id": "one", "prompt": {"role": "user", "parts": [{"text": "hi"}]}}]}))
        (evals / "eval_config.yaml").write_text(
            "metrics_to_run:\n  - fn\ncustom_metrics:\n  - name: fn\n"
            f"    custom_function_file: {outside / 'fn.py'}\n")

    code, runner, outside, log = run_action(tmp_path, fake, capfd, prepare, paths="tests/eval")
    assert code == 2, log
    assert (f"tests/eval/eval_config.yaml at $.custom_metrics[0].custom_function_file: this "
            f"custom_function_file ({outside / 'fn.py'}) lies outside the workspace") in log
    assert SECRET not in log and fake.writes() == [] and "passed" not in runner.outputs()


@pytest.mark.parametrize("spelt", ["relative", "absolute"])
def test_a_judge_cache_inside_the_workspace_is_refused(tmp_path, fake, capfd, spelt):
    """Cache entries the pull request committed would be taken as the judge's verdicts: the
    input is refused, naming where the cache belongs."""
    def prepare(workspace: Path, outside: Path) -> None:
        (workspace / ".judge-cache" / "ab").mkdir(parents=True)

    cache = ".judge-cache" if spelt == "relative" else str(tmp_path / "runner" / "workspace" / ".judge-cache")
    code, runner, _, log = run_action(tmp_path, fake, capfd, prepare, judge_cache=cache)
    assert code == 2, log
    assert ("input 'judge-cache': " in log and "is inside the workspace, where the change under "
            "test can commit cache entries" in log), log
    assert "judge-cache: /github/home/judge-cache" in log and "_github_home/judge-cache" in log
    assert fake.writes() == [] and "passed" not in runner.outputs()


def test_a_judge_cache_under_the_runners_home_is_used(tmp_path, fake, capfd):
    code, runner, _, log = run_action(tmp_path, fake, capfd, lambda ws, out: None,
                                      judge_cache=str(tmp_path / "runner" / "home" / "judge-cache"))
    assert code == 1, log  # the example's failing case, as without a cache
    assert runner.outputs()["passed"] == "false" and "judge-cache" not in log
