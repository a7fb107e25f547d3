"""ruff and mypy, as pyproject.toml configures them, on checker/, evalcheck_adk_bridge/ and
evalcheck_adk_ts/: a finding fails the README's test command, and so CI (.ci/run).

mypy keeps its cache in .mypy_cache (gitignored): a run after the first reads only what changed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("checker", "evalcheck_adk_bridge", "evalcheck_adk_ts")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, check=False)


def test_ruff_finds_nothing():
    done = _run("ruff", "check", "--no-cache", *PACKAGES)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_nothing():
    done = _run("mypy")  # the files and options: pyproject.toml's [tool.mypy]
    assert done.returncode == 0, done.stdout + done.stderr
