"""The quarantine file, ``.evalcheck/quarantine.yml``: cases that run and are reported but do
not gate, each with a reason, an owner and an expiry date (docs/quarantine.md).

It is read from the base branch - the commit REF names, the base branch as it is now
(inputs/git_base.py) - never from the pull request's work tree, nor from the fork point it
branched from: a pull request cannot quarantine the case it breaks, and an entry the base
branch removed never comes back for a branch older than the removal. Its format:

    - case: weather/rainy_day        # SET/ID: the eval set id, "/", the eval id
      reason: the forecast API flakes; fix in progress
      owner: "@alice"
      expires: 2026-07-01            # the last day it holds (UTC)
    - case: "billing/*"              # a glob (fnmatch: *, ?, [...]) over SET/ID
      ...
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from ..errors import InputError, did_you_mean

QUARANTINE_FILE = ".evalcheck/quarantine.yml"
FIELDS = ("case", "reason", "owner", "expires")
MAX_ENTRIES = 10_000
# A quarantine file is a list of short mappings: a few kB. Past these it is not one, and
# PyYAML's pure-Python reader would take seconds a megabyte and recurse once a level.
MAX_BYTES = 128 * 1024
MAX_DEPTH = 10  # nodes nested: the list (1), an entry (2), its values (3)
EXAMPLE = '- {case: weather/rainy_day, reason: the forecast API flakes, owner: "@alice", expires: 2026-07-01}'


@dataclass(frozen=True)
class QuarantineEntry:
    case: str  # SET/ID or a glob over it
    reason: str
    owner: str
    expires: date  # the last day the entry holds
    index: int  # its position in the file: $[index]

    def holds_on(self, today: date) -> bool:
        return today <= self.expires

    def as_json(self) -> dict[str, str]:
        return {"reason": self.reason, "owner": self.owner, "expires": self.expires.isoformat()}


@dataclass(frozen=True)
class Quarantine:
    """The entries of the base branch's quarantine file and where they were read."""

    entries: tuple[QuarantineEntry, ...]
    source: str  # ".evalcheck/quarantine.yml (at abc1234567, the base commit origin/main)"
    commit: str | None = None  # the commit read from (None: read from a given file)


def _bad(message: str, display: str, path: str, fix: str) -> InputError:
    return InputError(message, file=display, path=path, fix=fix)


def _text(value: Any, display: str, path: str, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        shown = "missing" if value is None else f"{type(value).__name__} {value!r}"[:80]
        raise _bad(f"{what} must be a non-empty string, got {shown}", display, path,
                   f"give each entry case, reason, owner and expires, e.g. {EXAMPLE}")
    return value.strip()


def _date(value: Any, display: str, path: str) -> date:
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value.strip()):
        try:
            return date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise _bad(f"expires must be a date YYYY-MM-DD, got {value!r}"[:200], display, path,
               "write the last day the quarantine holds, e.g. expires: 2026-07-01")


def _case(value: Any, display: str, path: str) -> str:
    pattern = _text(value, display, path, "case")
    if "/" not in pattern:
        raise _bad(f"case {pattern!r} names no eval set", display, path,
                   f"write SET/ID, the eval set id and the eval id: e.g. {pattern}/* for every "
                   f"case of eval set {pattern!r}, or weather/rainy_day for one case")
    return pattern


class _Unbounded(Exception):
    """The file is nested deeper than MAX_DEPTH, or uses an alias (``*name``)."""

    def __init__(self, message: str, mark: Any):
        super().__init__(message)
        self.message, self.mark = message, mark


def _loader() -> type:
    """YAML's safe loader with dates left as text: its own reading of ``2026-13-01`` raises
    (not a YAML error), and ``expires`` is checked here, with a message saying the fix.
    Its composer stops at MAX_DEPTH (PyYAML's composer recurses once a level: 20,000 ``[``
    were a RecursionError) and at an alias: an entry has no use for one, and aliases of
    aliases would make a few bytes into an exponentially large document."""
    import yaml

    class DatesAsText(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent):
                raise _Unbounded(f"an alias (*{event.anchor}): a quarantine file has no use for "
                                 "anchors and aliases", event.start_mark)
            self.depth += 1
            try:
                if self.depth > MAX_DEPTH:
                    raise _Unbounded(f"nested more than {MAX_DEPTH} levels deep", event.start_mark)
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    timestamp = "tag:yaml.org,2002:timestamp"
    DatesAsText.yaml_implicit_resolvers = {
        first: [(tag, pattern) for tag, pattern in resolvers if tag != timestamp]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    return DatesAsText


def parse_quarantine(data: bytes, display: str) -> tuple[QuarantineEntry, ...]:
    """The entries of a quarantine file's bytes; InputError naming ``display``, the JSON
    path of the entry at fault and the fix. An empty file has none."""
    import yaml

    if len(data) > MAX_BYTES:
        raise _bad(f"{len(data):,} bytes, more than the {MAX_BYTES // 1024} KiB a quarantine file "
                   "may have", display, "$",
                   "quarantine eval sets with a glob (SET/*) rather than case by case (docs/limits.md)")
    try:
        document = yaml.load(data.decode("utf-8-sig"), Loader=_loader())  # noqa: S506 (a SafeLoader)
    except UnicodeDecodeError:
        raise _bad("not UTF-8 text", display, "$", "save the file as UTF-8") from None
    except _Unbounded as exc:
        where = f" (line {exc.mark.line + 1}, column {exc.mark.column + 1})"
        raise _bad(exc.message + where, display, "$",
                   f"write a plain YAML list of entries, each written out (docs/limits.md), e.g. {EXAMPLE}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        fix = ('quote a value that starts with @ (owner: "@alice")' if "'@'" in problem
               else f"a YAML list of entries, e.g. {EXAMPLE}")
        raise _bad(f"not valid YAML{where}: {problem}", display, "$", fix) from None
    if document is None:
        return ()
    if not isinstance(document, list):
        raise _bad(f"must be a list of entries, got a {type(document).__name__}", display, "$",
                   f"start each entry with '- ', e.g. {EXAMPLE}")
    if len(document) > MAX_ENTRIES:
        raise _bad(f"{len(document)} entries, more than {MAX_ENTRIES}", display, "$",
                   "quarantine eval sets with a glob (SET/*) rather than case by case")
    entries = []
    for i, item in enumerate(document):
        at = f"$[{i}]"
        if not isinstance(item, dict):
            raise _bad(f"an entry must be a mapping of case, reason, owner, expires, got "
                       f"{type(item).__name__}", display, at, f"e.g. {EXAMPLE}")
        for key in item:
            if key not in FIELDS:
                hint = did_you_mean(str(key), set(FIELDS))
                raise _bad(f"unknown key {key!r}" + (f" ({hint})" if hint else ""), display,
                           f"{at}.{key}", "an entry has exactly case, reason, owner and expires")
        entries.append(QuarantineEntry(
            case=_case(item.get("case"), display, f"{at}.case"),
            reason=_text(item.get("reason"), display, f"{at}.reason", "reason"),
            owner=_text(item.get("owner"), display, f"{at}.owner", "owner"),
            expires=_date(item.get("expires"), display, f"{at}.expires"), index=i))
    return tuple(entries)


def read_quarantine(ref: str, root: Path, *, option: str = "--quarantine-ref",
                    auto: bool = False) -> tuple[Quarantine | None, list[str]]:
    """The quarantine file of the commit ``ref`` names in the repository at ``root`` (None
    when that commit has none), and notes. A bad file is InputError naming the
    entry at fault. With ``auto`` (the Action, on a pull request) a base commit the checkout
    lacks applies no quarantine, said in a note when the checkout has a quarantine file
    (every case gates); on the command line it is InputError."""
    from .git_base import file_at_commit

    fix = ("give a commit the repository has (a branch such as origin/main, a tag or a SHA); "
           "in GitHub Actions, check out with fetch-depth: 0 (docs/quarantine.md)")
    try:
        found = file_at_commit(ref, root, QUARANTINE_FILE, option=option, fix=fix)
    except InputError as exc:
        if not auto:
            raise
        if not (root / QUARANTINE_FILE).exists():
            return None, []
        return None, [f"{QUARANTINE_FILE} not applied, every case gates: the base branch's version "
                      f"could not be read ({exc})"]
    if found.data is None:
        return None, []
    named = "" if found.commit.startswith(ref.lower()) else f" {ref[:40]}"
    display = f"{QUARANTINE_FILE} (at {found.commit[:12]}, the base commit{named})"
    return Quarantine(parse_quarantine(found.data, display), display, found.commit), []
