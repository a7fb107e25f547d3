"""Every relative link in README.md and docs/*.md resolves: the file exists, and an
#anchor names a heading of the target page (slugged as GitHub slugs headings)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$", re.M)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lowercased, punctuation removed
    (except - and _), each space a hyphen."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # [text](url) -> text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for _, heading in HEADING.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def relative_links(page: Path) -> list[str]:
    text = CODE_SPAN.sub("", FENCE.sub("", page.read_text(encoding="utf-8")))
    return [target for target in LINK.findall(text)
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I)]  # http:, mailto:, ...


def test_the_slugs_match_github():
    assert slug("`safety_v1`: Vertex AI or a Gemini judge") == "safety_v1-vertex-ai-or-a-gemini-judge"
    assert slug("Conversation scenarios (simulated users)") == "conversation-scenarios-simulated-users"
    assert slug("The file format, version 1") == "the-file-format-version-1"
    assert slug("Comparing with `main`, shards") == "comparing-with-main-shards"


def test_the_checker_finds_broken_links(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[ok](#title) [bad](#nope) [gone](missing.md)\n"
                    "`[not a link](nowhere.md)`\n```\n[nor this](nowhere.md)\n```\n")
    assert relative_links(page) == ["#title", "#nope", "missing.md"]
    assert anchors(page) == {"title"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading with the anchor #{anchor} in {resolved.name}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_readme_is_a_short_front_door():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    # A table of contents: it links to every section of the page.
    toc = readme.split("\n## ", 1)[0]
    sections = {slug(h) for level, h in HEADING.findall(FENCE.sub("", readme)) if level == "##"}
    assert sections and all(f"(#{s})" in toc for s in sections), sections


def test_every_run_option_is_in_the_command_line_docs():
    """docs/command-line.md's option table lists exactly the options of `evalcheck run`."""
    from checker.cli import main

    options = {name for param in main.commands["run"].params for name in param.opts
               if name.startswith("--")}
    text = (ROOT / "docs" / "command-line.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `(--[a-z-]+)", text, re.M))
    assert options - {"--help"} == documented


def test_every_docs_page_is_in_the_readme_documentation_list():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Documentation\n", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^- \[[^\]]*\]\((docs/[^)#]+\.md)\)", section, re.M))
    pages = {f"docs/{page.name}" for page in PAGES[1:]}
    assert "docs/judge-limits.md" in pages and pages == listed, {
        "not listed": sorted(pages - listed), "no such page": sorted(listed - pages)}


# A file of this repository named in prose or code (checker/limits.py, scripts/setup, ...).
CITED = re.compile(r"(?<![\w/.-])((?:checker|scripts|tests|examples|bench|tools|docs|evalcheck_adk_bridge"
                   r"|\.github|\.ci)/[\w./-]*[\w/])")


def cited_files(page: Path) -> list[str]:
    return CITED.findall(page.read_text(encoding="utf-8"))


def test_the_citation_finder_finds_paths(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("see `checker/limits.py`, (scripts/setup) and tests/core/; not my/checker/x.py\n")
    assert cited_files(page) == ["checker/limits.py", "scripts/setup", "tests/core/"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_cite_only_what_the_repository_holds(page):
    """A file the page names exists (from the repository root or the page's folder), and no
    page cites a document users do not have (the project's internal CONTRACT)."""
    text = page.read_text(encoding="utf-8")
    missing = [p for p in cited_files(page) if not (ROOT / p).exists() and not (page.parent / p).exists()]
    assert not missing, f"{page.relative_to(ROOT)} names files that do not exist: {missing}"
    assert not re.search(r"\bCONTRACT\b", text), f"{page.relative_to(ROOT)} cites the CONTRACT, not in the repository"


def option_defaults(text: str, name: str) -> dict[str, str]:
    """{option: default} of the markdown table rows whose first cell matches ``name``."""
    found = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        match = re.fullmatch(name, cells[0]) if line.startswith("| `") and len(cells) >= 3 else None
        if match:
            found[match.group(1)] = cells[-1].replace("`", "").replace("--", "")
    return found


def test_the_readme_and_the_command_line_docs_give_the_same_defaults():
    """An Action input and the option of the same name have the same documented default,
    except where the Action's differs on purpose (it writes its reports to
    evalcheck-report/, finds main's results by itself, and reads the accept label on every pull
    request, where the command line reads GitHub only when asked) or the README says what empty means."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8").split("\nOutputs:", 1)[0]
    inputs = option_defaults(readme, r"`([a-z-]+)`")
    options = option_defaults((ROOT / "docs" / "command-line.md").read_text(encoding="utf-8"),
                              r"`--([a-z-]+)(?: [A-Z/]+)?`")
    assert {"num-runs", "max-runs", "verdict"} <= set(inputs) & set(options)
    differ = {name for name in set(inputs) & set(options) if inputs[name] != options[name]}
    assert differ == {"baseline", "results", "markdown", "config", "template", "accept-label"}, {
        name: (inputs[name], options[name]) for name in differ}
