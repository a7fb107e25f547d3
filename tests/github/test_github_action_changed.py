"""The Action's `only-changed: auto` end to end, in-process, against the fake GitHub: a pull
request re-runs the agent it changed and carries the other from main's results artifact (the
comment says so, with main's verdict; only passes are carried: tests/core/test_changed_since.py); a push runs everything; without the baseline's commit
in the checkout, everything runs with a note. The agents' own log says which ran."""

from __future__ import annotations

import io
import json
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from fake_github import FakeGitHub
from github_data import pr_event
from runner_env import Runner, input_env, run_in_workspace

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from changed_repo import AGENT, COMMAND, build_monorepo, commit, git, ran  # noqa: E402
from corehelpers import run_cli  # noqa: E402

HEAD = "a" * 40


def results_zip(path: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("results.json", path.read_text())
    return buffer.getvalue()


@pytest.fixture
def pull_request(tmp_path: Path, fake: FakeGitHub, monkeypatch):
    """The workspace: the monorepo on a branch that changed agents/shop; main's results
    (a run on main's commit) are the artifact of main's merge base."""
    runner = Runner.create(tmp_path, pr_event(head_sha=HEAD))
    shutil.rmtree(runner.workspace)
    main = build_monorepo(runner.workspace)
    monkeypatch.setenv("AGENT_LOG", str(tmp_path / "agent.log"))
    done = run_cli(["run", ".", "--agent-command", COMMAND, "--num-runs", "1",
                    "--results", str(tmp_path / "main.json")], runner.workspace)
    assert done.code == 1, done.output
    ran(tmp_path / "agent.log")
    fake.history, fake.merge_base = [main], main
    fake.add_artifact(main, results_zip(tmp_path / "main.json"))
    git(runner.workspace, "checkout", "-q", "-b", "pr")
    (runner.workspace / "agents" / "shop" / "agent.py").write_text(AGENT + "# faster\n")
    commit(runner.workspace, "shop: faster")
    event = pr_event(head_sha=HEAD)
    event["pull_request"]["base"].update(ref="main", sha=main)
    (runner.workflow / "event.json").write_text(json.dumps(event))
    return runner


def act(runner: Runner, fake: FakeGitHub, capfd, event_name: str = "pull_request", **inputs: str):
    env = {**runner.github_env(fake.base_url, in_container=False, head_sha=HEAD),
           "GITHUB_EVENT_NAME": event_name,
           **input_env(fake.token, **{"agent-command": COMMAND, "paths": ".", "num-runs": "1",
                                      "fail-on": "regression", **inputs})}
    code = run_in_workspace(runner, env)
    out = capfd.readouterr()
    results = json.loads((runner.workspace / "evalcheck-report" / "results.json").read_text()) \
        if (runner.workspace / "evalcheck-report" / "results.json").exists() else None
    return code, results, out.out + out.err


def test_a_pull_request_reruns_the_agent_it_changed_and_carries_the_other(pull_request, fake, capfd):
    code, results, log = act(pull_request, fake, capfd, **{"only-changed": "auto"})
    assert ran(pull_request.root / "agent.log") == {"shop"}
    assert code == 0, log  # shop/bye fails as on main: no regression
    assert {s["evalSetId"]: [c["change"] for c in s["cases"]] for s in results["evalSets"]} == \
        {"shop": ["unchanged", "unchanged"], "weather": ["carried"]}
    assert results["metadata"]["changedSince"]["ref"] == fake.merge_base
    assert "1 of 2 eval sets run, 1 carried from main" in log
    (comment,) = fake.comments[7]
    body = comment["body"]
    assert ("**Carried from main** (not re-run: nothing it depends on changed since "
            f"`{fake.merge_base[:12]}`; main's verdict): weather (agents/weather/weather.evalset.json): "
            "all 1 case passed on main.") in body
    assert "weather.evalset.json#L5) | ✅ passed | ⏭️ carried |" in body  # hi: main's verdict
    assert "1 carried from main" in pull_request.summary()


def test_only_changed_off_and_a_push_run_everything(pull_request, fake, capfd):
    code, results, _ = act(pull_request, fake, capfd)  # the default: off
    assert ran(pull_request.root / "agent.log") == {"weather", "shop"}
    assert "changedSince" not in results["metadata"]
    push = {"ref": "refs/heads/main", "after": HEAD, "repository": {"full_name": "octo/agents"}}
    (pull_request.workflow / "event.json").write_text(json.dumps(push))
    code, results, log = act(pull_request, fake, capfd, event_name="push", **{"only-changed": "auto"})
    assert ran(pull_request.root / "agent.log") == {"weather", "shop"}
    assert "only-changed: auto: not a pull request (push): every eval set runs" in log
    assert "carried" not in json.dumps(results)


def test_a_shallow_checkout_without_the_base_commit_runs_everything_with_a_note(pull_request, fake, capfd):
    missing = "d" * 40
    fake.history, fake.merge_base = [missing], missing
    fake.add_artifact(missing, fake.blobs[next(iter(fake.blobs))])
    code, results, log = act(pull_request, fake, capfd, **{"only-changed": "auto"})
    assert ran(pull_request.root / "agent.log") == {"weather", "shop"}
    assert f"'{missing}' names no commit of this repository" in log
    assert "every eval set runs" in fake.comments[7][0]["body"]


def test_a_bad_only_changed_value_is_bad_input(pull_request, fake, capfd):
    code, _, log = act(pull_request, fake, capfd, **{"only-changed": "yes"})
    assert code == 2 and "input 'only-changed' must be one of auto, off; got 'yes'" in log
    assert ran(pull_request.root / "agent.log") == set()
