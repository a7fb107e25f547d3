"""The Action on a matrix: shard jobs (shard: I/N, publish: false) post nothing; one merge
job (merge: GLOB) publishes one comment, one check run with every shard's annotations, one
status, one job summary and the outputs. (tests/container runs the same in the image.)"""

from __future__ import annotations

import json

import pytest

from shard_suite import FAILING, SHARDS, downloaded, shard_inputs, suite_files
from test_github_action import HEAD, run_action


def test_shard_jobs_post_nothing_and_the_merge_job_publishes_once(tmp_path, fake, capfd):
    workspaces = []
    for index in range(1, SHARDS + 1):
        code, runner, log = run_action(tmp_path / f"shard{index}", fake, capfd, commit_status="true",
                                       files=suite_files(), **shard_inputs(index))
        # A shard holding a failing case still exits 0: the merged results decide the gate.
        assert code == 0, log
        assert "publish: false - nothing posted" in log
        assert runner.summary() == ""
        outputs = runner.outputs()
        assert outputs["results-path"] == f"evalcheck-report/results-{index}.json"
        assert outputs["passed"] == "false" and outputs["comment-url"] == ""
        shard = json.loads((runner.workspace / outputs["results-path"]).read_text())["shard"]
        assert (shard["index"], shard["count"]) == (index, SHARDS)
        workspaces.append(runner.workspace)
    assert fake.requests == []  # not even a read

    code, runner, log = run_action(tmp_path / "merge", fake, capfd, commit_status="true", replay="",
                                   paths="", merge="shards/*.json", files=downloaded(workspaces))
    assert code == 1, log  # three cases fail: the merge job fails, as one job would
    assert "evalcheck: merging 3 file(s)" in log
    (comment,) = fake.comments[7]
    assert "case\\_1" in comment["body"] and "case\\_3" in comment["body"]
    (cid, check), = fake.check_runs.items()
    assert check["head_sha"] == HEAD and check["conclusion"] == "failure"
    assert sorted(a["title"] for a in fake.annotations[cid]) == [f"{c}: failed" for c in FAILING]
    (status,) = fake.statuses
    assert status["state"] == "failure"
    assert runner.summary().count("Gate failed (fail-on:") == 1
    outputs = runner.outputs()
    assert outputs["passed"] == "false" and outputs["comment-url"] == comment["html_url"]
    merged = json.loads((runner.workspace / outputs["results-path"]).read_text())
    assert "shard" not in merged and merged["summary"]["cases"] == 6 and merged["metadata"]["shards"] == 3
    assert fake.violations == []


@pytest.mark.parametrize("inputs, message", [
    ({"merge": "shards/*.json"}, "input 'merge' merges the shards' results: give no replay with it"),
    ({"merge": "shards/*.json", "replay": "", "shard": "1/2"}, "inputs 'merge' and 'shard' go to different jobs"),
    ({"merge": "nothing/*.json", "replay": ""}, "input 'merge': no file matches 'nothing/*.json'"),
    ({"shard": "5/4"}, "input 'shard' '5/4': the index must be between 1 and the count"),
    ({"publish": "maybe"}, "input 'publish'"),
])
def test_bad_shard_inputs_exit_2(tmp_path, fake, capfd, inputs, message):
    code, _, log = run_action(tmp_path, fake, capfd, **inputs)
    assert code == 2, log
    assert message in log and "Traceback" not in log
    assert fake.writes() == []


def test_merge_job_refuses_an_incomplete_set_of_shards(tmp_path, fake, capfd):
    code, runner, log = run_action(tmp_path / "shard1", fake, capfd, files=suite_files(), **shard_inputs(1))
    assert code == 0, log
    code, _, log = run_action(tmp_path / "merge", fake, capfd, replay="", merge="shards/*.json",
                              files={"shards/results-1.json": (runner.workspace / "evalcheck-report/results-1.json").read_text()})
    assert code == 2 and "shard 2/3, 3/3 missing" in log
    assert fake.writes() == []
