"""What a pull request did to a baseline file committed to the repository: the cases whose
baseline it lowered (a status that passes less, a lower score), raised, added or removed.
The gate compares with the base commit's version; this is what the report says of the
pull request's (checker/inputs/pr_files.py)."""

from __future__ import annotations

from ..models.results import CaseResult, PullRequestFile, Results
from ..safety.text import plural

SHOWN = 10  # cases named per kind in the details
_RANK = {"passed": 3, "failed": 2, "error": 1, "not_evaluated": 0}


def _cases(results: Results) -> dict[tuple[str, str], CaseResult]:
    ambiguous = results.ambiguous_ids()
    return {(key, case.eval_id): case for key, s in zip(results.set_keys(ambiguous), results.eval_sets, strict=False)
            for case in s.cases}


def _direction(base: CaseResult, mine: CaseResult) -> tuple[int, str]:
    """(-1 lowered, +1 raised, 0 neither or both) and what moved, e.g. "passed -> failed;
    tool_trajectory_avg_score 1.00 -> 0.00"."""
    moved, lower, higher = [], False, False
    if base.status != mine.status:
        moved.append(f"{base.status} -> {mine.status}")
        lower |= _RANK.get(mine.status, 0) < _RANK.get(base.status, 0)
        higher |= _RANK.get(mine.status, 0) > _RANK.get(base.status, 0)
    # gating metrics only: an informational one (a duration, a call count) has no better side
    scores = {m.name: m.score for m in base.metrics if m.score is not None and m.status != "informational"}
    for metric in mine.metrics:
        was = scores.get(metric.name)
        if was is None or metric.score is None or metric.score == was or metric.status == "informational":
            continue
        moved.append(f"{metric.name} {was:.2f} -> {metric.score:.2f}")
        lower |= metric.score < was
        higher |= metric.score > was
    return (-1 if lower and not higher else 1 if higher and not lower else 0), "; ".join(moved)


def baseline_change(shown: str, base_commit: str, base: Results, mine: Results | str,
                    via: str | None = None) -> PullRequestFile:
    """The claim of a baseline file the pull request changed: ``mine`` is its version (or
    why it is not a results file), ``base`` the base commit's, which the gate used; ``via``:
    the symbolic link its path goes through."""
    where = f"baseline file {shown} changed by this PR" + (f" (through {via})" if via else "")
    if isinstance(mine, str):
        return PullRequestFile(kind="baseline", path=shown, change="changed", base_commit=base_commit,
                               said=f"{where}: its version is not a results file (the gate "
                                    f"used the base commit's version, {base_commit[:7]})",
                               details=[f"the PR's version of {shown} (not used for the gate): {mine}"])
    before, after = _cases(base), _cases(mine)
    kinds: dict[str, list[str]] = {"lowered": [], "raised": [], "changed": [], "added": [], "removed": []}
    for key, case in after.items():
        name = f"{key[0]}/{key[1]}"
        if key not in before:
            kinds["added"].append(f"{name} ({case.status})")
            continue
        direction, moved = _direction(before[key], case)
        if moved:
            kinds["lowered" if direction < 0 else "raised" if direction > 0 else "changed"].append(
                f"{name} ({moved})")
    kinds["removed"] = [f"{key[0]}/{key[1]}" for key in before if key not in after]
    counts = [(f"1 case's baseline {kind}" if len(names) == 1 else f"{len(names)} cases' baselines {kind}")
              if kind in ("lowered", "raised", "changed") else f"{plural(len(names), 'case')} {kind}"
              for kind, names in kinds.items() if names]
    said = f"{where}: " + (", ".join(counts) if counts else "no case's baseline changed")
    said += f" (the gate used the base commit's version, {base_commit[:7]})"
    details = []
    for kind, names in kinds.items():
        if names:
            more = f", and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
            details.append(f"{kind} by the PR's version of {shown} (not used for the gate): "
                           + ", ".join(names[:SHOWN]) + more)
    return PullRequestFile(kind="baseline", path=shown, change="changed", base_commit=base_commit,
                           said=said, details=details)


def baseline_added(shown: str, base_commit: str, via: str | None = None) -> PullRequestFile:
    """A baseline file the base commit does not have: the pull request's own, not used."""
    through = f" (through {via})" if via else ""
    return PullRequestFile(kind="baseline", path=shown, change="added", base_commit=base_commit,
                           said=f"baseline file {shown} added by this PR{through}: not used for the gate "
                                f"(the base commit {base_commit[:7]} has none), so nothing was "
                                "compared with a baseline")


def record_claims(results: Results, claims: list[PullRequestFile]) -> Results:
    """``results`` with what the pull request brought (said by every report); a baseline
    read at the base commit is named by that commit in the comparison."""
    update: dict = {"pull_request_files": list(claims) or None}
    comparison = results.comparison
    at_base = {c.path: c.base_commit for c in claims if c.kind == "baseline" and c.change == "changed"}
    if comparison is not None and at_base:
        info = comparison.baseline
        history = [h.model_copy(update={"commit": at_base.get(h.path or "", h.commit)})
                   for h in info.history or []] or None
        info = info.model_copy(update={"commit": at_base.get(info.path or "", info.commit),
                                       "history": history})
        update["comparison"] = comparison.model_copy(update={"baseline": info})
    return results.model_copy(update=update)
