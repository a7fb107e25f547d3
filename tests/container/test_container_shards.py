"""The sharded Action in the real image: three shard jobs (shard: I/3, publish: false) post
nothing to the fake GitHub; the merge job (merge: GLOB) posts exactly one comment and one
check run carrying the annotations of every shard, one status and one job summary."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "github"))

from fake_github import FakeGitHub  # noqa: E402
from runner_env import Runner, input_env  # noqa: E402
from shard_suite import FAILING, SHARDS, downloaded, shard_inputs, suite_files  # noqa: E402
from test_container_action import HEAD, docker_run, event, image  # noqa: E402,F401


def _workspace(root: Path, files: dict[str, str]) -> Runner:
    runner = Runner.create(root, event())
    for name, text in files.items():
        (runner.workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (runner.workspace / name).write_text(text)
    return runner


def test_container_shard_jobs_post_nothing_and_the_merge_job_posts_once(image, tmp_path):  # noqa: F811
    with FakeGitHub() as fake:
        shards = []
        for index in range(1, SHARDS + 1):
            runner = _workspace(tmp_path / f"shard{index}", suite_files())
            env = {**runner.github_env(fake.base_url, in_container=True, head_sha=HEAD),
                   **input_env(fake.token, commit_status="true", **shard_inputs(index))}
            done = docker_run(image, runner, env)
            assert done.returncode == 0, done.stdout + done.stderr  # the merge job gates
            assert runner.summary() == "" and runner.outputs()["comment-url"] == ""
            shards.append(runner.workspace)
        assert fake.writes() == []  # a shard reads (the baseline search) and posts nothing

        runner = _workspace(tmp_path / "merge", downloaded(shards))
        env = {**runner.github_env(fake.base_url, in_container=True, head_sha=HEAD),
               **input_env(fake.token, commit_status="true", paths="", merge="shards/results-*.json")}
        done = docker_run(image, runner, env)
        log = done.stdout + done.stderr
        assert done.returncode == 1, log
        (comment,) = fake.comments[7]
        (cid, check), = fake.check_runs.items()
        assert check["conclusion"] == "failure" and check["head_sha"] == HEAD
        assert sorted(a["title"] for a in fake.annotations[cid]) == [f"{c}: failed" for c in FAILING]
        assert {a["path"] for a in fake.annotations[cid]} == {"sharded/suite.evalset.json"}
        (status,) = fake.statuses
        assert status["state"] == "failure"
        assert runner.summary().count("Gate failed:") == 1
        assert runner.outputs()["comment-url"] == comment["html_url"]
        merged = json.loads((runner.workspace / runner.outputs()["results-path"]).read_text())
        assert merged["summary"]["cases"] == 6 and merged["metadata"]["shards"] == SHARDS
        assert fake.violations == []
