"""Pieces of the HTML report (report/html.py): escaping, the evidence of a failing metric
(tool calls with the first divergence, texts, judge rationales) and a run's turns.

Every text that came from an agent, an eval file or a judge goes through ``esc``: HTML
entities for ``& < > " '``, control characters made visible, and a length cap, so that it
shows as text and never becomes markup.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from typing import Any

from ..models.evalset import Invocation, content_text, intermediate_texts, tool_calls, tool_responses
from ..models.records import RecordedRun
from .explain import Explanation
from .text import printable

MAX_TEXT = 4000       # characters of one text shown
MAX_TURNS = 30        # turns of one run shown
MAX_CALLS = 40        # tool calls of one turn shown


def esc(value: Any, limit: int = MAX_TEXT) -> str:
    text = printable(str(value))
    if len(text) > limit:
        text = text[:limit] + f"\u2026 ({len(text) - limit:,} more characters)"
    return html.escape(text, quote=True)


def tag(name: str, body: str, cls: str = "", **attrs: str) -> str:
    """``<name class=cls ...>body</name>``; ``body`` is markup already (escape text first)."""
    extra = "".join(f' {k.replace("_", "-")}="{html.escape(v, quote=True)}"' for k, v in attrs.items())
    cls_attr = f' class="{html.escape(cls, quote=True)}"' if cls else ""
    return f"<{name}{cls_attr}{extra}>{body}</{name}>"


def table(head: Iterable[str], rows: Iterable[Iterable[str]], cls: str = "") -> str:
    """Cells are markup already."""
    header = "".join(tag("th", h) for h in head)
    body = "".join(tag("tr", "".join(tag("td", c) for c in row)) for row in rows)
    return tag("table", tag("thead", tag("tr", header)) + tag("tbody", body), cls)


def pre(text: Any, cls: str = "") -> str:
    return tag("pre", esc(text), cls)


def fmt_call(call: Any) -> str:
    name = getattr(call, "name", "")
    args = getattr(call, "args", None) or {}
    return f"{name}({json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)})"


# --- the evidence of one failing metric or errored run ------------------------------

def explanation(ex: Explanation) -> str:
    title = " \u00b7 ".join(p for p in (
        esc(ex.metric), f"run {ex.run}" if ex.run else "", f"turn {ex.turn}" if ex.turn else "",
        f"score {esc(ex.score)} &lt; {esc(ex.threshold)}" if ex.score and ex.threshold else "") if p)
    parts = [tag("h5", title or esc(ex.kind))]
    if ex.error:
        parts.append(pre(ex.error, "error"))
    if ex.kind == "trajectory" and (ex.missing or ex.out_of_order or ex.extra):
        parts.append(tag("p", f"Match type {esc(ex.match_type)}: the expected calls not matched, "
                                 "whatever their position.", "note"))
    if ex.missing:
        parts.append(tag("p", "Missing: " + ", ".join(tag("code", esc(m)) for m in ex.missing)))
    if ex.out_of_order:
        parts.append(tag("p", "Out of order (called, not after the calls before it): "
                         + ", ".join(tag("code", esc(m)) for m in ex.out_of_order)))
    if ex.extra:
        parts.append(tag("p", f"Extra ({esc(ex.match_type or 'the match type')} allows extra calls): "
                         + ", ".join(tag("code", esc(m)) for m in ex.extra)))
    if ex.calls:
        rows = []
        for row in ex.calls:
            first = ex.first_divergence is not None and row.index == ex.first_divergence
            mark = "first divergence" if first else ("differs" if row.diverges else "; ".join(
                w for w, on in (("missing", row.missing), ("extra", row.extra)) if on))
            rows.append(tag("tr", "".join(tag("td", c) for c in (
                str(row.index), tag("code", esc(row.expected or "\u2014")),
                tag("code", esc(row.actual or "\u2014")), mark)),
                "divergence" if first else "differs" if row.diverges or row.missing or row.extra else ""))
        parts.append(tag("table", tag("thead", tag("tr", "".join(tag("th", h) for h in (
            "#", "expected tool call", "actual tool call", "")))) + tag("tbody", "".join(rows)),
            "calls"))
        if ex.calls_hidden:
            parts.append(tag("p", f"{ex.calls_hidden} more tool calls not shown.", "note"))
    if ex.unexpected:
        parts.append(tag("p", "Unexpected: " + ", ".join(tag("code", esc(m)) for m in ex.unexpected)))
    if ex.expected_text or ex.actual_text:
        parts.append(tag("div", tag("div", tag("h6", "expected") + pre(ex.expected_text))
                         + tag("div", tag("h6", "actual") + pre(ex.actual_text)), "sidebyside"))
    if ex.evidence is not None:
        parts.append(judge_turn(ex.evidence, ex.judge))
    for note in ex.notes:
        parts.append(tag("p", esc(note), "note"))
    if ex.stderr:
        parts.append(tag("h6", "agent log (stderr, last lines)") + pre(ex.stderr, "log"))
    return tag("div", "".join(parts), f"evidence {ex.kind}")


def judge_turn(turn: Any, judge: str) -> str:
    head = " \u00b7 ".join(p for p in (
        f"judged by {esc(judge)}" if judge else "", esc(turn.title) if turn.title else "",
        f"verdict {esc(turn.verdict)}" if turn.verdict else "",
        f"agreement {esc(turn.agreement)}" if turn.agreement else "") if p)
    parts = [tag("p", head, "judge")] if head else []
    if turn.rationale:
        parts.append(tag("blockquote", esc(turn.rationale), "rationale"))
    if turn.verdicts:
        parts.append(table(("item", "verdict", "agreement", "rationale"), (
            (esc(v.label), esc(v.verdict), esc(v.agreement), esc(v.rationale)) for v in turn.verdicts),
            "verdicts"))
    if turn.met:
        parts.append(tag("p", f"{turn.met} more met.", "note"))
    for heading, text in turn.texts:
        parts.append(tag("h6", esc(heading)) + pre(text))
    if turn.error:
        parts.append(pre(turn.error, "error"))
    return "".join(parts)


# --- what the agent did --------------------------------------------------------------

def _turn(number: int, invocation: Invocation) -> str:
    calls = tool_calls(invocation)
    responses = tool_responses(invocation)
    parts = [tag("div", tag("b", "user") + " " + esc(content_text(invocation.user_content)), "user")]
    for author, text in intermediate_texts(invocation)[:MAX_CALLS]:
        parts.append(tag("div", tag("b", esc(author)) + " " + esc(text), "intermediate"))
    if calls:
        items = "".join(tag("li", tag("code", esc(fmt_call(c), 1000))) for c in calls[:MAX_CALLS])
        parts.append(tag("div", tag("b", "tool calls") + tag("ol", items), "tools"))
        if len(calls) > MAX_CALLS:
            parts.append(tag("p", f"{len(calls) - MAX_CALLS} more tool calls not shown.", "note"))
    if responses:
        items = "".join(tag("li", tag("code", esc(
            f"{r.name}: {json.dumps(r.response, ensure_ascii=False, default=str)}", 1000)))
            for r in responses[:MAX_CALLS])
        parts.append(tag("details", tag("summary", f"{len(responses)} tool responses") + tag("ol", items),
                         "responses"))
    final = invocation.final_response
    parts.append(tag("div", tag("b", "agent") + " " + (esc(content_text(final)) if final is not None
                                                      else tag("i", "no final response")), "final"))
    return tag("li", "".join(parts), "turn", value=str(number))


def run_turns(run: RecordedRun) -> str:
    """The turns of one recorded run: user message, intermediate texts, tool calls and
    responses, final answer."""
    turns = run.invocations[:MAX_TURNS]
    body = tag("ol", "".join(_turn(i, inv) for i, inv in enumerate(turns, 1)), "turns")
    if len(run.invocations) > MAX_TURNS:
        body += tag("p", f"{len(run.invocations) - MAX_TURNS} more turns not shown.", "note")
    if run.error:
        body = pre(run.error, "error") + body
    return body


# --- what the agent does differently (report/behaviour.py) ---------------------------

def words_html(diff: Any) -> str:
    """A word diff: main's words struck out, this PR's underlined, both escaped."""
    out = []
    for kind, text in diff.parts:
        out.append(tag("del", esc(text)) if kind == "-" else tag("ins", esc(text)) if kind == "+"
                   else "\u2026" if kind == "\u2026" else esc(text))
    if diff.words_hidden:  # past the words diffed (report/behaviour.py: MAX_DIFF_WORDS)
        out.append(tag("em", f"({diff.words_hidden} more word{'' if diff.words_hidden == 1 else 's'})"))
    return " ".join(out)


def behaviour_html(view: Any) -> str:
    """Main's usual trajectory beside this PR's, the first divergence marked; the answers
    that differ as word diffs; the runs on each side taking each."""
    fresh = (f" This PR's runs include its {view.fresh_runs} fresh confirmation run"
             f"{'' if view.fresh_runs == 1 else 's'}." if view.fresh_runs else "")
    moved = [tag("p", tag("b", "Changed beyond noise: ") + esc("; ".join(view.shift)) + ".", "shift")] \
        if view.shift else []
    if view.same_calls:
        parts = moved + [tag("p", "Same tool calls on both sides, main's usual trajectory ("
                          + esc(view.baseline_share) + ")." + fresh, "note shares")]
    else:
        parts = moved + [tag("p", f"Main's usual trajectory: {esc(view.baseline_share)}. "
                                  f"This PR's: {esc(view.here_share)}.{fresh}", "note shares")]
    if view.rows:
        rows = []
        for row in view.rows:
            mark = "first divergence" if row.first else ("differs" if row.differs else "")
            rows.append(tag("tr", "".join(tag("td", c) for c in (
                f"{row.turn} \u00b7 {row.call}", tag("code", esc(row.baseline or "\u2014")),
                tag("code", esc(row.here or "\u2014")), mark)),
                "divergence" if row.first else "differs" if row.differs else ""))
        parts.append(tag("table", tag("thead", tag("tr", "".join(tag("th", h) for h in (
            "turn \u00b7 call", "main", "this PR", "")))) + tag("tbody", "".join(rows)), "calls behaviour"))
    for diff in view.answers:
        parts.append(tag("h6", f"answer, turn {diff.turn} (main \u2192 this PR)")
                     + tag("p", words_html(diff), "worddiff"))
    return tag("div", "".join(parts), "behaviour")
