"""Markdown reports rendered with Jinja2 templates shipped in the package.

The same context feeds the CLI's ``--markdown`` file, the PR comment, the job summary and a
user's own template: ``results`` (the results file as models), ``report`` (the view of
report/view.py: what changed, per-set tables with the cases that need attention first, and
for each failing case why it failed), ``run_url``, ``title``,
``budget`` (what this rendering may show) and ``omitted`` (what was cut to fit, in words).

Everything that came from an agent or an eval file goes through a filter: ``md`` (plain
text), ``code`` (inline code span) or ``fence`` (code block); see report/text.py.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import jinja2

from ..models.results import Results
from .user_template import BoundedSandbox, render_bounded
from .explain import explain, fmt_call, fmt_score  # noqa: F401  (re-exported)
from .text import md_code, md_fence, printable
from .view import (Budget, Links, ReportView, build_view, columns_for, familywise_line,  # noqa: F401
                   fmt_range, omitted_notes)

TEMPLATES = Path(__file__).parent / "templates"
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")


def md_escape(text: Any) -> str:
    """Escape untrusted text for a markdown table cell or paragraph.

    HTML is entity-escaped, markdown punctuation that could open links, emphasis, code or
    tables is backslash-escaped, @mentions and #refs are defused, and newlines flattened.
    """
    s = html.escape(printable(str(text)), quote=False)
    s = re.sub(r"([\\`*_\[\]|~#!])", r"\\\1", s)
    s = _MENTION.sub("@\u200b", s)
    return " ".join(s.split())


def html_text(text: Any) -> str:
    """Untrusted text inside raw HTML (``<summary>``): entity-escaped, mentions defused."""
    s = html.escape(" ".join(printable(str(text)).split()), quote=True)
    return _MENTION.sub("@\u200b", s)


STATUS_ICON = {"passed": "\u2705", "failed": "\u274c", "error": "\u26a0\ufe0f",
               "not_evaluated": "\u2796", "informational": "\u2139\ufe0f"}


# --- rendering --------------------------------------------------------------------------

def environment(template_dir: Path | None = None) -> jinja2.Environment:
    loaders: list[jinja2.BaseLoader] = [jinja2.FileSystemLoader(str(TEMPLATES))]
    if template_dir is not None:
        loaders.insert(0, jinja2.FileSystemLoader(str(template_dir)))
    # A user's template is the repository's code, and the checker may run as root: it is
    # rendered sandboxed (no attribute path to Python internals, no code run), ours is not.
    kind = jinja2.Environment if template_dir is None else BoundedSandbox
    env = kind(loader=jinja2.ChoiceLoader(loaders), autoescape=False,
               undefined=jinja2.StrictUndefined, trim_blocks=True,
               lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(md=md_escape, score=fmt_score, range=fmt_range, code=md_code,
                       fence=md_fence, call=fmt_call, h=html_text)
    from ..compare.tokens import token_gate_message
    from .cost import budget_line
    from .reliability import markdown_name, suite_line
    from .trend import trend_markdown

    from ..scoring.refusals import refused, service_note

    env.globals.update(icon=STATUS_ICON, columns_for=columns_for, budget_line=budget_line,
                       token_gate_message=token_gate_message, trend_markdown=trend_markdown,
                       refused_runs=refused, service_note=service_note,
                       reliability_line=lambda results: suite_line(results, markdown_name))
    return env


def render_markdown(results: Results, *, template: Path | None = None,
                    extra: dict[str, Any] | None = None, fail_on: str = "failure") -> str:
    """Render the report. ``extra`` may carry ``links`` (Links), ``budget`` (Budget),
    ``title`` and anything a user template wants; it is passed to the template as is."""
    extra = dict(extra or {})
    fail_on = extra.pop("fail_on", fail_on)
    links = extra.pop("links", None) or Links()
    budget = extra.pop("budget", None) or Budget()
    if template is not None:
        # A user's template is the PR's code: it gets plain data of its own, rebuilt from the
        # JSON, never the live results the verdict, the annotations and the outputs read
        # (Jinja's sandbox still allows a list's remove() or a dict's pop()).
        results = Results.model_validate_json(results.model_dump_json())
    from ..compare.headline import headline
    from .overrides import overrides_view

    view = build_view(results, links, budget)
    decided = headline(results, fail_on)  # decided before any template renders
    context: dict[str, Any] = {
        "results": results, "report": view, "budget": budget, "omitted": omitted_notes(view),
        "run_url": links.run_url, "title": "Agent evaluation",
        "gate": {"passed": decided.passed, "headline": decided.sentence, "lines": decided.lines,
                 "fail_on": fail_on, "familywise": familywise_line(results)},
        "overrides": overrides_view(results),
    }
    context.update(extra)
    env = environment(template.parent if template else None)
    try:
        if template is None:
            return env.get_template("report.md.j2").render(**context)
        return render_bounded(env.get_template(template.name), context)
    except jinja2.TemplateError as exc:
        if template is None:
            raise
        raise _template_error(exc, template) from None


def check_template(template: Path) -> None:
    """Load a user's template now, so that a syntax error is said (file, line) before any
    agent runs, not after; raises InputError."""
    try:
        environment(template.parent).get_template(template.name)
    except jinja2.TemplateError as exc:
        raise _template_error(exc, template) from None
    except (OSError, UnicodeDecodeError) as exc:
        from ..errors import InputError

        raise InputError(f"cannot read the template: {exc}", file=str(template),
                         fix="give a readable UTF-8 Jinja template") from None


def private_template_copy(template: Path, into: Path) -> Path:
    """``template`` copied into ``into`` (a folder only the checker can write), read from
    there from now on: the agent under test may write the working directory while it runs,
    and must not rewrite the report it is judged by. Checked first, so that an error names
    the user's file."""
    check_template(template)
    copy = into / template.name
    copy.write_bytes(template.read_bytes())
    return copy


def template_for_run(template: Path, private: bool) -> Path:
    """The template a run renders: checked now; with ``private`` (an agent sandbox), a copy
    the agent's user cannot write (``private_template_copy``)."""
    check_template(template)
    if not private:
        return template
    import tempfile

    return private_template_copy(template, Path(tempfile.mkdtemp(prefix="evalcheck-template-")))


def _template_error(exc: jinja2.TemplateError, template: Path) -> Exception:
    from ..errors import InputError

    return InputError(f"template error: {exc.message or exc}", file=str(template),
                      line=getattr(exc, "lineno", None),
                      fix="see docs/github-action.md for the template context")


def render_within(results: Results, limit: int, measure: Callable[[str], int], *,
                  template: Path | None = None, extra: dict[str, Any] | None = None,
                  reserve: int = 0) -> tuple[str, list[str]]:
    """The richest rendering whose size (by ``measure``) is at most ``limit - reserve``.

    Shrinks in this order: the collapsed rows of passing cases, then explanations of the
    last failing cases, then the behaviour diffs of the last cases (neither regressed nor
    changed first), then rows of cases that need attention. Returns the text and what was
    left out, in words.
    """
    limit -= reserve
    extra = dict(extra or {})

    def attempt(budget: Budget) -> str:
        return render_markdown(results, template=template, extra={**extra, "budget": budget})

    full = attempt(Budget())
    if measure(full) <= limit:
        return full, []
    failing = len(results.failing_cases())
    budget = Budget(passing_rows=False)
    if measure(attempt(budget)) > limit:
        best = _largest(0, failing, lambda k: measure(attempt(replace(budget, detail_cases=k))) <= limit)
        budget = replace(budget, detail_cases=best or 0)
        if best is None:
            diffs = build_view(results, extra.get("links"), budget).behaviour_total
            best = _largest(0, diffs, lambda k: measure(attempt(replace(budget, behaviour_cases=k))) <= limit)
            budget = replace(budget, behaviour_cases=best or 0)
        if best is None:
            rows = sum(len(s.cases) for s in results.eval_sets)
            best_rows = _largest(0, rows, lambda r: measure(attempt(replace(budget, max_rows=r))) <= limit)
            budget = replace(budget, max_rows=best_rows or 0)
    text = attempt(budget)
    if measure(text) > limit:  # even the headline alone is too big (a huge user template)
        text = _hard_cut(text, limit, measure)
    view = build_view(results, extra.get("links"), budget)
    return text, omitted_notes(view)


def _largest(lo: int, hi: int, fits: Callable[[int], bool]) -> int | None:
    """Largest n in [lo, hi] with fits(n), assuming fits is monotone; None if none fits."""
    if not fits(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _hard_cut(text: str, limit: int, measure: Callable[[str], int]) -> str:
    note = "\n\n*(report cut to fit; see the job summary)*\n"
    keep = max(0, limit - measure(note))
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if measure(text[:mid]) <= keep:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo] + note
