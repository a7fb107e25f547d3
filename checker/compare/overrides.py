"""Overrides with a trail (docs/quarantine.md): cases the base branch's quarantine file
quarantines, and regressions a label on the pull request accepts.

Neither changes a score, a status or a change label. They are written into the results - per
case ``quarantined: {reason, owner, expires}``, ``comparison.accepted: {label, actor, time,
cases}`` - and the gate (compare/gate.py) reads them there: a quarantined case never gates,
an accepted regression does not fail it. Every report says what was overridden, by whom and
until when.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, UTC
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING

from ..models.results import Acceptance, CaseRef, QuarantineNote, Results
from .comparison import suite_drops

if TYPE_CHECKING:
    from ..inputs.quarantine import Quarantine, QuarantineEntry


def utc_today() -> date:
    return datetime.now(UTC).date()


@dataclass(frozen=True)
class AcceptLabel:
    """The accept label on the pull request, as its timeline says: who added it, when, and
    the head commit it was given for; ``refused``: why it accepts nothing (added before the
    latest push, by an account without the permission it needs, by a bot not allowed)."""

    label: str
    actor: str  # login
    time: str  # ISO 8601, as GitHub gives it
    commit: str = ""  # the head commit the run evaluates, which the label was added after
    refused: str | None = None


@dataclass
class Overrides:
    quarantine: Quarantine | None = None  # the base branch's file (inputs/quarantine.py)
    accept: AcceptLabel | None = None  # the label, when the pull request carries it
    today: date = field(default_factory=utc_today)  # the day quarantine entries are held to


def _matching(entries: tuple[QuarantineEntry, ...], name: str) -> list[QuarantineEntry]:
    return [e for e in entries if fnmatchcase(name, e.case)]


def apply_quarantine(results: Results, quarantine: Quarantine, today: date) -> list[str]:
    """Mark each case an entry in force matches (the first such entry); record what was
    read in ``metadata.quarantine``. Returns the warnings: each expired entry (its cases
    gate again), naming its owner."""
    held = 0
    expired: dict[int, int] = {}  # entry index -> cases it would have quarantined
    for eval_set in results.eval_sets:
        for case in eval_set.cases:
            found = _matching(quarantine.entries, f"{eval_set.eval_set_id}/{case.eval_id}")
            in_force = [e for e in found if e.holds_on(today)]
            if in_force:
                case.quarantined = QuarantineNote(**in_force[0].as_json())
                held += 1
            else:
                for entry in found:
                    expired[entry.index] = expired.get(entry.index, 0) + 1
    warnings = []
    for entry in quarantine.entries:
        if entry.holds_on(today):
            continue
        cases = expired.get(entry.index, 0)
        warnings.append(
            f"{quarantine.source} at $[{entry.index}]: the quarantine of {entry.case} expired on "
            f"{entry.expires.isoformat()} (owner {entry.owner}); "
            + (f"the {cases} cases it matches gate again" if cases > 1
               else "the case it matches gates again" if cases else "it matches no case evaluated here")
            + f": {entry.owner}, renew it (a later expires) or remove it on the base branch")
    results.metadata["quarantine"] = {
        "source": quarantine.source, "commit": quarantine.commit, "entries": len(quarantine.entries),
        "quarantined": held, "expired": [e.case for e in quarantine.entries if not e.holds_on(today)]}
    return warnings


def accept_regressions(results: Results, accept: AcceptLabel) -> None:
    """``comparison.accepted``: the regressed cases (not quarantined: those do not gate
    anyway) and the suite's drops the label accepts; nothing when there are none."""
    if accept.refused is not None:  # said in the gate's line and the report, never assumed
        results.metadata["acceptLabelRefused"] = accept.refused
        results.metadata["warnings"] = [accept.refused, *results.metadata.get("warnings", [])]
        return
    comparison = results.comparison
    if comparison is None:
        return
    ambiguous = results.ambiguous_ids()
    cases = [CaseRef(eval_set_id=s.eval_set_id, eval_id=c.eval_id,
                     path=s.path if s.eval_set_id in ambiguous else None)
             for s in results.eval_sets for c in s.cases
             if c.change == "regressed" and c.quarantined is None]
    drops = [shift.metric for shift in suite_drops(comparison)]
    if cases or drops:
        comparison.accepted = Acceptance(label=accept.label, actor=accept.actor, time=accept.time,
                                         commit=accept.commit or None, cases=cases,
                                         suite_drops=drops or None)


def forget_overrides(results: Results) -> None:
    """Overrides a results file read back already carries - a shard's, HEAD of ``compare``,
    main's carried cases - are not this run's: the base branch and the pull request decide
    them here, each time (a pull request's own shard file could mark its cases quarantined)."""
    for eval_set in results.eval_sets:
        for case in eval_set.cases:
            case.quarantined = None
    if results.comparison is not None:
        results.comparison.accepted = None
    if isinstance(results.metadata, dict):
        results.metadata.pop("quarantine", None)
        refused = results.metadata.pop("acceptLabelRefused", None)
        warnings = results.metadata.get("warnings")
        if refused is not None and isinstance(warnings, list):
            results.metadata["warnings"] = [w for w in warnings if w != refused]


def apply_overrides(results: Results, overrides: Overrides | None) -> list[str]:
    """Quarantine, then the accept label, written into ``results`` (whatever it carried
    before is forgotten first); the warnings to say. A shard's results are not gated (the
    merge is): nothing is applied to them."""
    forget_overrides(results)
    if overrides is None or results.shard is not None:
        return []
    warnings = []
    if overrides.quarantine is not None:
        warnings = apply_quarantine(results, overrides.quarantine, overrides.today)
    if overrides.accept is not None:
        accept_regressions(results, overrides.accept)
    if warnings:
        # first: the report shows the first ten warnings, and these change what gates
        results.metadata["warnings"] = [*warnings, *results.metadata.get("warnings", [])]
    return warnings


def shown_time(iso: str) -> str:
    """GitHub's "2026-05-01T10:00:00Z" as "2026-05-01 10:00 UTC" (as given if it is not one)."""
    try:
        when = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def override_parts(results: Results) -> list[str]:
    """What the gate's lines say of the overrides: the regressions accepted (by which label,
    who added it, when), the cases quarantined, the expired quarantine entries."""
    parts = []
    accepted = results.comparison.accepted if results.comparison is not None else None
    if accepted is not None and (accepted.cases or accepted.suite_drops):
        n = len(accepted.cases)
        what = [f"{n} regression{'s' if n != 1 else ''}"] if n else []
        if accepted.suite_drops:
            what.append("the suite's drop in " + ", ".join(accepted.suite_drops))
        given = f" after the push of {accepted.commit[:7]}" if accepted.commit else ""
        parts.append(f"{' and '.join(what)} accepted by label `{accepted.label}` (added by "
                     f"@{accepted.actor} at {shown_time(accepted.time)}{given}, read from the pull "
                     "request's timeline)")
    refused = results.metadata.get("acceptLabelRefused") if isinstance(results.metadata, dict) else None
    if isinstance(refused, str) and refused:
        parts.append(refused)
    quarantined = [c for s in results.eval_sets for c in s.cases if c.quarantined is not None]
    if quarantined:
        failing = sum(c.status != "passed" for c in quarantined)
        regressed = sum(c.change == "regressed" for c in quarantined)
        said = [f"{failing} did not pass" if failing else "", f"{regressed} regressed" if regressed else ""]
        n = len(quarantined)
        parts.append(f"{n} case{'s' if n != 1 else ''} quarantined, not gating"
                     + (f" ({', '.join(x for x in said if x)})" if failing or regressed else ""))
    quarantine = results.metadata.get("quarantine")
    expired = quarantine.get("expired") if isinstance(quarantine, dict) else None
    if isinstance(expired, list) and expired:
        n = len(expired)
        parts.append(f"{n} quarantine entr{'ies' if n != 1 else 'y'} expired ("
                     + ", ".join(map(str, expired[:3])) + (", ..." if n > 3 else "")
                     + f"): what {'they match gate' if n != 1 else 'it matches gates'} again")
    return parts


def read_overrides(quarantine_ref: str | None, accept: AcceptLabel | None, root: Path,
                   notes: list[str], *, auto: bool = False) -> Overrides | None:
    """A run's overrides, read before any of the pull request's code runs: the quarantine
    file of the commit ``quarantine_ref`` names (--quarantine-ref; ``auto``: the Action's,
    inputs/quarantine.py) and the accept label found on the pull request (the Action).
    Notes (a quarantine file not applied) go to ``notes``."""
    quarantine = None
    if quarantine_ref is not None:
        from ..inputs.quarantine import read_quarantine

        quarantine, said = read_quarantine(quarantine_ref, root, auto=auto)
        notes.extend(said)
    if quarantine is None and accept is None:
        return None
    return Overrides(quarantine=quarantine, accept=accept)


def say_overrides(warnings: list[str]) -> None:
    from ..safety.output import clean, say

    for warning in warnings:
        say(f"evalcheck: warning: {clean(warning)}", err=True)
