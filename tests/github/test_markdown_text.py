"""Untrusted text in the comment cannot reorder what follows it (bidi overrides)."""

from __future__ import annotations

import pytest

from checker.report.markdown import html_text, md_escape
from checker.report.text import printable


@pytest.mark.parametrize("control", ["\u202e", "\u202d", "\u202a", "\u2066", "\u2067", "\u2069"])
def test_bidi_overrides_are_dropped_from_agent_text(control):
    text = f"answer {control}LIAF ssap"
    assert printable(text) == "answer LIAF ssap"
    assert control not in md_escape(text) and control not in html_text(text)


def test_newlines_tabs_and_ordinary_right_to_left_text_are_kept():
    assert printable("a\tb\nשלום") == "a\tb\nשלום"
