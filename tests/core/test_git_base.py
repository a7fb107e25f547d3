"""A file as the base branch has it (checker/inputs/git_base.py): read from the merge base
of REF and HEAD with hardened git, never from the pull request's work tree or commits."""

from __future__ import annotations

import os

import pytest

from changed_repo import commit, git
from checker.errors import InputError
from checker.inputs.git_base import file_at_merge_base

PATH = ".evalcheck/quarantine.yml"


def read(repo, ref="main"):
    return file_at_merge_base(ref, repo, PATH, option="--quarantine-ref", fix="check out main")


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    (repo / ".evalcheck").mkdir()
    (repo / ".evalcheck" / "quarantine.yml").write_text("main's\n")
    commit(repo, "main")
    return repo


def test_the_merge_base_version_is_read_not_the_pull_requests_nor_mains_newer_one(repo):
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", "pr")
    (repo / PATH).write_text("the PR's, committed\n")
    commit(repo, "pr edits the file")
    git(repo, "checkout", "-q", "main")
    (repo / PATH).write_text("main's, after the branch\n")
    commit(repo, "main moves on")
    git(repo, "checkout", "-q", "pr")
    (repo / PATH).write_text("the PR's, uncommitted\n")
    found = read(repo)
    assert (found.commit, found.data) == (base, b"main's\n")


def test_a_file_the_merge_base_lacks_is_none_even_when_the_pull_request_adds_it(repo):
    git(repo, "rm", "-q", PATH)
    base = commit(repo, "no quarantine file")
    git(repo, "checkout", "-q", "-b", "pr")
    (repo / ".evalcheck").mkdir()
    (repo / PATH).write_text("- case: '*'\n")
    commit(repo, "pr adds one")
    assert read(repo).data is None and read(repo).commit == base


def test_a_symbolic_link_or_a_folder_at_the_path_is_bad_input(repo):
    (repo / PATH).unlink()
    os.symlink("/etc/passwd", repo / PATH)
    commit(repo, "a link")
    with pytest.raises(InputError, match="is a symbolic link, not a file"):
        read(repo)
    (repo / PATH).unlink()
    (repo / PATH).mkdir()
    (repo / PATH / "x").write_text("x")
    commit(repo, "a folder")
    with pytest.raises(InputError, match=r"is a tree \(mode 040000\), not a file"):
        read(repo)


def test_bad_refs_and_a_callers_git_variables(repo, tmp_path, monkeypatch):
    for ref, message in (("nope", "'nope' names no commit"), ("-x", "is not a git revision"),
                         ("a b", "is not a git revision")):
        with pytest.raises(InputError, match=f"--quarantine-ref.*{message}|{message}"):
            read(repo, ref)
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))  # would point git at another repository
    assert read(repo).data == b"main's\n"
    with pytest.raises(InputError, match="not a git repository"):
        read(tmp_path)
