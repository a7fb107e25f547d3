"""User docs (README, docs/, the Action's input descriptions, the example workflows) speak to
users about the product as it is: no project history - no issue numbers, no "wave" of
work - which means nothing to someone reading them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
USER_DOCS = [ROOT / "README.md", ROOT / "action.yml", *sorted((ROOT / "docs").rglob("*.md")),
             *sorted((ROOT / "examples").rglob("*.md")), *sorted((ROOT / "examples").rglob("*.yml"))]

# "issue 14", "issues 14 and 25", "Issue #3", "#25" (a bare issue reference; not an anchor
# like (#trust-model) or an HTML entity &#39;), "wave", "waves", "wave-3", "3rd wave".
HISTORY = re.compile(r"\bissues?\s*#?\d+|(?<![\w&#/])#\d+\b|\bwaves?\b|\bwave-\d", re.I)


def history(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if HISTORY.search(line)]


@pytest.mark.parametrize("line", [
    "| part | issue 14, CI's base then | issue 25 (slim base) |",
    "the `docker load` of the image of Issue #14",
    "The wave-3 contract's default of 20",
    "added in the fourth wave",
    "Waves of work",
    "fixed by #25",
])
def test_the_scan_finds_project_history(line):
    assert history(line) == [line]


@pytest.mark.parametrize("line", [
    "([how](docs/github-action.md#trust-model))",
    "it cannot issue workflow commands",
    "needs issues=write; pull_requests=write",
    "a label's colour &#35;ff0000",
    "`/repos/{owner}/{repo}/issues/{issue_number}/timeline`",
    "a microwave oven",
])
def test_the_scan_passes_plain_text(line):
    assert history(line) == []


def test_user_docs_carry_no_project_history():
    assert ROOT / "docs" / "github-action.md" in USER_DOCS
    found = [f"{path.relative_to(ROOT)}: {line}" for path in USER_DOCS
             for line in history(path.read_text(encoding="utf-8"))]
    assert not found, "project history in user docs:\n" + "\n".join(found)


# A dash where a colon belongs: "`baseline - auto`", "(needs checks - write)", "PR comment -
# `update` ...", "(default - what fits ...)". YAML needs such a description quoted, not the
# colon replaced.
DASH_FOR_COLON = re.compile(r"`[^`]* - [^`]*`|\((?:default|needs)\b[^)]*? - |^[^.:;,()]{1,40}? - ")


@pytest.mark.parametrize("text, bad", [
    ("With `baseline - auto`, how many results", True),
    ("Create a check run (needs checks - write).", True),
    ("PR comment - `update` one sticky comment", True),
    ("Eval case runs at once (default - what fits the agent)", True),
    ("With `baseline: auto`, how many results", False),
    ("Create a check run (needs `checks: write`).", False),
    ("Eval files, one per line; a dash - like this - later in a sentence is prose.", False),
])
def test_the_dash_scan(text, bad):
    assert bool(DASH_FOR_COLON.search(text)) is bad


def test_action_input_descriptions_use_colons_not_dashes():
    import yaml

    manifest = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    texts = {f"{kind}.{name}": spec.get("description", "") for kind in ("inputs", "outputs")
             for name, spec in manifest[kind].items()}
    assert texts["inputs.baseline-depth"].startswith("With `baseline: auto`,")
    bad = {name: text for name, text in texts.items() if DASH_FOR_COLON.search(text)}
    assert not bad, bad
