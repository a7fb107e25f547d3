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


def with_usage(files: dict[str, str]) -> dict[str, str]:
    """The suite's recorded runs, each turn reporting 1,000 prompt and 200 output tokens of
    gemini-2.5-flash (as ADK events' usage_metadata), and a prices file."""
    runs = json.loads(files["sharded/runs.json"])
    for run in runs["runs"]:
        for turn in run["invocations"]:
            turn["intermediate_data"] = {"invocation_events": [
                {"author": "agent", "model_version": "gemini-2.5-flash",
                 "usage_metadata": {"prompt_token_count": 1000, "candidates_token_count": 200}}]}
    prices = {"date": "2025-09-01", "models": {"gemini-2.5-flash": {"input": 10, "output": 50}}}
    return {**files, "sharded/runs.json": json.dumps(runs), "prices.json": json.dumps(prices)}


# 12 runs of 1,000 + 200 tokens at $10 / $50 per million
FOOTER = "tokens: agent 12,000 in + 2,400 out · est. cost $0.24 (prices.json of 2025-09-01, then Gemini"


def test_the_comment_footer_shows_tokens_and_cost_from_one_job_and_from_the_merge(tmp_path, fake, capfd):
    files = with_usage(suite_files())
    code, runner, log = run_action(tmp_path / "one", fake, capfd, files=files, replay="sharded/runs.json",
                                   paths="sharded", prices="prices.json")
    assert code == 1, log
    (comment,) = fake.comments[7]
    assert FOOTER in comment["body"].replace("\\", "") and FOOTER in runner.summary().replace("\\", "")

    workspaces = []
    for index in range(1, SHARDS + 1):  # shards priced at the default table: merge prices again
        code, shard, log = run_action(tmp_path / f"shard{index}", fake, capfd, files=files,
                                      **shard_inputs(index))
        assert code == 0, log
        workspaces.append(shard.workspace)
    code, runner, log = run_action(tmp_path / "merge", fake, capfd, replay="", paths="",
                                   merge="shards/*.json", prices="prices.json",
                                   html="evalcheck-report/report.html",
                                   files={**downloaded(workspaces), "prices.json": files["prices.json"]})
    assert code == 1, log
    (comment,) = fake.comments[7]  # the sticky comment, updated by the merge job
    assert FOOTER in comment["body"].replace("\\", "") and FOOTER in runner.summary().replace("\\", "")
    page = (runner.workspace / "evalcheck-report/report.html").read_text()
    assert FOOTER in page
