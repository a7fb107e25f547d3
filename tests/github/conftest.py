"""Fixtures of the GitHub publishing tests (defined in github_data.py)."""

from github_data import compared, fake, judged, results  # noqa: F401
