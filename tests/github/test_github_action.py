"""The action's entrypoint in-process, with the runner's environment and the fake GitHub.
(tests/container runs the same through the real image.)"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from github_data import pr_event
from fake_github import FakeGitHub
from action_manifest import manifest_problems
from runner_env import ROOT, Runner, action_inputs, as_checkout, input_env, run_in_workspace

HEAD = "a" * 40


def run_action(tmp_path: Path, fake: FakeGitHub, capfd, event=None, files=None, checkout=False,
               **inputs: str):
    runner = Runner.create(tmp_path, event or pr_event(head_sha=HEAD))
    if checkout:  # a git checkout (the baseline file's origin is then known)
        as_checkout(runner)
    for name, text in (files or {}).items():
        (runner.workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (runner.workspace / name).write_text(text, encoding="utf-8")
    env = {**runner.github_env(fake.base_url, in_container=False, head_sha=HEAD),
           **input_env(fake.token, **{"replay": "recorded_runs.json", "paths": "agent_evals", **inputs})}
    code = run_in_workspace(runner, env)
    out = capfd.readouterr()
    return code, runner, out.out + out.err


def test_pull_request_run_publishes_everything_and_fails_the_job(tmp_path, fake, capfd):
    code, runner, log = run_action(tmp_path, fake, capfd, commit_status="true")
    assert code == 1
    outputs = runner.outputs()
    assert outputs["passed"] == "false"
    assert outputs["results-path"] == "evalcheck-report/results.json"
    assert outputs["markdown-path"] == "evalcheck-report/report.md"
    (comment,) = fake.comments[7]
    assert outputs["comment-url"] == comment["html_url"]
    assert comment["body"].startswith("<!-- evalcheck:default -->")
    (run,) = fake.check_runs.values()
    assert run["head_sha"] == HEAD  # the PR head, not GITHUB_SHA (the merge commit)
    assert run["conclusion"] == "failure"
    (note,) = next(iter(fake.annotations.values()))
    assert (note["path"], note["start_line"]) == ("agent_evals/weather.evalset.json", 22)
    assert fake.statuses[0]["state"] == "failure" and fake.statuses[0]["sha"] == HEAD
    summary = runner.summary()
    assert "Gate failed:" in summary and "compare\\_cities" in summary
    assert "https://github.com/octo/agents/actions/runs/4242" in summary
    report = (runner.workspace / outputs["markdown-path"]).read_text()
    assert "IN\\_ORDER: 1 expected call not matched" in report
    results = json.loads((runner.workspace / outputs["results-path"]).read_text())
    assert results["passed"] is False
    assert f"::add-mask::{fake.token}" in log
    assert log.count(fake.token) == 1  # only in the add-mask command


def test_second_run_updates_the_same_comment(tmp_path, fake, capfd):
    run_action(tmp_path / "a", fake, capfd)
    code, runner, _ = run_action(tmp_path / "b", fake, capfd, fail_on="never")
    assert code == 0
    assert len(fake.comments[7]) == 1
    assert [w.method for w in fake.writes() if "comments" in w.path] == ["POST", "PATCH"]
    assert list(fake.check_runs.values())[-1]["conclusion"] == "neutral"


def test_fork_pr_warns_but_the_verdict_is_the_evaluations(tmp_path, fake, capfd):
    fake.read_only = True
    code, runner, log = run_action(tmp_path, fake, capfd, event=pr_event(head_sha=HEAD, fork=True))
    assert code == 1
    assert "::warning::evalcheck could not post the PR comment: HTTP 403" in log
    assert "::error file=agent_evals/weather.evalset.json,line=22" in log
    assert runner.outputs()["comment-url"] == "" and runner.outputs()["passed"] == "false"
    assert "Gate failed:" in runner.summary()

    fake.read_only = True
    code, _, _ = run_action(tmp_path / "never", fake, capfd, event=pr_event(fork=True), fail_on="never")
    assert code == 0


def test_setup_command_runs_first_and_cannot_issue_workflow_commands(tmp_path, fake, capfd):
    code, runner, log = run_action(tmp_path, fake, capfd, comment="off", check_run="false",
                                   setup_command="echo '::error::forged' && echo ran > setup.txt")
    assert (runner.workspace / "setup.txt").read_text() == "ran\n"
    group = log.index("::group::evalcheck: setup-command")
    assert log.index(": :error: :forged") > group  # shown in its group, not a command
    assert "\n::error::forged" not in log
    assert code == 1


@pytest.mark.parametrize("inputs, message", [
    ({"num_runs": "two"}, "input 'num-runs' must be a whole number"),
    ({"fail_on": "sometimes"}, "input 'fail-on' must be one of failure, regression, drop, error, never"),
    ({"comment_key": "a b -->"}, "comment-key"),
    ({"agent_command": "python agent.py"}, "exactly one of the inputs agent-command, agent-url, replay"),
    ({"setup_command": "exit 3"}, "setup-command failed with exit status 3"),
    ({"config": "missing.json"}, "input 'config': missing.json does not exist"),
])
def test_bad_input_exits_2_with_a_clear_message(tmp_path, fake, capfd, inputs, message):
    code, _, log = run_action(tmp_path, fake, capfd, **inputs)
    assert code == 2
    assert message in log and "Traceback" not in log
    assert fake.writes() == []


def test_bad_eval_file_exits_2_naming_the_file(tmp_path, fake, capfd):
    runner_ws = tmp_path / "ws"
    code, runner, log = run_action(runner_ws, fake, capfd, paths="nowhere")
    assert code == 2 and "nowhere" in log


def test_every_input_is_declared_read_and_documented():
    declared = set(action_inputs())
    from checker.action.config import INPUTS

    assert declared == set(INPUTS)
    source = "".join((ROOT / "checker" / "action" / name).read_text() for name in ("entry.py", "config.py"))
    read = set(re.findall(r'inputs\.(?:text|flag|integer|number|choice|lines)\("([a-z-]+)"', source))
    read |= set(re.findall(r'_path\(inputs, "([a-z-]+)"', source))
    read |= set(re.findall(r'Inputs\(env\)\.text\("([a-z-]+)"\)', source))
    assert read == declared, f"declared but not read: {declared - read}; read but not declared: {read - declared}"
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## GitHub Action", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([a-z-]+)` \|", section, re.M))
    outputs = set(__import__("yaml").safe_load((ROOT / "action.yml").read_text())["outputs"])
    assert declared | outputs == documented


def test_action_yml_is_valid_against_the_published_schema():
    done = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                           "vendor.github-actions", str(ROOT / "action.yml")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_action_yml_holds_expressions_only_where_the_runner_gives_a_context():
    manifest = __import__("yaml").safe_load((ROOT / "action.yml").read_text())
    assert manifest_problems(manifest) == []
    assert manifest["inputs"]["github-token"]["default"] == "${{ github.token }}"


@pytest.mark.parametrize("path, value, problem", [
    (("inputs", "shard", "description"), "e.g. `${{ matrix.shard }}/4`", "expressions are not allowed here"),
    (("inputs", "shard", "default"), "${{ steps.x.outputs.y }}", "Unrecognized named-value: 'steps'"),
    (("inputs", "shard", "default"), "${{ hashFiles('**/x') }}", None),
    (("runs", "args"), ["${{ github.sha }}"], "Unrecognized named-value: 'github'"),
    (("runs", "env"), {"X": "${{ inputs.shard }}"}, None),
    (("outputs", "passed", "value"), "${{ steps.run.outputs.passed }}", None),
    (("outputs", "passed", "value"), "${{ secrets.TOKEN }}", "Unrecognized named-value: 'secrets'"),
    (("name",), "${{ 'x' }}", "expressions are not allowed here"),
])
def test_the_manifest_rules_refuse_what_the_runner_refuses(path, value, problem):
    manifest = __import__("yaml").safe_load((ROOT / "action.yml").read_text())
    node = manifest
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    problems = manifest_problems(manifest)
    assert (problems == []) if problem is None else any(problem in p for p in problems), problems


def test_dockerfile_is_hadolint_clean():
    hadolint = Path(sys.executable).parent / "hadolint"
    done = subprocess.run([str(hadolint), str(ROOT / "Dockerfile")], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_image_builds_on_debian_python_as_ci_does():
    """The default base is a Debian release (CI bootstraps the same one and tags it under this
    name: scripts/setup.d/50-docker.sh), and Python is Debian's python3 from apt, installed
    once for both stages, not a base image's own Python (python:3.12-slim was never tested)."""
    text = (ROOT / "Dockerfile").read_text()
    (default,) = re.findall(r"^ARG BASE_IMAGE=(\S+)$", text, re.M)
    assert re.fullmatch(r"debian:[a-z]+-slim", default), default
    stages = re.findall(r"^FROM (\S+)(?: AS (\S+))?$", text, re.M)
    assert stages == [("${BASE_IMAGE}", "python"), ("python", "build"), ("python", "")]
    (packages,) = re.findall(r"apt-get install -y --no-install-recommends ([^\\\n]+)", text)
    assert {"python3", "python3-venv", "git"} <= set(packages.split())


def test_help_does_not_import_publishing_modules():
    code = ("import sys, checker.cli; from click.testing import CliRunner; "
            "r = CliRunner().invoke(checker.cli.main, ['--help']); assert r.exit_code == 0; "
            "print(sorted(m for m in ('httpx', 'jinja2', 'checker.action.github.client') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_user_template_gets_the_context_and_a_broken_one_is_bad_input(tmp_path, fake, capfd):
    tpl = "{{ title }}: {{ results.summary.failed }} failed; {% for c in report.failing %}{{ c.eval_id | md }}{% endfor %}\n"
    code, runner, _ = run_action(tmp_path / "ok", fake, capfd, template="my.md.j2", files={"my.md.j2": tpl})
    assert code == 1
    assert fake.comments[7][0]["body"] == "<!-- evalcheck:default -->\nAgent evaluation: 1 failed; compare\\_cities"
    code, _, log = run_action(tmp_path / "bad", fake, capfd, template="bad.md.j2",
                              files={"bad.md.j2": "{{ nope.nothing }}\n"})
    assert code == 2 and "bad.md.j2" in log and "template error" in log and "Traceback" not in log


def test_the_markdown_input_may_not_overwrite_an_input_but_a_restored_baseline_may_be_replaced(
        tmp_path, fake, capfd):
    code, runner, log = run_action(tmp_path / "clash", fake, capfd, markdown="recorded_runs.json")
    assert code == 2 and "input 'markdown' would overwrite the replay file" in log
    assert (runner.workspace / "recorded_runs.json").read_text().lstrip().startswith("{")
    # actions/cache restores main's results where they were saved: the default results path.
    main_results = (runner.workspace / "baseline" / "results.json").read_text()
    code, runner, log = run_action(tmp_path / "restored", fake, capfd,
                                   files={"evalcheck-report/results.json": main_results},
                                   baseline="evalcheck-report/results.json", checkout=True)
    assert code == 1, log  # the evaluation's verdict: the baseline was read, then replaced
    # Named relative to the workspace, as the eval files are: not the container's path.
    assert "compared with baseline evalcheck-report/results.json: " in log
    body = fake.comments[7][-1]["body"]
    assert "compared with `evalcheck-report/results.json`" in body
    assert str(runner.workspace) not in body + runner.summary() + log
    results = json.loads((runner.workspace / "evalcheck-report/results.json").read_text())
    assert results["comparison"]["baseline"]["path"] == "evalcheck-report/results.json"
