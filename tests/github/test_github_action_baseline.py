"""The Action's `baseline` input end to end, in-process, against the fake GitHub: the merge
base's results artifact found and compared with, how far behind it is, no baseline as a
note, a fork's read-only token, `off` and a path."""

from __future__ import annotations

import io
import json
import tempfile
import zipfile
from pathlib import Path

from checker.models.results import Results
from fake_github import FakeGitHub
from github_data import pr_event
from runner_env import EXAMPLE
from test_github_action import HEAD, run_action

BASE_SHA = "b" * 40
MAIN = [f"{i:02d}" + "c" * 38 for i in range(30)]  # main, newest first; MAIN[3] the merge base
MERGE_BASE = MAIN[3]


def event(fork: bool = False) -> dict:
    data = pr_event(head_sha=HEAD, fork=fork)
    data["pull_request"]["base"].update(ref="main", sha=BASE_SHA)
    return data


def main_results_zip() -> bytes:
    """What push-main.yml uploads: evalcheck-report/ with main's results.json at the top."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("results.json", (EXAMPLE / "baseline" / "results.json").read_text())
        archive.writestr("report.md", "## main's report")
    return buffer.getvalue()


def on_main(fake: FakeGitHub) -> FakeGitHub:
    fake.history, fake.merge_base = MAIN, MERGE_BASE
    return fake


def results_of(runner) -> dict:
    return json.loads((runner.workspace / "evalcheck-report" / "results.json").read_text())


def test_the_merge_base_results_are_the_baseline(tmp_path, fake, capfd, monkeypatch):
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))  # where the download goes
    made, mkdtemp = [], tempfile.mkdtemp
    monkeypatch.setattr(tempfile, "mkdtemp", lambda **kw: made.append(mkdtemp(**kw)) or made[-1])
    on_main(fake).add_artifact(MERGE_BASE, main_results_zip())
    code, runner, log = run_action(tmp_path, fake, capfd, event=event())
    assert code == 1  # fail-on: failure still fails on compare_cities' miss
    assert f"baseline: results of main at {MERGE_BASE[:7]} (the merge base)" in log
    comparison = results_of(runner)["comparison"]
    assert comparison["baseline"] == {"ref": "main", "commit": MERGE_BASE, "commitsBehind": 0}
    assert comparison["summary"]["unchanged"] == 2
    (comment,) = fake.comments[7]
    body = comment["body"]
    assert (f"No regressions, 1 flaky — compared with `main` at [{MERGE_BASE[:7]}](https://github.com/octo/agents/commit/"
            f"{MERGE_BASE}) (merge base).") in body
    assert "🎲 flaky 1/2 <sub>95% CI 0.09–0.91; baseline 2/2</sub>" in body
    assert "within noise, p of the pass rate 0.50" in body
    (download,) = fake.downloads
    assert "authorization" not in download.headers
    # The log names the baseline's branch and commit, not the temporary copy's path ...
    assert f"compared with baseline main at {MERGE_BASE[:7]}: 0 regressed" in log
    assert "evalcheck-baseline-" not in log
    # ... downloaded outside the workspace (out of the agent's reach), removed after the run.
    (copy,) = [Path(d) for d in made if Path(d).name.startswith("evalcheck-baseline-")]
    assert copy.parent == private_tmp and not copy.exists()
    assert not list(runner.workspace.glob("**/*.zip"))


def test_walk_back_says_how_far_behind_and_regression_gate_passes(tmp_path, fake, capfd):
    on_main(fake).add_artifact(MAIN[7], main_results_zip())
    code, runner, log = run_action(tmp_path, fake, capfd, event=event(), fail_on="regression")
    assert code == 0  # compare_cities got flaky, not worse beyond noise: no regression
    assert "(4 commits behind the merge base)" in log
    assert results_of(runner)["comparison"]["baseline"]["commitsBehind"] == 4
    assert "(4 commits behind the merge base)." in fake.comments[7][0]["body"]
    outputs = runner.outputs()
    assert outputs["passed"] == "false"  # the suite did not pass; the gate did


def test_no_baseline_is_a_note_not_an_error(tmp_path, fake, capfd):
    on_main(fake)
    code, runner, log = run_action(tmp_path, fake, capfd, event=event(), fail_on="regression")
    assert code == 1  # without a baseline, regression gates like failure (and says so)
    data = results_of(runner)
    assert "comparison" not in data
    (note,) = data["metadata"]["baselineNotes"]
    assert "no unexpired artifact named 'evalcheck-results'" in note
    body = fake.comments[7][0]["body"]
    assert "not compared with a baseline (see the note below)" in body
    assert "> - no baseline: no unexpired artifact named 'evalcheck-results'" in body
    assert "::error" not in log.split("evalcheck: evaluation")[0]  # the search raised nothing


def test_a_fork_prs_read_only_token_gets_the_baseline(tmp_path, capfd):
    with FakeGitHub(read_only=True) as fork:
        on_main(fork).add_artifact(MERGE_BASE, main_results_zip())
        code, runner, _ = run_action(tmp_path, fork, capfd, event=event(fork=True))
        assert results_of(runner)["comparison"]["baseline"]["commit"] == MERGE_BASE
        assert fork.comments == {}  # the writes were refused, as for any fork PR
        assert fork.violations == []


def test_baseline_off_and_a_path(tmp_path, fake, capfd):
    on_main(fake).add_artifact(MERGE_BASE, main_results_zip())
    run_action(tmp_path / "off", fake, capfd, event=event(), baseline="off")
    assert not any("artifacts" in r.path or "compare" in r.path for r in fake.requests)
    code, runner, _ = run_action(tmp_path / "path", fake, capfd, event=event(), checkout=True,
                                 baseline="baseline/results.json", verdict="all-runs")
    data = results_of(runner)
    assert data["comparison"]["baseline"]["path"].endswith("baseline/results.json")
    assert data["verdictRule"] == "all-runs"
    assert not any("artifacts" in r.path for r in fake.requests)
    Results.model_validate(data)


def test_a_bad_verdict_input_is_bad_input(tmp_path, fake, capfd):
    code, _, log = run_action(tmp_path, fake, capfd, event=event(), verdict="most")
    assert code == 2 and "input 'verdict'" in log and "k-of-n:2" in log


def test_an_artifact_the_loader_refuses_is_a_note_not_bad_input(tmp_path, fake, capfd):
    future = json.loads((EXAMPLE / "baseline" / "results.json").read_text())
    future["version"] = 2  # written by a newer evalcheck
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("results.json", json.dumps(future))
    on_main(fake).add_artifact(MERGE_BASE, buffer.getvalue())
    code, runner, _ = run_action(tmp_path, fake, capfd, event=event())
    assert code == 1  # the evaluation's verdict, not 2 (bad input)
    notes = results_of(runner)["metadata"]["baselineNotes"]
    assert any("skipped: results.json at $.version" in n for n in notes)


def test_one_shards_artifact_is_skipped_with_a_note_and_an_older_whole_one_is_used(tmp_path, fake, capfd):
    shard = json.loads((EXAMPLE / "baseline" / "results.json").read_text())
    shard["shard"] = {"index": 1, "count": 2, "selection": "sha256:x"}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("results.json", json.dumps(shard))
    on_main(fake).add_artifact(MERGE_BASE, buffer.getvalue())
    fake.add_artifact(MAIN[5], main_results_zip())
    code, runner, _ = run_action(tmp_path, fake, capfd, event=event())
    assert code == 1
    results = results_of(runner)
    assert any("one shard's results (shard 1/2)" in n for n in results["metadata"]["baselineNotes"])
    assert results["comparison"]["baseline"]["commit"] == MAIN[5]


def test_baseline_auto_pools_up_to_baseline_depth_results_of_main(tmp_path, fake, capfd):
    """The merge base's results, then older commits' on the base branch, up to
    baseline-depth; the log, the results and the report say which were pooled."""
    on_main(fake)
    for sha in (MERGE_BASE, MAIN[5], MAIN[6], MAIN[9]):
        fake.add_artifact(sha, main_results_zip())
    code, runner, log = run_action(tmp_path, fake, capfd, event=event(), fail_on="regression",
                                   baseline_depth="3")
    assert code == 0, log
    assert (f"baseline: results of main at {MERGE_BASE[:7]} (the merge base)") in log
    assert f"pooled with 2 older results of main ({MAIN[5][:7]}, {MAIN[6][:7]})" in log
    comparison = results_of(runner)["comparison"]
    assert comparison["baseline"]["commit"] == MERGE_BASE
    assert [h["commit"] for h in comparison["baseline"]["history"]] == [MERGE_BASE, MAIN[5], MAIN[6]]
    assert len(fake.downloads) == 3  # the fourth (MAIN[9]) is past the depth: not fetched
    cases = results_of(runner)["evalSets"][0]["cases"]
    assert all(c["baselinePool"] == [0, 1, 2] for c in cases)
    (comment,) = fake.comments[7]
    assert "3 results of main pooled" in comment["body"]
    assert "## ✅ Gate passed: no " in comment["body"]
