"""The running evalcheck's version (results metadata, the GitHub client's User-Agent)."""

from __future__ import annotations


def evalcheck_version() -> str | None:
    """The installed evalcheck's version; None in a source checkout never installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("evalcheck")
    except PackageNotFoundError:
        return None
