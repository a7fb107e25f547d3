"""What changed against the baseline, as the report's first lines say it.

"2 regressions, 1 improvement, 3 flaky - compared with main at abc1234 (merge base)", the
removed cases, the suite-level deltas, flaky pass counts with their Wilson intervals, and the
notes (fingerprints unknown, no baseline found). Read from the results file's ``comparison``
(checker/compare) and, for notes of the Action's baseline search, ``metadata.baselineNotes``.
Without a comparison the view still counts flaky cases.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..compare.comparison import suite_drops
from ..safety.text import plural
from ..compare.verdict import baseline_pass_counts, case_pass_counts
from ..models.results import CaseResult, Results

MAX_REMOVED = 30   # removed cases listed by name
MAX_NOTES = 10
_SHA = re.compile(r"^[0-9a-f]{7,64}$")


@dataclass
class Flaky:
    """A flaky case's runs passing every gating metric, k of n, with the Wilson 95% interval
    of that rate; and the baseline's k/n when the comparison recorded it."""

    passed: int
    runs: int
    low: str
    high: str
    baseline: str = ""

    def __str__(self) -> str:
        return f"{self.passed}/{self.runs}"


def flaky_counts(case: CaseResult) -> Flaky:
    counts = case_pass_counts(case)
    flaky = Flaky(counts.passed, counts.runs, f"{counts.low:.2f}", f"{counts.high:.2f}")
    base = baseline_pass_counts(case)
    if base is not None:
        flaky.baseline = str(base)
    return flaky


@dataclass
class BaselineView:
    """Where the baseline came from: a commit of a branch (the Action) or a file (the CLI)."""

    ref: str = ""
    commit: str = ""           # short SHA
    commit_url: str | None = None
    behind: int | None = None  # commits behind the merge base; 0: the merge base itself
    path: str = ""

    def __str__(self) -> str:
        """As plain text (the HTML report's footer; the markdown template links the commit)."""
        if not self.commit:
            return (f"{self.ref} " if self.ref else "") + (self.path or "the baseline")
        behind = (" (merge base)" if self.behind == 0 else f" ({self.behind} commit"
                  f"{'' if self.behind == 1 else 's'} behind the merge base)" if self.behind else "")
        return (f"{self.ref} at " if self.ref else "") + self.commit + behind


@dataclass
class SuiteRow:
    metric: str
    cases: int
    delta: str            # "-0.12"
    interval: str         # "-0.20 to -0.04"
    baseline_rate: str    # "40/60 (0.54-0.78)"
    rate: str


@dataclass
class ChangeView:
    compared: bool
    counts: list[tuple[str, bool]] = field(default_factory=list)  # ("2 regressions", strong)
    flaky: int = 0
    baseline: BaselineView | None = None
    removed: list[str] = field(default_factory=list)  # "set / case"
    removed_hidden: int = 0
    suite: list[SuiteRow] = field(default_factory=list)
    # The gating metrics whose suite mean fell for sure ("tool_trajectory_avg_score -0.21 (95%
    # interval -0.30 to -0.12)"): a plain line of the report; the headline says it where it gates.
    drops: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Eval sets carried from main (--changed-since), each with main's verdict:
    # "shop (agents/shop/shop.evalset.json): 1 of 2 cases passed on main".
    carried: list[str] = field(default_factory=list)
    changed_since: str = ""  # the ref the pull request's changes were read against


def _rate(value: Any) -> str:
    if not isinstance(value, dict):
        return ""
    passed, cases = value.get("passed"), value.get("cases")
    low, high = value.get("low"), value.get("high")
    if not isinstance(passed, int) or not isinstance(cases, int):
        return ""
    if isinstance(low, (int, float)) and isinstance(high, (int, float)):
        return f"{passed}/{cases} ({low:.2f}\u2013{high:.2f})"
    return f"{passed}/{cases}"


def _suite(rows: list[dict[str, Any]]) -> list[SuiteRow]:
    out = []
    for row in rows:
        if not isinstance(row, dict) or not isinstance(row.get("name"), str):
            continue
        delta = row.get("meanDelta")
        interval = row.get("interval")
        interval = interval if isinstance(interval, dict) else {}
        low, high = interval.get("low"), interval.get("high")
        out.append(SuiteRow(
            metric=row["name"], cases=cases if isinstance(cases := row.get("cases"), int) else 0,
            delta=f"{delta:+.2f}" if isinstance(delta, (int, float)) else "n/a",
            interval=(f"{low:+.2f} to {high:+.2f}" if isinstance(low, (int, float))
                      and isinstance(high, (int, float)) else ""),
            baseline_rate=_rate(row.get("baselinePassRate")), rate=_rate(row.get("passRate"))))
    return out


CARRIED = "carried from main (not re-run: nothing it depends on changed)"


def carried_sets(results: Results) -> list[str]:
    """Each eval set carried from main, with main's verdict on its cases."""
    out = []
    for eval_set in results.eval_sets:
        cases = [c for c in eval_set.cases if c.change == "carried"]
        if not cases:
            continue
        passed = sum(c.status == "passed" for c in cases)
        verdict = (f"all {plural(len(cases), 'case')} passed on main" if passed == len(cases)
                   else f"{passed} of {plural(len(cases), 'case')} passed on main")
        out.append(f"{eval_set.eval_set_id} ({eval_set.path}): {verdict}")
    return out


def _selection_notes(meta: dict[str, Any]) -> tuple[str, list[str]]:
    """(the ref, the notes) of ``metadata.changedSince`` (read defensively: from a file)."""
    found = meta.get("changedSince")
    if not isinstance(found, dict):
        return "", []
    notes = found.get("notes")
    ref = found.get("ref")
    return (ref if isinstance(ref, str) else "",
            [n for n in notes if isinstance(n, str)] if isinstance(notes, list) else [])


def build_changes(results: Results, commit_url: Any = None) -> ChangeView:
    """``commit_url(sha)`` links a baseline commit (None: no link)."""
    flaky = sum(1 for s in results.eval_sets for c in s.cases if c.flaky)
    meta = results.metadata if isinstance(results.metadata, dict) else {}
    search_notes = meta.get("baselineNotes")
    notes = [n for n in search_notes if isinstance(n, str)] if isinstance(search_notes, list) else []
    since, selection_notes = _selection_notes(meta)
    notes += selection_notes
    for claim in results.pull_request_files or []:  # the headline says each; here what its version says
        notes += ([claim.said] if claim.change == "added" else []) + claim.details
    carried = carried_sets(results)
    comparison = results.comparison
    if comparison is None:
        view = ChangeView(compared=False, flaky=flaky, notes=notes[:MAX_NOTES], carried=carried,
                          changed_since=since)
        if flaky:
            view.counts = [(f"{flaky} flaky", True)]
        if results.summary.carried:
            view.counts.append((f"{results.summary.carried} {CARRIED}", False))
        return view
    s = comparison.summary
    counts = [(plural(s.regressed, "regression", "regressions"), s.regressed > 0),
              (plural(s.improved, "improvement", "improvements"), False),
              (f"{flaky} flaky", False), (f"{s.new} new", False), (f"{s.changed} changed", False),
              (f"{s.removed} removed", False), (f"{s.carried or 0} {CARRIED}", False),
              (f"{s.outside or 0} outside this run", False)]
    shown = [c for c in counts if not c[0].startswith("0 ")]
    if not s.regressed:
        shown.insert(0, ("No regressions", False))
    info = comparison.baseline
    baseline = BaselineView(ref=info.ref or "", behind=info.commits_behind, path=info.path or "")
    if info.commit and _SHA.match(info.commit):
        baseline.commit = info.commit[:7]
        baseline.commit_url = commit_url(info.commit) if commit_url else None
    removed = [f"{r.eval_set_id} / {r.eval_id}" for r in comparison.removed]
    return ChangeView(compared=True, counts=shown, flaky=flaky, baseline=baseline,
                      drops=[str(d) for d in suite_drops(comparison)],
                      removed=removed[:MAX_REMOVED], removed_hidden=max(0, len(removed) - MAX_REMOVED),
                      suite=_suite(comparison.metrics),
                      notes=(notes + [n for n in comparison.notes if isinstance(n, str)])[:MAX_NOTES],
                      carried=carried, changed_since=since)
