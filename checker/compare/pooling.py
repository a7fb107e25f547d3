"""Main's history as the baseline: the runs of several results files of main, pooled per case.

Baseline files come newest first (``--baseline`` given several times, or the Action's
``baseline: auto`` with ``baseline-depth``). For each case of the PR:

- the newest file that has the case decides what it is compared with: no file has it ->
  ``new``; its fingerprint or criteria differ from the PR's -> ``changed``;
- then older files are pooled into it, newest first, while each is *consistent* with the
  runs pooled so far: same fingerprint and criteria (another eval data or threshold is
  another case), and on every gating metric neither one-sided Fisher p-value of the older
  file's pass count against the pool is <= ``CONSISTENT_P``. The first older file that
  fails this ends the pooling for that case: a regression that already reached main, or a
  fix, is a change point, and runs from before it would make main look better (or worse)
  than it is now.

Pure: nothing here reads files or changes its inputs.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from ..models.results import BaselineInfo, CaseResult, MetricResult, Results
from .stats import fisher_better, fisher_worse

# An older commit joins the pool unless its pass count differs from the pool's at this
# level (either direction). 3/3 against 0/3 (p = 0.05 each way) is a change point.
CONSISTENT_P = 0.05

CaseKey = tuple[str, str]


def baseline_digest(baseline: Results) -> str:
    """"sha256:..." of a baseline's content as read (not its bytes or path: the same results
    of main downloaded by two jobs, or read at the base commit, are the same baseline)."""
    return "sha256:" + hashlib.sha256(baseline.model_dump_json(by_alias=True).encode("utf-8")).hexdigest()


def criteria(case: CaseResult) -> dict[str, float | None]:
    return {m.name: m.threshold for m in case.metrics if m.status != "informational"}


def run_passes(case: CaseResult, metric: MetricResult) -> list[bool]:
    """Per run, whether it passed the metric's threshold (in the metric's direction). A run
    whose agent errored (after its retries) counts as failing; a run the metric alone could
    not score is left out."""
    errored = {r.run for r in case.runs if r.status == "error"}
    runs = [r.run for r in case.runs]
    out = []
    for index, score in enumerate(metric.runs):
        if score is not None:
            out.append(metric.threshold is not None and metric.meets(score))
        elif index < len(runs) and runs[index] in errored:
            out.append(False)
    return out


def same_case(base: CaseResult, head: CaseResult) -> bool:
    """Whether ``base`` evaluated what ``head`` evaluates (fingerprint, criteria)."""
    if base.fingerprint and head.fingerprint and base.fingerprint != head.fingerprint:
        return False
    return criteria(base) == criteria(head)


def _consistent(pool: dict[str, list[bool]], older: CaseResult) -> bool:
    for metric in older.metrics:
        if metric.name not in pool or metric.status == "informational":
            continue
        have, other = pool[metric.name], run_passes(older, metric)
        if not have or not other:
            continue
        k, n, k_old, n_old = sum(have), len(have), sum(other), len(other)
        if fisher_worse(k, n, k_old, n_old) <= CONSISTENT_P or \
                fisher_better(k, n, k_old, n_old) <= CONSISTENT_P:
            return False
    return True


@dataclass
class PooledCase:
    """The baseline one PR case is compared with."""

    newest: CaseResult  # the newest file's case: its status and scores are "main now"
    sources: list[int]  # indices (newest first) of the files whose runs were pooled
    passes: dict[str, list[bool]]  # per gating metric, every pooled run's pass/fail
    scores: dict[str, list[float | None]] = field(default_factory=dict)  # pooled run scores
    newest_runs: dict[str, int] = field(default_factory=dict)  # per metric: the newest file's runs

    def screening(self, metric: str) -> list[bool]:
        """What screening compares the PR's first runs with: the newest file's runs."""
        return self.passes.get(metric, [])[:self.newest_runs.get(metric, 0)]

    def confirming(self, metric: str) -> list[bool]:
        """What fresh confirmation runs are compared with: the runs of the *older* files
        when there are any. Screening selected on the newest file's runs; a decision
        against those same runs would be biased (a baseline that happened to look good is
        what gets a case screened), so they are left out of it."""
        passes = self.passes.get(metric, [])
        older = passes[self.newest_runs.get(metric, 0):]
        return older if len(self.sources) > 1 and older else passes


class BaselinePool:
    """Baseline results files, newest first, indexed by case."""

    def __init__(self, files: list[Results], infos: list[BaselineInfo] | None = None,
                 ambiguous: set[str] | frozenset[str] = frozenset()):
        if not files:
            raise ValueError("a baseline pool needs at least one results file")
        self.files = files
        self.infos = infos or [BaselineInfo() for _ in files]
        # Eval set ids that two files share in any file here or in the run compared
        # (``ambiguous``): those cases are keyed by id and path (checker/models/setkey.py).
        self.ambiguous = set(ambiguous).union(*(f.ambiguous_ids() for f in files))
        self._index: list[dict[CaseKey, CaseResult]] = [
            {(k, c.eval_id): c for k, s in zip(f.set_keys(self.ambiguous), f.eval_sets, strict=False) for c in s.cases}
            for f in files]
        self._paths: dict[str, str] = {}  # eval set key -> its eval file (the newest file's)
        for f in files:
            for k, s in zip(f.set_keys(self.ambiguous), f.eval_sets, strict=False):
                self._paths.setdefault(k, s.path)

    @property
    def newest(self) -> Results:
        return self.files[0]

    def keys(self) -> list[CaseKey]:
        """Every case of any file, newest file's order first."""
        seen: dict[CaseKey, None] = {}
        for index in self._index:
            seen.update(dict.fromkeys(index))
        return list(seen)

    def set_path(self, set_key: str) -> str | None:
        """The eval file of an eval set of the baseline (as the newest file naming it has it)."""
        return self._paths.get(set_key)

    def newest_case(self, key: CaseKey) -> tuple[int, CaseResult] | None:
        for position, index in enumerate(self._index):
            if key in index:
                return position, index[key]
        return None

    def compared_cases(self, key: CaseKey, pooled: PooledCase | None) -> list[CaseResult]:
        """Main's results of the case a comparison read, newest first: those ``pooled``, else
        (a ``changed`` case) the newest that has it; [] for a new case."""
        if pooled is not None:
            return [self._index[position][key] for position in pooled.sources]
        found = self.newest_case(key)
        return [found[1]] if found is not None else []

    def pooled(self, key: CaseKey, head: CaseResult) -> PooledCase | None:
        """The pooled baseline of ``head``; None when the newest file that has the case
        evaluated something else (``changed``) - and None when no file has it (``new``):
        tell the two apart with ``newest_case``."""
        found = self.newest_case(key)
        if found is None or not same_case(found[1], head):
            return None
        first, newest = found
        gating = [m for m in newest.metrics if m.status != "informational"]
        passes = {m.name: run_passes(newest, m) for m in gating}
        scores = {m.name: list(m.runs) for m in gating}
        newest_runs = {name: len(p) for name, p in passes.items()}
        sources = [first]
        for position in range(first + 1, len(self.files)):
            older = self._index[position].get(key)
            if older is None or not same_case(older, head):
                continue  # another eval data or criteria: not this case's history
            if not _consistent(passes, older):
                break  # a change point: nothing older describes main as it is now
            by_name = {m.name: m for m in older.metrics}
            for name in passes:
                metric = by_name.get(name)
                if metric is not None:
                    passes[name] += run_passes(older, metric)
                    scores[name] += list(metric.runs)
            sources.append(position)
        return PooledCase(newest=newest, sources=sources, passes=passes, scores=scores,
                          newest_runs=newest_runs)
