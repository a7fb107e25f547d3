"""The automatic baseline (checker/action/github/baseline.py) against the fake GitHub: merge base,
walk-back, expired and foreign artifacts, the download host, read-only tokens, bad zips."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from checker.action.github.baseline import ARTIFACT_NAME, MAX_WALK_BACK, find_baseline, results_from_zip
from checker.action.github.client import GitHubClient
from fake_github import FakeGitHub, Fault
from github_data import realistic_results

BASE, HEAD = "b" * 40, "a" * 40
# the base branch, newest first: c00 is the tip, c05 the merge base
HISTORY = [f"c{i:02d}" + "0" * 37 for i in range(40)]
MERGE_BASE = HISTORY[5]


def artifact_zip(results: dict | None = None, *, name: str = "results.json", extra: dict | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        if results is not None:
            archive.writestr(name, json.dumps(results))
        archive.writestr("report.md", "## report")
        for member, data in (extra or {}).items():
            archive.writestr(member, data)
    return buffer.getvalue()


def baseline_results(marker: str) -> dict:
    data = realistic_results()
    data["metadata"] = {"marker": marker}
    return data


@pytest.fixture
def repo(fake: FakeGitHub) -> FakeGitHub:
    fake.history = HISTORY
    fake.merge_base = MERGE_BASE
    return fake


def search(fake: FakeGitHub, tmp_path, token: str | None = None):
    with GitHubClient(token or fake.token, fake.base_url, sleep=lambda s: None) as client:
        return find_baseline(client, "octo", "agents", base_ref="main", base_sha=BASE, head_sha=HEAD,
                             dest=tmp_path / "baseline" / "results.json")


def found_marker(found) -> str:
    return json.loads(found.path.read_text())["metadata"]["marker"]


def test_merge_base_results_are_found_and_downloaded_without_the_token(repo, tmp_path):
    repo.add_artifact(HISTORY[3], artifact_zip(baseline_results("newer")))
    repo.add_artifact(MERGE_BASE, artifact_zip(baseline_results("merge base")))
    result = search(repo, tmp_path)
    assert result.found is not None, result.notes
    assert (result.found.commit, result.found.commits_behind) == (MERGE_BASE, 0)
    assert found_marker(result.found) == "merge base"
    assert result.notes == []
    compare = [r for r in repo.requests if "/compare/" in r.path]
    assert [r.path for r in compare] == [f"/repos/octo/agents/compare/{BASE}...{HEAD}"]
    listing = [r for r in repo.requests if r.path.endswith("/actions/artifacts")]
    assert listing[0].query["name"] == [ARTIFACT_NAME] and listing[0].query["per_page"] == ["100"]
    assert not any(r.path.endswith("/commits") for r in repo.requests)  # no walk needed
    (download,) = repo.downloads
    assert "authorization" not in download.headers
    assert not repo.blob_url.startswith(repo.base_url)  # really another origin


def test_walks_back_the_base_branch_and_says_how_far(repo, tmp_path):
    repo.add_artifact(HISTORY[9], artifact_zip(baseline_results("four behind")))
    repo.add_artifact(HISTORY[12], artifact_zip(baseline_results("seven behind")))
    repo.add_artifact(HISTORY[2], artifact_zip(baseline_results("after the merge base")))
    result = search(repo, tmp_path)
    assert result.found is not None
    assert (result.found.commit, result.found.commits_behind) == (HISTORY[9], 4)
    assert found_marker(result.found) == "four behind"
    (walk,) = [r for r in repo.requests if r.path.endswith("/commits")]
    assert walk.query["sha"] == [MERGE_BASE] and walk.query["per_page"] == [str(MAX_WALK_BACK + 1)]


def test_at_most_twenty_commits_back_then_a_note(repo, tmp_path):
    repo.add_artifact(HISTORY[5 + MAX_WALK_BACK + 1], artifact_zip(baseline_results("too old")))
    result = search(repo, tmp_path)
    assert result.found is None
    assert any("none of the last 21 commits of main" in n and MERGE_BASE[:7] in n for n in result.notes)
    assert repo.downloads == []


def test_no_artifact_at_all_is_a_note_not_an_error(repo, tmp_path):
    result = search(repo, tmp_path)
    assert result.found is None
    (note,) = result.notes
    assert "no baseline" in note and ARTIFACT_NAME in note and "docs/github-action.md#baseline" in note
    assert not (tmp_path / "baseline").exists()


def test_expired_and_fork_artifacts_are_skipped(repo, tmp_path):
    repo.add_artifact(HISTORY[6], artifact_zip(baseline_results("one behind")))
    repo.add_artifact(MERGE_BASE, artifact_zip(baseline_results("expired")), expired=True)
    repo.add_artifact(MERGE_BASE, artifact_zip(baseline_results("forged by a fork")), from_fork=True,
                      head_branch="main", created_at="2026-11-22T00:00:00Z")
    result = search(repo, tmp_path)
    assert result.found is not None
    assert (result.found.commit, result.found.commits_behind) == (HISTORY[6], 1)
    assert found_marker(result.found) == "one behind"
    assert any("1 expired artifact" in n for n in result.notes)
    assert len(repo.downloads) == 1


def test_the_base_branch_run_wins_over_other_runs_of_the_same_commit(repo, tmp_path):
    repo.add_artifact(MERGE_BASE, artifact_zip(baseline_results("main")), created_at="2026-11-20T00:00:00Z")
    repo.add_artifact(MERGE_BASE, artifact_zip(baseline_results("a branch")), head_branch="feature",
                      created_at="2026-11-21T00:00:00Z")
    assert found_marker(search(repo, tmp_path).found) == "main"


def test_a_fork_prs_read_only_token_still_gets_its_baseline(tmp_path):
    with FakeGitHub(read_only=True) as fork:
        fork.history, fork.merge_base = HISTORY, MERGE_BASE
        fork.add_artifact(MERGE_BASE, artifact_zip(baseline_results("merge base")))
        result = search(fork, tmp_path)
        assert result.found is not None and result.found.commits_behind == 0
        assert fork.writes() == [] and fork.violations == []


def test_a_token_without_actions_read_gives_a_note(repo, tmp_path):
    repo.add_artifact(MERGE_BASE, artifact_zip(baseline_results("merge base")))
    repo.faults.append(Fault("GET", r"/actions/artifacts$", 403, {"x-accepted-github-permissions": "actions=read"},
                             "Resource not accessible by integration"))
    result = search(repo, tmp_path)
    assert result.found is None
    (note,) = result.notes
    assert "HTTP 403" in note and "actions=read" in note and "`actions: read`" in note


def test_unknown_merge_base_falls_back_to_the_base_commit(repo, tmp_path):
    repo.merge_base = None
    repo.history = [BASE, *HISTORY]
    repo.add_artifact(BASE, artifact_zip(baseline_results("base")))
    result = search(repo, tmp_path)
    assert result.found is not None and result.found.commit == BASE
    assert any("merge base not found (HTTP 404)" in n for n in result.notes)


def test_an_artifact_without_usable_results_is_skipped_for_an_older_one(repo, tmp_path):
    repo.add_artifact(HISTORY[7], artifact_zip(baseline_results("two behind")))
    repo.add_artifact(HISTORY[6], artifact_zip({"not": "results"}))
    repo.add_artifact(MERGE_BASE, artifact_zip(None))
    result = search(repo, tmp_path)
    assert result.found is not None and result.found.commits_behind == 2
    assert any("no results.json" in n for n in result.notes)
    # what --baseline would have refused: skipped with the loader's reason, not bad input
    assert any(n.startswith("artifact ") and "skipped: results.json at $.version" in n for n in result.notes)


def test_results_from_zip_never_uses_member_names_as_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = artifact_zip(extra={"../../escape/results.json": "{}", "/abs/results.json": "{}"})
    assert results_from_zip(data) == "{}"  # read, not extracted
    assert list(tmp_path.iterdir()) == []
    top = artifact_zip({"a": 1}, extra={"deep/dir/results.json": "{}"})
    assert json.loads(results_from_zip(top)) == {"a": 1}  # the top-level one wins


def test_results_from_zip_bounds_sizes(monkeypatch):
    import checker.action.github.baseline as baseline

    monkeypatch.setattr(baseline, "MAX_RESULTS_BYTES", 1000)
    bomb = artifact_zip(extra={"results.json": " " * 100_000})  # deflates to almost nothing
    with pytest.raises(ValueError, match="larger than 1000 bytes"):
        results_from_zip(bomb)
    monkeypatch.setattr(baseline, "MAX_MEMBERS", 3)
    with pytest.raises(ValueError, match="more than 3 entries"):
        results_from_zip(artifact_zip({}, extra={"a": "", "b": ""}))
    with pytest.raises(zipfile.BadZipFile):
        results_from_zip(b"not a zip")


def test_an_oversized_download_is_refused(repo, tmp_path, monkeypatch):
    import checker.action.github.baseline as baseline

    monkeypatch.setattr(baseline, "MAX_ZIP_BYTES", 100)
    repo.add_artifact(MERGE_BASE, artifact_zip(baseline_results("big")))
    result = search(repo, tmp_path)
    assert result.found is None
    assert any("larger than 100 bytes" in n for n in result.notes)


# --- issue 22: only main's own runs are a baseline ------------------------------------------

def test_another_branchs_pull_request_run_at_the_merge_base_is_never_a_baseline(repo, tmp_path):
    """A pull_request run on another branch whose head is the merge base uploaded a forged
    artifact; main's own for that commit is missing. It was taken as main's results."""
    repo.add_artifact(MERGE_BASE, artifact_zip(baseline_results("forged")), head_branch="feature",
                      event="pull_request")
    result = search(repo, tmp_path)
    assert result.found is None, result.notes
    assert not repo.downloads


def test_a_pull_request_run_named_as_main_is_not_a_baseline(repo, tmp_path):
    """The artifact's workflow_run says head_branch main, but the run itself is a
    pull_request (a PR from a branch called main): the run's own event decides."""
    repo.add_artifact(MERGE_BASE, artifact_zip(baseline_results("forged")), event="pull_request")
    result = search(repo, tmp_path)
    assert result.found is None, result.notes
    assert any("uploaded by a pull_request run, not a push" in n for n in result.notes), result.notes
    assert not repo.downloads


@pytest.mark.parametrize("missing", ["head_repository_id", "repository_id", "head_branch"])
def test_an_artifact_whose_run_leaves_out_where_it_came_from_is_not_a_baseline(repo, tmp_path, missing):
    """A fork artifact whose workflow_run omits head_repository_id (optional in GitHub's
    description) passed the fork filter: now a missing field fails closed."""
    repo.add_artifact(MERGE_BASE, artifact_zip(baseline_results("forged")), from_fork=True,
                      omit=(missing,))
    result = search(repo, tmp_path)
    assert result.found is None, result.notes
    assert not repo.downloads


def test_mains_artifact_on_the_second_page_is_found_under_a_hundred_newer_forgeries(repo, tmp_path):
    """100 newer artifacts (here: another branch's pull_request runs) pushed main's off the
    one page that was read; the forged one for the merge base was used."""
    repo.add_artifact(MERGE_BASE, artifact_zip(baseline_results("main")), created_at="2026-11-01T00:00:00Z")
    for i in range(100):
        repo.add_artifact(HISTORY[5 + i % 3], artifact_zip(baseline_results("forged")),
                          head_branch=f"pr-{i}", event="pull_request", created_at="2026-11-25T00:00:00Z")
    result = search(repo, tmp_path)
    assert result.found is not None, result.notes
    assert found_marker(result.found) == "main" and result.found.event == "push"
    pages = [r for r in repo.requests if r.path.endswith("/actions/artifacts")]
    assert len(pages) == 2 and repo.violations == []
