"""--changed-since REF: run only the eval sets a pull request can change; carry the others
from main's results (docs/changed-files.md).

An eval set runs again when a file it depends on (scale/depends.py) changed since the merge
base of REF. One that does not is carried: its cases are main's newest results for it,
labelled ``carried`` (not re-run: nothing it depends on changed), and count for the gate as
they did on main. It runs after all - and the report says why - when the baseline cannot
stand for it: main has no result for it or for one of its cases, a case's fingerprint
(its data, criteria, judge) differs from main's, main did not evaluate a case, a case
failed or errored on main (only passes are carried, as build systems cache only passing
tests: a flaky failure can clear, a real one is this run's own verdict), or main decided
with another verdict rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..compare.comparison import uncompared
from ..inputs.fingerprint import case_fingerprint
from ..models.results import CaseResult, EvalSetResult, Results, ShardInfo
from ..models.setkey import ambiguous_ids, set_key, shown
from ..agents.adk_command import read_bridge_command
from .depends import dependencies, one_server, rerun_reasons

if TYPE_CHECKING:
    from ..inputs.git_changes import Changes
    from ..inputs.discover import EvalTarget
    from .depends import AgentMapping

@dataclass(frozen=True)
class ChangedOptions:
    """What selecting by changed files takes of a run's options (checker/commands/stage_options.py)."""

    changed_since: str | None = None  # --changed-since REF (None: run everything)
    auto: bool = False  # the Action's only-changed: auto (what cannot be selected runs all, said)
    replay: bool = False  # a replay: no agent runs, nothing to select
    agent_command: str | None = None
    agent_url: str | None = None  # one server: every agent it serves is one


CARRIED_WHY = "not re-run: nothing it depends on changed"
MAX_LISTED = 20  # changed files named in the results' metadata


@dataclass
class Selection:
    """Which eval sets run and which are carried, and why."""

    ref: str
    changed: list[str]
    total: int  # eval sets selected, run and carried
    rerun: dict[str, str] = field(default_factory=dict)  # shown key -> why it runs
    carried: dict[int, EvalSetResult] = field(default_factory=dict)  # position -> main's results
    carried_names: list[str] = field(default_factory=list)  # their shown keys
    notes: list[str] = field(default_factory=list)

    def runs(self, targets: Sequence[EvalTarget]) -> list[EvalTarget]:
        return [t for i, t in enumerate(targets) if i not in self.carried]

    def lines(self) -> list[str]:
        """What the terminal says before any agent runs: what runs, what is carried, why."""
        return [self._line(), *(f"evalcheck: note: {note}" for note in self.notes)]

    def _line(self) -> str:
        runs = self.total - len(self.carried)
        text = (f"evalcheck: changed since {self.ref[:12]}: {len(self.changed)} file"
                f"{'' if len(self.changed) == 1 else 's'}; {runs} of {self.total} eval set"
                f"{'' if self.total == 1 else 's'} run")
        if self.carried:
            names = ", ".join(self.carried_names)
            text += f", {len(self.carried)} carried from main ({CARRIED_WHY}): {names}"
        return text

    def metadata(self) -> dict[str, Any]:
        return {"ref": self.ref, "changedFiles": len(self.changed), "changed": self.changed[:MAX_LISTED],
                "rerun": [{"evalSet": k, "why": why} for k, why in self.rerun.items()],
                "carried": self.carried_names,
                "notes": self.notes}


def _carried_case(case: CaseResult, line: int) -> CaseResult:
    """Main's case as this run's: main's runs, metrics and status, no comparison of main's own."""
    return case.model_copy(update={"change": "carried", "baseline_pool": None, "token_change": None,
                                   "baseline_status": None, "screening_disagrees": None,
                                   "line": line, "metrics": [uncompared(m) for m in case.metrics]})


def _why_not_carried(target: EvalTarget, base: EvalSetResult | None) -> str | EvalSetResult:
    """Main's results for the eval set, as carried; or why main's results cannot stand for it."""
    if base is None:
        return "main's results have no result for it"
    cases = {c.eval_id: c for c in base.cases}
    target.loaded.keep_cases(target.case_ids)  # an outlined (sharded) target: its cases now
    data = {c.eval_id: c for c in target.loaded.eval_set.eval_cases}
    carried = []
    for eval_id in target.case_ids:
        found = cases.get(eval_id)
        if found is None:
            return f"main's results have no case '{eval_id}' of it"
        if found.status == "not_evaluated":
            return f"main did not evaluate its case '{eval_id}'"
        if found.status != "passed":  # a flaky failure can clear, a real one is this run's verdict
            return (f"its case '{eval_id}' {'errored' if found.status == 'error' else 'failed'} "
                    "on main (only passes are carried)")
        if found.fingerprint is None or found.fingerprint != case_fingerprint(data[eval_id], target.config):
            return f"its case '{eval_id}' is not what main evaluated (its data, criteria or judge differ)"
        carried.append(_carried_case(found, target.loaded.case_lines.get(eval_id, found.line)))
    return EvalSetResult(eval_set_id=target.eval_set_id, path=target.loaded.display_path,
                         config_path=target.config.display_path, cases=carried,
                         unselected=target.unselected or None)


def select(targets: Sequence[EvalTarget], changes: Changes, ref: str, root: Path,
           baseline: Results, rule: str, options: ChangedOptions,
           mappings: Sequence[AgentMapping]) -> Selection:
    """Which of ``targets`` run, and main's results for the others (``baseline``: main's
    newest; without one nothing is selected: read_changed)."""
    selection = Selection(ref=ref, changed=changes.files, total=len(targets))
    bridge = read_bridge_command(options.agent_command)
    deps = [dependencies(t, root, mappings, bridge) for t in targets]
    if options.agent_url is not None:  # one server, one process: every agent it serves is one
        deps = one_server(deps)
    keys = [t.key for t in targets]
    reasons = rerun_reasons(keys, deps, changes.files, added=changes.added, removed=changes.removed)
    if baseline.verdict_rule != rule:
        selection.notes.append(f"main's results were decided with the verdict rule "
                               f"'{baseline.verdict_rule}', this run's is '{rule}': every eval set runs")
        reasons = {k: reasons.get(k, "main decided with another verdict rule") for k in keys}
    # Matched as the comparison matches them: by id, and by path where either side has an
    # id twice (models/setkey.py).
    ambiguous = ambiguous_ids((t.eval_set_id, t.loaded.display_path) for t in targets) | baseline.ambiguous_ids()
    base_sets = dict(zip(baseline.set_keys(ambiguous), baseline.eval_sets, strict=False))
    own_keys = [set_key(t.eval_set_id, t.loaded.display_path, ambiguous) for t in targets]
    for i, target in enumerate(targets):
        why = reasons.get(target.key)
        if why is None:
            found = _why_not_carried(target, base_sets.get(own_keys[i]))
            if isinstance(found, EvalSetResult):
                selection.carried[i] = found
                selection.carried_names.append(shown(target.key))
                continue
            why = found
            selection.notes.append(f"{shown(target.key)}: nothing it depends on changed, but {why}: it runs")
        selection.rerun[shown(target.key)] = why
    return selection


def splice(results: Results, selection: Selection, keep_cases: bool = True) -> Results:
    """This run's results with the carried eval sets in their places (their cases only in
    the shard that holds them: ``keep_cases``), summary and verdict recomputed."""
    from ..scoring.pipeline import finish_results

    if not selection.carried:
        return results
    scored = iter(results.eval_sets)
    sets = []
    for i in range(selection.total):
        carried = selection.carried.get(i)
        if carried is None:
            sets.append(next(scored))
        else:
            sets.append(carried if keep_cases else carried.model_copy(update={"cases": []}))
    return finish_results(sets, results.verdict_rule)


def shard_positions(info: ShardInfo, run_targets: Sequence[EvalTarget], selection: Selection) -> ShardInfo:
    """A shard's record with the carried cases counted: they belong to shard 1, after every
    case that runs, so that the merge places each once and in its eval set's order."""
    carried = [len(s.cases) for s in selection.carried.values()]
    if not carried:
        return info
    total = (info.total or 0) + sum(carried)
    if info.index != 1:
        return info.model_copy(update={"total": total})
    mine = iter(info.positions or [])
    counts = iter(len(t.case_ids) for t in run_targets)
    extra = iter(range(info.total or 0, total))
    positions: list[int] = []
    for i in range(selection.total):
        n = len(selection.carried[i].cases) if i in selection.carried else next(counts)
        source = extra if i in selection.carried else mine
        positions.extend(next(source) for _ in range(n))
    return info.model_copy(update={"total": total, "positions": positions})


def read_changed(options: ChangedOptions, root: Path, has_baseline: bool) -> tuple[Changes | None, list[str]]:
    """What changed since ``options.changed_since`` (None: select nothing) and notes.
    Read before any of the pull request's code runs. With the Action's ``only-changed: auto``
    what cannot be selected runs everything, said in a note; on the command line it is bad
    input."""
    from ..errors import InputError
    from ..inputs.git_changes import read_changes

    if options.changed_since is None:
        return None, []
    auto = options.auto
    if options.replay:
        raise InputError(("input 'only-changed'" if auto else "--changed-since") +
                         " selects the eval sets the agent runs, and with a replay no agent runs",
                         fix="leave it out: a replay scores the recorded runs it is given")
    if not has_baseline:
        if auto:
            return None, ["only-changed: no results of main to carry eval sets from, so every eval set runs"]
        raise InputError("--changed-since needs --baseline: the eval sets that are not re-run "
                         "are carried from main's results", fix="give --baseline main.json (the "
                         "results of a run on main), or leave --changed-since out")
    try:
        return read_changes(options.changed_since, root), []
    except InputError as exc:
        if not auto:
            raise
        return None, [f"only-changed: the files this pull request changed could not be read ({exc}): "
                      "every eval set runs"]
