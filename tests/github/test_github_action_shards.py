"""The Action on a matrix: shard jobs (shard: I/N, publish: false) post nothing; one merge
job (merge: GLOB) publishes one comment, one check run with every shard's annotations, one
status, one job summary and the outputs. (tests/container runs the same in the image.)"""

from __future__ import annotations

import io
import json
import shlex
import sys
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from corehelpers import run_cli  # noqa: E402

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
    # A shard reads (the baseline search: none here) and writes nothing.
    assert fake.writes() == [] and all("artifacts" in r.path or "compare" in r.path for r in fake.requests)

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
    assert runner.summary().count("Gate failed:") == 1
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


TRAVEL_AGENT = (f"{shlex.quote(sys.executable)} "
                f"{shlex.quote(str(Path(__file__).parents[1] / 'compare' / 'agents' / 'travel_agent.py'))}")
TRAVEL_SHARDS = 4


def _travel_suite() -> dict[str, str]:
    """Issue 40's new user's suite: lisbon_usd should call currency_agent, seven more cases."""
    def one(eval_id: str, tool: str) -> dict:
        return {"eval_id": eval_id, "conversation": [{
            "invocation_id": "t1", "user_content": {"role": "user", "parts": [{"text": f"{eval_id}?"}]},
            "final_response": {"role": "model", "parts": [{"text": "Done."}]},
            "intermediate_data": {"tool_uses": [{"name": tool, "args": {"city": eval_id.split("_")[0]}}]}}]}

    cases = [one("lisbon_usd", "currency_agent"), one("porto_flaky", "get_forecast")]
    cases += [one(f"{c}_weather", "get_forecast") for c in ("paris", "rome", "oslo", "nice", "bern", "kyiv")]
    return {"evals/travel.evalset.json": json.dumps({"eval_set_id": "travel", "eval_cases": cases}),
            "evals/test_config.json": json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0}})}


def test_shard_jobs_confirm_against_the_baseline_they_find_and_the_merge_job_decides(
        tmp_path, fake, capfd, monkeypatch):
    """The matrix of docs/sharding.md on a pull request that breaks one case (lisbon_usd
    calls book_hotel in every run; main called currency_agent in 2 of 3): each shard job
    finds main's results artifact (baseline: auto), screens and confirms its own cases
    against it; the merge job finds the same artifact and fails the gate naming the case."""
    from test_github_action_baseline import MERGE_BASE, event, on_main

    monkeypatch.setenv("TRAVEL_SEED", "s")
    main_dir = tmp_path / "main"
    for name, text in _travel_suite().items():
        (main_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (main_dir / name).write_text(text)
    (main_dir / ".git").mkdir()
    monkeypatch.setenv("TRAVEL_BREAK", "0")
    done = run_cli(["run", "evals", "--agent-command", TRAVEL_AGENT, "--num-runs", "3",
                    "--results", "main.json"], main_dir)
    assert done.code == 1, done.output
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("results.json", (main_dir / "main.json").read_text())
    on_main(fake).add_artifact(MERGE_BASE, buffer.getvalue())

    monkeypatch.setenv("TRAVEL_BREAK", "1")
    workspaces = []
    for index in range(1, TRAVEL_SHARDS + 1):
        code, runner, log = run_action(
            tmp_path / f"shard{index}", fake, capfd, event=event(), files=_travel_suite(), replay="",
            paths="evals", **{"agent-command": TRAVEL_AGENT, "num-runs": "3", "fail-on": "regression",
                              "shard": f"{index}/{TRAVEL_SHARDS}", "publish": "false",
                              "results": f"evalcheck-report/results-{index}.json"})
        assert code == 0, log
        assert f"baseline: results of main at {MERGE_BASE[:7]} (the merge base)" in log
        shard = json.loads((runner.workspace / f"evalcheck-report/results-{index}.json").read_text())
        assert "comparison" not in shard and shard["shard"]["family"]["confirmRuns"] == 60
        workspaces.append(runner.workspace)
    assert fake.writes() == []

    code, runner, log = run_action(tmp_path / "merge", fake, capfd, event=event(), replay="", paths="",
                                   merge="shards/*.json", fail_on="regression",
                                   files={**_travel_suite(), **downloaded(workspaces)})
    assert code == 1, log
    merged = json.loads((runner.workspace / "evalcheck-report/results.json").read_text())
    cases = {c["evalId"]: c for s in merged["evalSets"] for c in s["cases"]}
    assert cases["lisbon_usd"]["change"] == "regressed"
    assert merged["comparison"]["familywise"]["confirmed"] is True
    assert merged["comparison"]["baseline"]["commit"] == MERGE_BASE
    (comment,) = fake.comments[7]
    assert "Gate failed: 1 case regressed (lisbon\\_usd)." in comment["body"]
