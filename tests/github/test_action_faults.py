"""GitHub faults through the action's entrypoint (and `evalcheck publish`): the token never
goes to another origin; broken answers, redirect loops, refused annotation batches, lost
answers and a hanging API are warnings that leave the verdict, the step outputs and the
other publications intact (issue 11, item 4)."""

from __future__ import annotations

import time

from click.testing import CliRunner

from checker.cli import main
from fake_github import Fault
from github_data import realistic_results, write_json
from test_action_attacks import run_action
from test_github_publish_command import HEAD as PUBLISH_HEAD
from test_github_publish_command import workflow_run_env

REPLAY = {"replay": "recorded_runs.json"}


def assert_verdict_and_outputs_intact(code, runner):
    assert code == 1  # the evaluation failed: nothing GitHub answers changes that
    outputs = runner.outputs()
    assert outputs["passed"] == "false"
    assert outputs["results-path"] == "evalcheck-report/results.json"
    assert "Gate failed:" in runner.summary()
    return outputs


def test_next_page_on_another_host_gets_no_token(tmp_path, fake, capfd):
    fake.faults.append(Fault("GET", r"/issues/7/comments$", 200, raw=b"[]", headers={
        "Link": f'<{fake.blob_url}/repos/octo/agents/issues/7/comments?page=2>; rel="next"'}))
    code, runner, log = run_action(tmp_path, fake, capfd, **REPLAY)
    assert fake.downloads == []  # the other host never saw a request, let alone the token
    assert "could not post the PR comment" in log and "refusing to send the token" in log
    assert_verdict_and_outputs_intact(code, runner)
    (check,) = fake.check_runs.values()
    assert check["conclusion"] == "failure"  # the other publications went ahead


def test_redirect_to_another_host_is_not_followed(tmp_path, fake, capfd):
    fake.faults.append(Fault("POST", r"/check-runs$", 307, {"Location": f"{fake.blob_url}/check-runs"}))
    code, runner, log = run_action(tmp_path, fake, capfd, **REPLAY)
    assert fake.downloads == [] and fake.check_runs == {}
    assert "redirected to another host" in log
    outputs = assert_verdict_and_outputs_intact(code, runner)
    assert outputs["comment-url"] == fake.comments[7][0]["html_url"]
    assert "::error file=agent_evals/weather.evalset.json,line=22" in log  # annotations fall back


def test_redirect_loop_is_a_warning(tmp_path, fake, capfd):
    fake.faults.append(Fault("GET", r"/issues/7/comments$", 302,
                             {"Location": "/repos/octo/agents/issues/7/comments"}, times=99))
    code, runner, log = run_action(tmp_path, fake, capfd, **REPLAY)
    assert "redirect loop" in log
    assert_verdict_and_outputs_intact(code, runner)
    assert list(fake.check_runs.values())[0]["conclusion"] == "failure"


def test_2xx_without_json_and_201_without_html_url_are_warnings(tmp_path, fake, capfd):
    fake.faults.append(Fault("POST", r"/check-runs$", 201, raw=b'{"id": 12}'))
    fake.faults.append(Fault("POST", r"/statuses/", 200, raw=b"<html>OK</html>"))
    code, runner, log = run_action(tmp_path, fake, capfd, commit_status="true", **REPLAY)
    assert "answer had no html_url" in log
    assert "without the JSON object expected" in log
    outputs = assert_verdict_and_outputs_intact(code, runner)
    assert outputs["comment-url"] == fake.comments[7][0]["html_url"]
    assert "Traceback" not in log


def test_a_comment_whose_answer_was_lost_is_not_posted_twice(tmp_path, fake, capfd):
    fake.faults.append(Fault("POST", r"/issues/7/comments$", 502, applied=True))
    code, runner, log = run_action(tmp_path, fake, capfd, **REPLAY)
    (comment,) = fake.comments[7]  # created once: found again instead of re-posted
    outputs = assert_verdict_and_outputs_intact(code, runner)
    assert outputs["comment-url"] == comment["html_url"]
    assert "::warning::" not in log


def test_a_check_run_whose_answer_was_lost_is_not_created_twice(tmp_path, fake, capfd):
    fake.faults.append(Fault("POST", r"/check-runs$", 500, applied=True))
    code, runner, _ = run_action(tmp_path, fake, capfd, **REPLAY)
    (check,) = fake.check_runs.values()
    assert check["conclusion"] == "failure" and check["status"] == "completed"
    assert_verdict_and_outputs_intact(code, runner)


def test_a_hanging_api_is_bounded_by_the_publishing_budget(tmp_path, fake, capfd):
    fake.faults.append(Fault("GET", r"/issues/7/comments$", 200, raw=b"[]", delay=8, times=99))
    began = time.monotonic()
    code, runner, log = run_action(tmp_path, fake, capfd, env_extra={"EVALCHECK_PUBLISH_BUDGET": "1.5"},
                                   **REPLAY)
    took = time.monotonic() - began
    assert took < 7, f"publishing took {took:.1f} s with a 1.5 s budget"
    assert "publishing budget of 1.5 s spent" in log
    assert_verdict_and_outputs_intact(code, runner)
    assert "::error file=agent_evals/weather.evalset.json,line=22" in log


def test_a_refused_annotation_batch_leaves_the_check_run_completed(tmp_path, fake):
    data = realistic_results()
    case = data["evalSets"][1]["cases"][0]
    data["evalSets"][1]["cases"] = [dict(case, evalId=f"case_{i}", line=10 + i) for i in range(120)]
    data["summary"].update(cases=123, failed=121)
    fake.pulls[7] = PUBLISH_HEAD
    fake.faults.append(Fault("PATCH", r"/check-runs/\d+$", 422, message="Validation Failed"))
    env = workflow_run_env(tmp_path, fake, pull_requests=[{"number": 7, "head": {"sha": PUBLISH_HEAD}}])
    results = write_json(tmp_path / "results.json", data)
    result = CliRunner().invoke(main, ["publish", "--results", str(results), "--commit-status"], env=env,
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (cid, check), = fake.check_runs.items()
    assert check["status"] == "completed" and check["conclusion"] == "failure"
    assert len(fake.annotations[cid]) == 50  # the first batch; the refused one is not resent
    assert "could not add annotations 51-122 of 122" in result.output and "HTTP 422" in result.output
    assert fake.comments[7] and fake.statuses[0]["state"] == "failure"
    assert (tmp_path / "out.txt").read_text().count("passed") == 1


# --- a full disk (issue 11, item 6): /dev/full answers every write with ENOSPC -------------

def test_a_job_summary_that_cannot_be_written_does_not_stop_the_comment(tmp_path, fake, capfd):
    code, runner, log = run_action(tmp_path, fake, capfd, env_extra={"GITHUB_STEP_SUMMARY": "/dev/full"},
                                   fail_on="never", **REPLAY)
    assert code == 2  # the gate passed (fail-on: never), but an output is missing
    assert log.count("could not write the job summary /dev/full: No space left on device") == 1
    assert "Traceback" not in log
    outputs = runner.outputs()
    assert outputs["passed"] == "false" and outputs["comment-url"] == fake.comments[7][0]["html_url"]
    assert list(fake.check_runs.values())[0]["conclusion"] == "neutral"


def test_a_results_file_that_cannot_be_written_leaves_the_other_outputs(tmp_path, fake, capfd):
    code, runner, log = run_action(tmp_path, fake, capfd, results="/dev/full", **REPLAY)
    assert code == 1
    assert "::error::evalcheck: could not write the results file /dev/full: No space left on device" in log
    outputs = runner.outputs()
    assert outputs["passed"] == "false"
    assert "IN\\_ORDER: 1 expected call not matched" in (runner.workspace / outputs["markdown-path"]).read_text()
    assert fake.comments[7] and "Gate failed:" in runner.summary()


def test_the_cli_reports_each_unwritable_output_once_and_writes_the_rest(tmp_path):
    from runner_env import EXAMPLE

    report = tmp_path / "report.md"
    result = CliRunner().invoke(main, ["run", str(EXAMPLE / "agent_evals"), "--replay",
                                       str(EXAMPLE / "recorded_runs.json"), "--results", "/dev/full",
                                       "--markdown", str(report), "--junit", str(tmp_path / "dir" / "x.xml")])
    assert result.exit_code == 2, result.output
    log = result.output  # stdout and stderr
    assert log.count("could not write the results file /dev/full: No space left on device") == 1
    assert "Traceback" not in log and "gate failed (fail-on: failure)" in log  # the verdict line is still printed
    assert report.read_text().startswith("#") and (tmp_path / "dir" / "x.xml").exists()
