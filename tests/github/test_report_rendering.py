"""The comment as a reader's browser lays it out (cmark-gfm + headless chromium): the three
problems of a 60-case suite are on the first screen, the 57 passing cases are folded away.

Needs Debian's cmark-gfm and chromium (scripts/setup.d/40-render.sh installs them in CI);
outside CI the test is skipped when they are missing.
"""

from __future__ import annotations

import os

import pytest

from render_preview import HEIGHT, row_boxes, tools
from test_github_report import comment

if None in tools():
    if os.environ.get("CI") == "true":
        raise RuntimeError("cmark-gfm and chromium are needed in CI: run scripts/setup")
    pytest.skip("cmark-gfm or chromium not installed (scripts/setup.d/40-render.sh)", allow_module_level=True)

PROBLEMS = ["weather_07", "booking_03", "concierge_new_refund"]


def test_the_problems_are_on_the_first_screen_and_passing_rows_are_folded(compared):
    rows = row_boxes(comment(compared))
    by_case = {r["text"]: r for r in rows if r["isCase"]}
    assert len(by_case) == 60  # every case has a row in the page
    for name in PROBLEMS:
        assert by_case[name]["visible"], name
        assert by_case[name]["bottom"] <= HEIGHT, f"{name} ends at {by_case[name]['bottom']}px"
    hidden = [n for n, r in by_case.items() if not r["visible"]]
    assert len(hidden) == 57 and not set(hidden) & set(PROBLEMS)
