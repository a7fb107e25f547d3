"""What the reports say of the overrides (compare/overrides.py): the regressions a label on
the pull request accepted - which label, who added it, when - and the cases the base branch's
quarantine file quarantines, each with its owner, reason and expiry. Plain data; the
templates escape it."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..compare.overrides import shown_time
from ..models.results import Results

MAX_LISTED = 20  # cases named; the rest counted


@dataclass
class Quarantined:
    name: str  # SET/ID
    expires: str
    owner: str
    reason: str
    status: str


@dataclass
class OverridesView:
    label: str = ""  # the accept label, when it accepted something
    actor: str = ""
    time: str = ""  # "2026-05-01 10:00 UTC"
    accepted: list[str] = field(default_factory=list)  # SET/ID of each accepted regression
    accepted_drops: list[str] = field(default_factory=list)  # metrics whose suite drop it accepted
    quarantine_source: str = ""  # ".evalcheck/quarantine.yml (at abc1234..., the merge base of ...)"
    quarantined: list[Quarantined] = field(default_factory=list)
    quarantined_total: int = 0

    def __bool__(self) -> bool:
        return bool(self.label or self.quarantined_total)


def overrides_view(results: Results) -> OverridesView:
    view = OverridesView()
    accepted = results.comparison.accepted if results.comparison is not None else None
    if accepted is not None:
        view.label, view.actor, view.time = accepted.label, accepted.actor, shown_time(accepted.time)
        view.accepted = [f"{ref.eval_set_id}/{ref.eval_id}" for ref in accepted.cases]
        view.accepted_drops = list(accepted.suite_drops or [])
    for eval_set in results.eval_sets:
        for case in eval_set.cases:
            if case.quarantined is None:
                continue
            view.quarantined_total += 1
            if len(view.quarantined) < MAX_LISTED:
                q = case.quarantined
                view.quarantined.append(Quarantined(f"{eval_set.eval_set_id}/{case.eval_id}",
                                                    q.expires, q.owner, q.reason, case.status))
    meta = results.metadata.get("quarantine") if isinstance(results.metadata, dict) else None
    if isinstance(meta, dict) and isinstance(meta.get("source"), str):
        view.quarantine_source = meta["source"]
    return view
