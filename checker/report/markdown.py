"""Markdown reports rendered with Jinja2 templates shipped in the package."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import jinja2

from ..models.results import MetricResult, Results

TEMPLATES = Path(__file__).parent / "templates"
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")


def md_escape(text: Any) -> str:
    """Escape untrusted text for a markdown table cell or paragraph.

    HTML is entity-escaped, markdown punctuation that could open links, emphasis, code or
    tables is backslash-escaped, @mentions and #refs are defused, and newlines flattened.
    """
    s = html.escape(str(text), quote=False)
    s = re.sub(r"([\\`*_\[\]|~#!])", r"\\\1", s)
    s = _MENTION.sub("@\u200b", s)
    return " ".join(s.split())


def fmt_score(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def fmt_range(metric: MetricResult) -> str:
    bounds = metric.min_max
    if bounds is None or len([s for s in metric.runs if s is not None]) < 2:
        return ""
    return f"{bounds[0]:.2f}\u2013{bounds[1]:.2f}"


STATUS_ICON = {"passed": "\u2705", "failed": "\u274c", "error": "\u26a0\ufe0f",
               "not_evaluated": "\u2796", "informational": "\u2139\ufe0f"}


def environment(template_dir: Path | None = None) -> jinja2.Environment:
    loaders: list[jinja2.BaseLoader] = [jinja2.FileSystemLoader(str(TEMPLATES))]
    if template_dir is not None:
        loaders.insert(0, jinja2.FileSystemLoader(str(template_dir)))
    env = jinja2.Environment(loader=jinja2.ChoiceLoader(loaders), autoescape=False,
                             undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(md=md_escape, score=fmt_score, range=fmt_range)
    env.globals.update(icon=STATUS_ICON)
    return env


def render_markdown(results: Results, *, template: Path | None = None,
                    extra: dict[str, Any] | None = None) -> str:
    env = environment(template.parent if template else None)
    tmpl = env.get_template(template.name if template else "report.md.j2")
    return tmpl.render(results=results, **(extra or {}))
