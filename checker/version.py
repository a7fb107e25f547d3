"""The running evalcheck's version (results metadata, the GitHub client's User-Agent)."""

from __future__ import annotations

# The distribution's name (pyproject.toml): PyPI's `evalcheck` is an unrelated project,
# whose version must never be reported as ours.
DISTRIBUTION = "evalcheck-adk"


def evalcheck_version() -> str | None:
    """The installed evalcheck's version; None in a source checkout never installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return None
