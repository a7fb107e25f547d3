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
