"""A model of how the Actions runner finds workflow commands in a step's log, stricter than
the runner (actions/runner src/Runner.Worker/ActionCommandManager.cs, ActionCommand.cs):

- the log is cut into lines at ``\\n`` and ``\\r`` (here also at every other Unicode line
  break, in case a reader is more generous);
- a line is a command when, after leading whitespace, it starts ``::name ...::``
  (TryParseV2), or else when it holds ``##[name ...]`` anywhere (legacy TryParse);
- the runner searches with .NET's culture-sensitive IndexOf/StartsWith, for which ICU may
  ignore control, format and default-ignorable characters; the model also drops every
  combining mark and ANSI escape sequence, and folds compatibility forms (fullwidth
  ``：``), so it finds a command wherever any reasonable comparison might.
"""

from __future__ import annotations

import re
import unicodedata

from checker.safety.output import ignorable

LINE_BREAKS = re.compile(r"\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
ANSI = re.compile(r"\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-_])")


def runner_view(line: str) -> str:
    decomposed = unicodedata.normalize("NFKD", ANSI.sub("", line))
    kept = "".join(c for c in decomposed if c == "\t" or not (
        unicodedata.category(c) in ("Cc", "Cf", "Mn", "Mc", "Me") or ignorable(c)))
    return unicodedata.normalize("NFKC", kept)


def parse_line(line: str) -> tuple[str, str, str] | None:
    """(syntax, command name, data) of the command ``line`` would be, or None."""
    view = runner_view(line)
    v2 = view.lstrip()
    if v2.startswith("::"):
        end = v2.find("::", 2)
        if end >= 0:
            return "v2", v2[2:end].split(" ", 1)[0], v2[end + 2:]
    start = view.find("##[")
    if start >= 0:
        end = view.find("]", start)
        if end >= 0:
            return "legacy", view[start + 3:end].split(" ", 1)[0], view[end + 1:]
    return None


def commands_in(log: str) -> list[tuple[str, str, str]]:
    """Every command the runner could act on in ``log``."""
    return [c for c in (parse_line(line) for line in LINE_BREAKS.split(log)) if c is not None]


def unescape_data(data: str) -> str:
    return data.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")
