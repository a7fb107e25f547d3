"""Fixtures of the checker-core tests; helpers live in corehelpers.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# Make ``import corehelpers`` work whatever pytest's import mode.
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """An empty repository root (it has a .git folder)."""
    (tmp_path / ".git").mkdir()
    return tmp_path


@pytest.fixture(autouse=True)
def _not_a_pull_request_job(monkeypatch):
    """The tests run the command line as a plain command, even inside a CI job of a pull
    request (there it would take the job's base: checker/inputs/pr_job.py); a test that
    wants a pull-request job sets these itself."""
    for name in ("GITHUB_ACTIONS", "GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)
