"""What the agent does differently, as the reports show it: for each case with a
``behaviour`` (a regressed or changed case, or one whose behaviour changed beyond noise
whatever its label: compare/behaviour.py), main's usual tool trajectory beside this PR's,
call by call, the first divergence marked; the answers as a word diff; how many runs on each
side took each trajectory; what moved beyond noise.

Plain data (``BehaviourView``) for the markdown template (templates/_behaviour.md.j2) and
the HTML report (report/html.py), which escape every text themselves: tool arguments and
answers are the agent's.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from functools import lru_cache

from ..models.behaviour import Behaviour, TrajectoryTurn
from ..models.results import CaseResult, Results
from .text import fmt_call

CONTEXT = 6  # unchanged words kept on each side of a change in a word diff
# Words of each answer diffed: difflib's time grows with the product of the two lengths, and
# an answer read back is at most 1,000 characters (models/behaviour.py) - 500 words.
MAX_DIFF_WORDS = 500


@dataclass
class CallRow:
    turn: int
    call: int
    baseline: str | None  # main's call there; None: main made no call there
    here: str | None
    first: bool = False   # the first divergence
    differs: bool = False


@dataclass
class WordDiff:
    """One turn's answers, main's then this PR's, as runs of words: ``=`` both, ``-`` main's
    only, ``+`` this PR's only, ``…`` unchanged words left out."""

    turn: int
    parts: list[tuple[str, str]]
    words_hidden: int = 0


@dataclass
class BehaviourView:
    eval_set_id: str
    eval_id: str
    change: str | None         # "regressed", "changed", "flaky", "unchanged", "improved"
    headline: str              # "first divergence at turn 1, call 1" / "same tool calls; the answer differs"
    compared: bool             # main's side known
    baseline_share: str = ""   # "12 of 12 runs of main, 0 of 4 here"
    here_share: str = ""       # "4 of 4 runs here, 0 of 12 of main"
    same_calls: bool = False
    rows: list[CallRow] = field(default_factory=list)
    rows_hidden: int = 0
    answers: list[WordDiff] = field(default_factory=list)
    answers_hidden: int = 0    # more turns whose answers differ
    shift: list[str] = field(default_factory=list)  # what changed beyond noise, in words
    fresh_runs: int = 0        # this PR's confirmation runs counted in its shares


def _runs(n: int, of: int, where: str) -> str:
    return f"{n} of {of} run{'' if of == 1 else 's'} {where}"


def call_rows(behaviour: Behaviour) -> list[CallRow]:
    """Every call of either trajectory, turn by turn, side by side."""
    main = behaviour.baseline.turns if behaviour.baseline is not None else []
    here = behaviour.here.turns
    first = behaviour.first_divergence
    rows = []
    for t in range(max(len(main), len(here))):
        left = main[t].calls if t < len(main) else []
        right = here[t].calls if t < len(here) else []
        for c in range(max(len(left), len(right))):
            a = fmt_call(left[c]) if c < len(left) else None
            b = fmt_call(right[c]) if c < len(right) else None
            rows.append(CallRow(turn=t + 1, call=c + 1, baseline=a, here=b, differs=a != b,
                                first=first is not None and (first.turn, first.call) == (t + 1, c + 1)))
        if first is not None and first.turn == t + 1 and first.call > max(len(left), len(right)):
            rows.append(CallRow(turn=t + 1, call=first.call, baseline=None, here=None, first=True, differs=True))
    return rows


def word_diff(before: str, after: str, context: int = CONTEXT, limit: int | None = None) -> WordDiff:
    """``before`` -> ``after`` by words (the first MAX_DIFF_WORDS of each; the rest counted
    hidden); unchanged stretches longer than twice ``context`` are cut to their ends; at
    most ``limit`` words shown (None: all). The diff itself is made once for two answers:
    fitting a comment renders the report again and again (report/markdown.py)."""
    parts, hidden = _diffed(before, after, context)
    if limit is not None:
        shown, kept = 0, list[tuple[str, str]]()
        for kind, text in parts:
            words = len(text.split())
            if shown + words > limit:
                room = max(0, limit - shown)
                if room:
                    kept.append((kind, " ".join(text.split()[:room])))
                hidden += words - room
                shown = limit
                continue
            kept.append((kind, text))
            shown += words
        return WordDiff(turn=0, parts=kept, words_hidden=hidden)
    return WordDiff(turn=0, parts=list(parts), words_hidden=hidden)


@lru_cache(maxsize=1024)
def _diffed(before: str, after: str, context: int) -> tuple[tuple[tuple[str, str], ...], int]:
    """The word diff's parts, and the words past MAX_DIFF_WORDS left out of it."""
    a, b = before.split(), after.split()
    hidden = max(0, len(a) - MAX_DIFF_WORDS) + max(0, len(b) - MAX_DIFF_WORDS)
    a, b = a[:MAX_DIFF_WORDS], b[:MAX_DIFF_WORDS]
    parts: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    opcodes = matcher.get_opcodes()
    for index, (op, i1, i2, j1, j2) in enumerate(opcodes):
        if op == "equal":
            same = a[i1:i2]
            keep_head = context if index > 0 else 0
            keep_tail = context if index < len(opcodes) - 1 else 0
            if len(same) > keep_head + keep_tail + 1:
                if keep_head:
                    parts.append(("=", " ".join(same[:keep_head])))
                parts.append(("\u2026", ""))
                if keep_tail:
                    parts.append(("=", " ".join(same[-keep_tail:])))
            else:
                parts.append(("=", " ".join(same)))
            continue
        if i2 > i1:
            parts.append(("-", " ".join(a[i1:i2])))
        if j2 > j1:
            parts.append(("+", " ".join(b[j1:j2])))
    return tuple(parts), hidden


def _answers(main: list[TrajectoryTurn], here: list[TrajectoryTurn], limit: int | None) -> list[WordDiff]:
    out = []
    for t in range(min(len(main), len(here))):
        before, after = main[t].response or "", here[t].response or ""
        if before != after:
            diff = word_diff(before, after, limit=limit)
            diff.turn = t + 1
            out.append(diff)
    return out


def shift_words(behaviour: Behaviour) -> list[str]:
    """What changed beyond noise: "main's usual trajectory is not this PR's usual one",
    "book_hotel(city="Lisbon") in 0 of 3 runs of main, 23 of 23 here"; [] when nothing did."""
    moved = behaviour.shift
    if moved is None:
        return []
    runs = behaviour.runs
    words = ["main's most common trajectory is not this PR's"] if moved.usual else []
    words += [f"{fmt_call(c.call)} in {c.runs.baseline} of {runs.baseline} run{'' if runs.baseline == 1 else 's'}"
              f" of main, {c.runs.here} of {runs.here} here" for c in moved.calls]
    return words


def behaviour_view(eval_set_id: str, case: CaseResult, *, max_rows: int | None = None,
                   max_answers: int | None = None, max_words: int | None = None) -> BehaviourView | None:
    """The view of ``case.behaviour``; the limits bound a comment (None: everything)."""
    b = case.behaviour
    if b is None:
        return None
    change = case.change if case.change in ("regressed", "changed") or not case.flaky else "flaky"
    view = BehaviourView(eval_set_id=eval_set_id, eval_id=case.eval_id, change=change, headline="",
                         compared=b.baseline is not None)
    view.shift = shift_words(b)
    view.fresh_runs = b.fresh_runs or 0
    runs = b.runs
    view.here_share = (_runs(b.here.runs.here, runs.here, "here") + ", "
                       + _runs(b.here.runs.baseline, runs.baseline, "of main"))
    if b.baseline is not None:
        view.baseline_share = (_runs(b.baseline.runs.baseline, runs.baseline, "of main") + ", "
                               + _runs(b.baseline.runs.here, runs.here, "here"))
    rows = call_rows(b)
    view.same_calls = b.first_divergence is None
    if max_rows is not None and len(rows) > max_rows:
        # Keep the rows up to and around the first divergence.
        at = next((i for i, r in enumerate(rows) if r.first), 0)
        start = max(0, min(at - max_rows // 2, len(rows) - max_rows))
        view.rows_hidden = len(rows) - max_rows
        rows = rows[start:start + max_rows]
    view.rows = rows
    answers = _answers(b.baseline.turns, b.here.turns, max_words) if b.baseline is not None else []
    if max_answers is not None and len(answers) > max_answers:
        view.answers_hidden = len(answers) - max_answers
        answers = answers[:max_answers]
    view.answers = answers
    d = b.first_divergence
    if d is not None:
        view.headline = f"first divergence at turn {d.turn}, call {d.call}"
    elif answers:
        view.headline = "same tool calls; the answer differs" if len(answers) == 1 else \
            f"same tool calls; the answers of {len(answers) + view.answers_hidden} turns differ"
    else:
        view.headline = "same tool calls and answers as main's usual run"
    return view


def behaviour_views(results: Results, limit: int | None = None, **limits: int | None) -> list[BehaviourView]:
    """Every case's view, regressed first, then changed, then the others whose behaviour
    changed (file order within); at most ``limit`` (None: all)."""
    order: dict[str | None, int] = {"regressed": 0, "changed": 1}
    views = [v for s in results.eval_sets for c in s.cases
             if (v := behaviour_view(s.eval_set_id, c, **limits)) is not None]
    views.sort(key=lambda v: order.get(v.change, 2))
    return views if limit is None else views[:limit]
