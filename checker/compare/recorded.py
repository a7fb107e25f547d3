"""Confirmation runs kept in a results file, decided on again: a shard's (the merge decides
the suite's family over every shard's fresh runs) and a compared run's (``evalcheck compare``
re-reads them instead of re-deciding without them).

A results file records per case every fresh run (``freshRuns``) and per screened metric the
fresh runs its regression test read (``confirmRuns``, with ``confirmBudget``) and, for a
contested metric, those its screening-vs-confirmation test read (``disagreementRuns``). They
were asked for against one baseline at one alpha and --confirm-runs (the *family* a shard
records, ``shard.family``; a compared run's ``comparison.familywise``): decided on against
anything else they would be runs selected by another screening, so they are used only with
the same baseline files (by content) and alpha. See docs/sharding.md and docs/comparing.md.

Pure: nothing here reads files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..models.results import CaseResult, ConfirmationFamily, Results
from .confirm import Confirmation
from .pooling import CaseKey, baseline_digest


def family_of(baselines: Sequence[Results], alpha: float, confirm_runs: int) -> ConfirmationFamily:
    return ConfirmationFamily(baselines=[baseline_digest(b) for b in baselines], alpha=alpha,
                              confirm_runs=confirm_runs)


def record_shard_confirmation(results: Results, confirmation: Confirmation, family: ConfirmationFamily,
                              set_keys: Sequence[str]) -> Results:
    """A shard's ``results`` with its confirmation runs written where a compared run has
    them (no comparison: the merge compares), and ``shard.family``. ``set_keys``: each eval
    set's key, in order (what the confirmation's case keys use)."""
    assert results.shard is not None
    tests = confirmation.confirmations()
    contests = confirmation.disagreement_runs()
    sets = []
    for set_key, eval_set in zip(set_keys, results.eval_sets, strict=False):
        cases = []
        for case in eval_set.cases:
            key = (set_key, case.eval_id)
            state = confirmation.cases.get(key)
            fresh = tests.get(key)
            if state is None or fresh is None:
                cases.append(case)
                continue
            tested = {m.name: m for m in fresh.metrics}  # each cut where its test stopped
            contested = {m.name: m for m in contests[key].metrics} if key in contests else {}
            metrics = []
            for metric in case.metrics:
                update: dict = {}
                if metric.name in state.budgets:  # flagged by screening
                    update["screened"] = True
                    update["confirm_budget"] = state.budgets[metric.name]
                    update["confirm_runs"] = list(tested[metric.name].runs) if metric.name in tested else []
                if metric.name in contested:
                    update["disagreement_runs"] = list(contested[metric.name].runs)
                metrics.append(metric.model_copy(update=update) if update else metric)
            cases.append(case.model_copy(update={"metrics": metrics, "fresh_runs": list(fresh.runs),
                                                 "fresh_trajectories": fresh.trajectories}))
        sets.append(eval_set.model_copy(update={"cases": cases}))
    shard = results.shard.model_copy(update={"family": family})
    return results.model_copy(update={"eval_sets": sets, "shard": shard})


@dataclass
class RecordedConfirmation:
    """What ``comparison.compare`` takes as ``confirmations`` and ``contested_runs``, read
    back from a results file; ``screened``: the (case, metric) pairs the file says screening
    flagged."""

    confirmations: dict[CaseKey, CaseResult] = field(default_factory=dict)
    contested: dict[CaseKey, CaseResult] = field(default_factory=dict)
    screened: set[tuple[CaseKey, str]] = field(default_factory=set)


def recorded_confirmation(results: Results, set_keys: Sequence[str]) -> RecordedConfirmation:
    """The fresh runs ``results`` records, as the confirmation had them (each metric's test
    cut where it stopped; a fresh run that errored is a failing run, as it was)."""
    out = RecordedConfirmation()
    for set_key, eval_set in zip(set_keys, results.eval_sets, strict=False):
        for case in eval_set.cases:
            key = (set_key, case.eval_id)
            out.screened.update((key, m.name) for m in case.metrics if m.screened)
            if case.fresh_runs is None:
                continue
            runs = list(case.fresh_runs)
            kept = {"runs": runs, "trajectories": case.fresh_trajectories}
            tested = [m.model_copy(update={"runs": list(m.confirm_runs)}) for m in case.metrics
                      if m.confirm_runs is not None]
            contested = [m.model_copy(update={"runs": list(m.disagreement_runs)}) for m in case.metrics
                         if m.disagreement_runs is not None]
            if tested:
                out.confirmations[key] = case.model_copy(update={**kept, "metrics": tested})
            if contested:
                out.contested[key] = case.model_copy(update={**kept, "metrics": contested})
    return out


def recorded_keys(results: Results, baselines: Sequence[Results]) -> list[str]:
    """Each eval set's key as ``comparison.compare`` keys ``results`` against ``baselines``."""
    ambiguous = results.ambiguous_ids().union(*(b.ambiguous_ids() for b in baselines))
    return results.set_keys(ambiguous)


def check_family(family: ConfirmationFamily, baselines: Sequence[Results], shown: Sequence[str],
                 alpha: float, where: str, what: str) -> None:
    """Raise InputError unless ``baselines`` (named ``shown``) and ``alpha`` are the family's:
    fresh runs chosen by a screening against other results of main, or stopped at another
    alpha, decide nothing here. ``where``: the file holding the family; ``what``: who
    screened ("the shards")."""
    from ..errors import InputError

    mine = [baseline_digest(b) for b in baselines]
    files = len(family.baselines)
    if not baselines:
        raise InputError(f"{what} screened and confirmed against {files} baseline file"
                         f"{'' if files == 1 else 's'}, but no --baseline was given", file=where,
                         path="$.shard.family.baselines",
                         fix="give the same --baseline files as the shards had, newest first")
    if mine != family.baselines:
        differ = next((i for i, (a, b) in enumerate(zip(mine, family.baselines, strict=False)) if a != b), None)
        said = (f"{len(shown)} --baseline file{'' if len(shown) == 1 else 's'} given, {files} "
                "screened against" if len(mine) != files else
                f"--baseline {shown[differ or 0]} is not the results of main {what} had there")
        raise InputError(f"{what} screened and confirmed against other results of main than this "
                         f"merge: {said}", file=where, path="$.shard.family.baselines",
                         fix="give the same --baseline files as the shards had, newest first (in "
                             "the Action: every job finds the same artifacts unless main's run "
                             "finished in between; re-run the workflow)")
    if alpha != family.alpha:
        raise InputError(f"{what} confirmed at alpha {family.alpha:g}, this merge is at --alpha {alpha:g}",
                         file=where, path="$.shard.family.alpha", fix=f"give --alpha {family.alpha:g}")


def check_screened(compared: Results, recorded: RecordedConfirmation, set_keys: Sequence[str],
                   where: str, holder: str = "its shard") -> None:
    """Raise InputError when the comparison screens a (case, metric) the file recorded no
    screening of, or the other way round: its fresh runs were not chosen by this screening
    (a file edited, or confirmed against another baseline)."""
    from ..errors import InputError

    for set_key, eval_set in zip(set_keys, compared.eval_sets, strict=False):
        for case in eval_set.cases:
            for metric in case.metrics:
                was = ((set_key, case.eval_id), metric.name) in recorded.screened
                if bool(metric.screened) != was:
                    raise InputError(
                        f"eval case '{case.eval_id}' of eval set '{eval_set.eval_set_id}', metric "
                        f"{metric.name}: screening against the baseline "
                        f"{'flags' if metric.screened else 'does not flag'} "
                        f"it, but {holder} {'recorded no' if metric.screened else 'ran'} confirmation runs for it",
                        file=where, fix="give the results files as evalcheck wrote them, with the --baseline files "
                                        "they were run against")


@dataclass
class Reuse:
    """What `evalcheck compare` does with the confirmation runs a results file holds: decide
    on them (``recorded``), or not, with why (``why``) and how many were left out (``runs``)."""

    recorded: RecordedConfirmation | None = None
    runs: int = 0
    why: str = ""


def _fresh_count(results: Results) -> int:
    """The fresh runs a results file holds: per case, every one (``freshRuns``), or for a
    file that does not record them, the most any metric's tests read."""
    total = 0
    for eval_set in results.eval_sets:
        for case in eval_set.cases:
            if case.fresh_runs is not None:
                total += len(case.fresh_runs)
            else:
                total += max((len(m.confirm_runs or []) for m in case.metrics), default=0)
    return total


def reuse_recorded(head: Results, baselines: Sequence[Results], alpha: float) -> Reuse:
    """Whether ``head``'s confirmation runs can decide its comparison with ``baselines`` at
    ``alpha``: only against the results of main they were asked for against (by content,
    in order) and at the alpha their stops used."""
    runs = _fresh_count(head)
    if not runs:
        return Reuse()
    familywise = (head.comparison.familywise if head.comparison is not None else None) or {}
    recorded_against = familywise.get("baselines")
    older = any(c.fresh_runs is None and any(m.confirm_runs is not None for m in c.metrics)
                for s in head.eval_sets for c in s.cases)
    if not isinstance(recorded_against, list) or older:
        return Reuse(None, runs, "the results file does not record what they were asked for against: "
                                 "written by an older evalcheck")
    if recorded_against != [baseline_digest(b) for b in baselines]:
        return Reuse(None, runs, "they were asked for against other results of main than the BASELINE "
                                 "files given")
    if familywise.get("alpha") != alpha:
        return Reuse(None, runs, f"they stopped at alpha {familywise.get('alpha')}, this comparison is "
                                 f"at --alpha {alpha:g}")
    return Reuse(recorded_confirmation(head, recorded_keys(head, baselines)), runs)
