"""The results file (CONTRACT sections 4 and 8): what reports, annotations and the gate read.

Version 1 is additive: keys added since (verdict rule, shard, comparison, fingerprints,
change labels) are optional, written only when they apply, and a reader ignores keys it
does not know, so a results file written by a newer evalcheck still reads here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, PrivateAttr, field_validator

from .base import OutputModel
from .behaviour import MAX_TRAJECTORIES, Behaviour, Trajectory
from .setkey import ambiguous_ids, set_key
from .refusal import ServiceRefusal
from .usage import Usage

CaseStatus = Literal["passed", "failed", "error", "not_evaluated"]
MetricStatus = Literal["passed", "failed", "error", "not_evaluated", "informational"]
RunStatus = Literal["passed", "failed", "error", "not_evaluated"]
# A case against the baseline (CONTRACT section 8); "removed" cases are listed apart.
# "carried": not re-run (--changed-since: nothing it depends on changed), main's results.
ChangeLabel = Literal["regressed", "improved", "unchanged", "new", "changed", "carried"]


def meets_threshold(score: float, threshold: float, lower_is_better: bool = False) -> bool:
    """Whether a score passes its threshold: ``>=``, or ``<=`` for a metric whose evaluator
    marks lower scores as passing (scoring/aggregation.py)."""
    return score <= threshold if lower_is_better else score >= threshold


def _unset(value: Any) -> bool:
    return value is None


def optional(**kwargs: Any) -> Any:
    """A key written only when it has a value (CONTRACT: "present only when ...")."""
    return Field(default=None, exclude_if=_unset, **kwargs)


class ResultsModel(OutputModel):
    """Results are read back (baselines, shards, publish): unknown keys are ignored."""

    model_config = ConfigDict(extra="ignore")


class RunResult(ResultsModel):
    run: int
    status: RunStatus
    error: str | None = None
    duration_seconds: float | None = None
    stderr_tail: str | None = None
    # Attempts of this run that errored before it and were run again (--retries).
    retries: int | None = optional()
    # Tokens the agent reported and the judges used on this run (models/usage.py).
    usage: Usage | None = optional()
    # The model service refused or failed this run and kept doing so past --max-service-wait
    # (status ``not_evaluated``: never a failing run); ``refusals``: its attempts the service
    # refused (each run again after a wait), whether or not the last one got through.
    unavailable: ServiceRefusal | None = optional()
    refusals: int | None = optional()


class MetricResult(ResultsModel):
    name: str
    threshold: float | None
    score: float | None
    status: MetricStatus
    runs: list[float | None] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    # True when the metric's evaluator marks lower scores as passing: it passes, and so does
    # each run, at ``score <= threshold`` (absent: ``>=``).
    lower_is_better: bool | None = optional()
    # Each run's scored turns, when the runs scored different numbers of turns: ``score`` is
    # the mean over every scored turn, so each run weighs by its turns (absent: equally).
    run_turns: list[int] | None = optional()
    # Against a baseline: its score, this score minus it, and the one-sided p-value of the
    # runs' pass/fail counts (Fisher's exact test) when both sides have scored runs.
    baseline_score: float | None = optional()
    delta: float | None = optional()
    p_value: float | None = optional()
    # The baseline's per-run scores (for its pass count k/N beside this one's): every run
    # pooled from main's history, newest commit first.
    baseline_runs: list[float | None] | None = optional()
    # Confirmation (a PR with an agent): whether screening flagged this metric, and the
    # scores of the fresh runs the decision was made on.
    screened: bool | None = optional()
    confirm_runs: list[float | None] | None = optional()
    # The most fresh runs its test could have had (--confirm-runs, or two thirds of it where
    # screening saw only a slight drop); ``confirm_runs`` is what it took before it stopped.
    confirm_budget: int | None = optional()
    # Every screening run failed where main passed every run, and the fresh runs contradict
    # it (compare/disagreement.py): {screening: [passed, runs], fresh: [passed, runs],
    # pValue, level}.
    screening_disagreement: dict[str, Any] | None = optional()
    # A contested metric (every screening run failed where main passed every run): the scores
    # of the fresh runs its screening-vs-confirmation test read. It may go on past
    # ``confirm_runs`` (the regression test's): the extra runs are the ones asked for only
    # for that test (``metadata.confirmContestedRuns``).
    disagreement_runs: list[float | None] | None = optional()

    @property
    def min_max(self) -> tuple[float, float] | None:
        scored = [s for s in self.runs if s is not None]
        return (min(scored), max(scored)) if scored else None

    def meets(self, score: float) -> bool:
        """Whether ``score`` (the metric's, or one run's) passes its threshold."""
        assert self.threshold is not None
        return meets_threshold(score, self.threshold, bool(self.lower_is_better))


class MetricVerdict(ResultsModel):
    """One metric on one run: its score and status, and each invocation's score."""

    name: str
    threshold: float | None
    score: float | None
    status: MetricStatus
    invocations: list[float | None] = Field(default_factory=list)


class RunVerdicts(ResultsModel):
    run: int
    metrics: list[MetricVerdict] = Field(default_factory=list)


class QuarantineNote(ResultsModel):
    """The base branch's quarantine entry a case matched (.evalcheck/quarantine.yml): the
    case ran and is reported, and does not gate until ``expires`` (inclusive)."""

    reason: str
    owner: str
    expires: str  # YYYY-MM-DD


class PassRate(ResultsModel):
    """A pass rate with its Wilson 95% interval (compare/reliability.py)."""

    rate: float
    low: float
    high: float


class CaseReliability(ResultsModel):
    """A case's runs (passed, failed or errored; not the unevaluated) and those that passed,
    with the Wilson 95% interval of that rate; pass^k and pass@k at the suite's k, estimated
    from the runs (absent when the case has fewer than k)."""

    runs: int
    passed: int
    pass_rate: PassRate
    k: int
    pass_hat_k: float | None = optional()
    pass_at_k: float | None = optional()


class SuiteReliability(ResultsModel):
    """pass^k and pass@k over the cases with at least k runs (the mean of their estimates),
    each with its Wilson 95% interval over those cases; ``fewerRuns``: cases left out."""

    k: int
    cases: int
    pass_hat_k: PassRate
    pass_at_k: PassRate
    fewer_runs: int | None = optional()


class CaseResult(ResultsModel):
    eval_id: str
    status: CaseStatus
    line: int = 1
    runs: list[RunResult] = Field(default_factory=list)
    metrics: list[MetricResult] = Field(default_factory=list)
    # "sha256:..." of what was evaluated (the case's data, its criteria, the judge model):
    # a baseline case with another fingerprint is "changed", not compared.
    fingerprint: str | None = optional()
    change: ChangeLabel | None = optional()
    # A gating metric's runs disagree (some pass, some fail).
    flaky: bool = False
    # Which baseline files (indices into comparison.baseline.history, newest first) were
    # pooled into this case's baseline; only when several were given.
    baseline_pool: list[int] | None = optional()
    # Main's verdict on this case (the newest baseline result that has it), when compared:
    # the headline says "as on main" only of a failing case main failed too.
    baseline_status: CaseStatus | None = optional()
    # True when the fresh confirmation runs contradict a drop every screening run showed
    # (compare/disagreement.py): a failure under fail-on regression, never "within noise".
    screening_disagrees: bool | None = optional()
    # Every fresh confirmation run of the case, in order (kept apart from ``runs``, which make
    # its own verdict): a metric's ``confirmRuns`` and ``disagreementRuns`` are the first of
    # them. A shard records them for the merge to decide on (docs/sharding.md).
    fresh_runs: list[RunResult] | None = optional()
    # The distinct trajectories those fresh runs took, as ``trajectories`` (the behaviour diff
    # counts them on this run's side: a merge or `compare` decides and shows it again).
    fresh_trajectories: list[Trajectory] | None = optional()
    # Not written: each run's verdict per metric, as scored (what --adk-eval-history writes
    # per run: checker/report/adk_history.py). None for a case read from a file.
    _run_verdicts: list[RunVerdicts] | None = PrivateAttr(default=None)
    # The sum of the runs' usage; against a baseline, the agent's tokens per run on both
    # sides (compare/tokens.py): {baseline, here, percent}.
    usage: Usage | None = optional()
    token_change: dict[str, Any] | None = optional()
    # Quarantined by the base branch's quarantine file: reported, never gating.
    quarantined: QuarantineNote | None = optional()
    # What the runs did, each distinct tool trajectory and the runs that took it; and against
    # a baseline, for a regressed, changed or flaky case, main's usual behaviour beside this
    # run's (models/behaviour.py).
    trajectories: list[Trajectory] | None = optional()
    behaviour: Behaviour | None = optional()
    # Written with the results file (report/results_json.py): its runs' pass rate, pass^k, pass@k.
    reliability: CaseReliability | None = optional()

    @field_validator("trajectories", "fresh_trajectories", mode="before")
    @classmethod
    def _most_common(cls, found: Any) -> Any:
        """As many as the writer keeps (models/behaviour.py): the first, the most common;
        cut before the rest are validated."""
        return found[:MAX_TRAJECTORIES] if isinstance(found, list) else found

    @property
    def run_verdicts(self) -> list[RunVerdicts] | None:
        return self._run_verdicts

    def keep_run_verdicts(self, verdicts: list[RunVerdicts]) -> None:
        """Keep each run's verdicts as scored (scoring/case.py), for --adk-eval-history."""
        self._run_verdicts = verdicts


class EvalSetResult(ResultsModel):
    eval_set_id: str
    path: str
    config_path: str | None = None
    cases: list[CaseResult] = Field(default_factory=list)
    # The eval file's cases a case filter left out (`file:a,b`): outside this run, so a
    # comparison does not call them removed.
    unselected: list[str] | None = optional()


class Summary(ResultsModel):
    eval_sets: int = 0
    cases: int = 0
    passed: int = 0
    failed: int = 0
    errored: int = 0
    not_evaluated: int = 0
    # Every case's usage summed, with the estimated cost when prices are known (cases
    # carried from main left out: this run did not spend their tokens).
    usage: Usage | None = optional()
    # Cases carried from main, not re-run (--changed-since); counted above with main's status.
    carried: int | None = optional()
    # Written with the results file (report/results_json.py): the suite's pass^k and pass@k.
    reliability: SuiteReliability | None = optional()


class ConfirmationFamily(ResultsModel):
    """What a shard screened and confirmed against (docs/sharding.md): main's results (each
    "sha256:..." of the baseline file's content as read, newest first), the family-wise alpha
    and --confirm-runs. The merge decides the whole suite's family on the shards' fresh runs,
    and only for shards that agree on this, with its own --baseline and --alpha."""

    baselines: list[str]
    alpha: float
    confirm_runs: int


class ShardInfo(ResultsModel):
    index: int = Field(ge=1)  # 1-based
    count: int = Field(ge=1)
    selection: str  # "sha256:..." of the files, case ids and score-changing options
    # Cases in the whole selection, and where each of this file's cases (in file order)
    # stands in it (0-based): the merge checks completeness and restores the order.
    total: int | None = optional()
    positions: list[int] | None = optional()
    # What the split was priced with: "sha256:..." of the baseline durations of the selected
    # cases (--baseline), or "none". Not in ``selection``: it changes which shard a case is
    # in, not its score. Absent in files of an evalcheck that did not record it.
    baseline_durations: str | None = optional()
    # Given a baseline with an agent, the shard screened its cases and ran their confirmation
    # runs (recorded per case and metric); this is what it did so against. Absent: it ran none.
    family: ConfirmationFamily | None = optional()


class BaselineFile(ResultsModel):
    """One results file of main's history."""

    path: str | None = optional()
    commit: str | None = optional()


class BaselineInfo(ResultsModel):
    path: str | None = optional()
    ref: str | None = optional()  # the branch the commit is on (the Action's automatic baseline)
    commit: str | None = optional()
    commits_behind: int | None = optional()
    # Main's history: every baseline file given, newest first (only when several were);
    # cases name the ones pooled into their baseline by index (CaseResult.baseline_pool).
    history: list[BaselineFile] | None = optional()


class ChangeSummary(ResultsModel):
    regressed: int = 0
    improved: int = 0
    unchanged: int = 0
    new: int = 0
    changed: int = 0
    removed: int = 0
    carried: int | None = optional()  # cases carried from main (--changed-since)
    # Baseline cases outside this run (eval files it was not given, cases a filter left out):
    # neither compared nor removed.
    outside: int | None = optional()


class CaseRef(ResultsModel):
    eval_set_id: str
    eval_id: str
    # The eval file, when two eval sets of the comparison share the id (models/setkey.py).
    path: str | None = optional()


class Acceptance(ResultsModel):
    """Regressions accepted by a label on the pull request (the Action's accept-label):
    the label, who added it and when (read from the pull request's timeline), and what it
    accepted - the regressed cases and the suite's drops - which then do not fail the gate."""

    label: str
    actor: str  # the login that added the label
    time: str  # when, as GitHub says (ISO 8601, UTC)
    commit: str | None = optional()  # the head commit it was given for (added after its push)
    cases: list[CaseRef] = Field(default_factory=list)
    suite_drops: list[str] | None = optional()  # metrics whose suite mean dropped for sure


class Comparison(ResultsModel):
    baseline: BaselineInfo = Field(default_factory=BaselineInfo)
    summary: ChangeSummary = Field(default_factory=ChangeSummary)
    removed: list[CaseRef] = Field(default_factory=list)
    # Suite level (per metric): mean delta with its interval, pass rates with Wilson
    # intervals, and notes (e.g. "baseline has no fingerprints"); see docs/comparing.md.
    metrics: list[dict[str, Any]] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    # The family-wise decision: {alpha, method, tests, testable, level, confirmed}.
    familywise: dict[str, Any] | None = optional()
    # --max-token-increase: {maxIncrease, passed, exceeded: [{evalSetId, evalId, percent}]}
    # (compare/tokens.py); fails the job beside the gate, whatever fail-on says.
    token_gate: dict[str, Any] | None = optional()
    # Main's history as a trend, oldest first: [{commit, passRate, metrics: {name: mean}}]
    # (report/trend.py); only with 2 or more results of main.
    trend: list[dict[str, Any]] | None = optional()
    # Regressions accepted by a label on the pull request (compare/overrides.py).
    accepted: Acceptance | None = optional()


class PullRequestFile(ResultsModel):
    """A file of the repository the gate read that the change under test added or changed
    (inputs/pr_files.py): its claim, which the headline says."""

    kind: Literal["baseline", "replay"]
    path: str  # relative to the repository root
    # "unknown": the base commit was not in the checkout to tell (a replay file)
    change: Literal["added", "changed", "unknown"]
    base_commit: str | None = optional()  # the merge base it was compared with
    said: str  # "baseline file changed by this PR: 3 cases' baselines lowered"
    # What the pull request's version says (a baseline's: the cases it lowered, raised, ...):
    # reported, never used for the gate.
    details: list[str] = Field(default_factory=list)


class FileError(ResultsModel):
    """An eval file that could not be read: bad input for that file alone; the others were
    evaluated (the run exits 2 after reporting them)."""

    path: str
    error: str


class Interrupted(ResultsModel):
    """The run was stopped by a signal (SIGTERM: a cancelled job, docker stop; SIGINT:
    Ctrl-C): the runs that had finished were scored, the others were not (CONTRACT 11)."""

    signal: str  # "SIGTERM" or "SIGINT"
    runs_finished: int
    runs_planned: int

    def __str__(self) -> str:
        return f"interrupted: {self.runs_finished} of {self.runs_planned} runs"


class Results(ResultsModel):
    version: Literal[1] = 1
    passed: bool
    verdict_rule: str = "mean"
    summary: Summary
    shard: ShardInfo | None = optional()
    comparison: Comparison | None = optional()
    eval_sets: list[EvalSetResult] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    # Present only when an eval file could not be read (the run's exit status is then 2).
    file_errors: list[FileError] | None = optional()
    # Token budgets that were spent (--max-agent-tokens, --max-judge-tokens): the runs or
    # judge calls not started and the cases left not evaluated; the exit status is then 2.
    budgets: list[dict[str, Any]] | None = optional()
    # Files the gate read that the pull request added or changed (a baseline file in the
    # repository, the replay file): said in the headline, the terminal and every report.
    pull_request_files: list[PullRequestFile] | None = optional()
    # Stopped by SIGTERM or SIGINT: what finished, scored; never passes the gate.
    interrupted: Interrupted | None = optional()

    def set_keys(self, also_ambiguous: set[str] | frozenset[str] = frozenset()) -> list[str]:
        """Each eval set's key (checker/models/setkey.py), in order: its id, qualified by its
        path where two eval sets here (or an id in ``also_ambiguous``) share the id."""
        ambiguous = ambiguous_ids((s.eval_set_id, s.path) for s in self.eval_sets) | set(also_ambiguous)
        return [set_key(s.eval_set_id, s.path, ambiguous) for s in self.eval_sets]

    def ambiguous_ids(self) -> set[str]:
        return ambiguous_ids((s.eval_set_id, s.path) for s in self.eval_sets)

    def failing_cases(self) -> list[tuple[EvalSetResult, CaseResult]]:
        return [(s, c) for s in self.eval_sets for c in s.cases if c.status != "passed"]
