"""Options of one ``evalcheck run`` (CLI flags or Action inputs), frozen: read by the commands
(checker/commands/), which build each stage's own options from them (commands/stage_options.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .agents.early_start import EarlyAgent
    from .agents.sandbox import AgentSandbox
    from .compare.overrides import AcceptLabel


DEFAULT_CONFIRM_RUNS = 60


@dataclass(frozen=True)
class RunOptions:
    paths: list[str] = field(default_factory=list)
    agent_command: str | None = None
    agent_url: str | None = None
    agent_server_command: str | None = None
    app_name: str | None = None
    replay: Path | None = None
    config_file: Path | None = None
    initial_session: Path | None = None  # of legacy eval files (ADK's initial_session_file)
    num_runs: int = 2
    # Runs in flight at once; None: adapts to the agent and its model service
    # (limiter.py), from what fits the agent up to max_concurrency.
    concurrency: int | None = None
    max_concurrency: int = 32
    turn_timeout: float = 300.0
    judge_concurrency: int = 8
    judge_cache: Path | None = None
    results: Path | None = None
    inference_out: Path | None = None
    markdown: Path | None = None
    junit: Path | None = None
    template: Path | None = None
    # Also write ADK EvalSetResult files under DIR/<app>/.adk/eval_history/ (adk web opens them).
    adk_eval_history: Path | None = None
    # --threshold NAME=VALUE: thresholds of agents-cli metrics (its format has none).
    thresholds: dict[str, float] = field(default_factory=dict)
    html: Path | None = None  # the self-contained HTML report (report/html.py)
    # Cost and budgets (docs/cost.md): a price table over the default one; token budgets
    # (no further run or judge call starts once spent); the token gate, in percent.
    prices: Path | None = None
    max_agent_tokens: int | None = None
    max_judge_tokens: int | None = None
    max_token_increase: float | None = None
    # --changed-since REF: only the eval sets whose eval file, criteria or agent changed since
    # the merge base of REF run; the others are carried from the baseline (scale/changed.py).
    changed_since: str | None = None
    # --base REF (the Action: the pull request's base): the checkout is a change of REF, so a
    # baseline or replay file it tracks is its claim, compared with the merge base of REF and
    # HEAD (inputs/pr_files.py). None: --changed-since's REF, or no base (files used as given).
    base: str | None = None
    # --agent-paths EVALS=PATH[,PATH...]: where the agent of eval files under EVALS lives.
    agent_paths: list[str] = field(default_factory=list)
    # The Action's only-changed: auto: what cannot be selected (no baseline, no base commit
    # in the checkout) runs everything with a note, instead of being bad input.
    changed_since_auto: bool = False
    # Overrides (docs/quarantine.md): --quarantine-ref REF reads .evalcheck/quarantine.yml of
    # the commit REF names (the Action: the pull request's base, and a checkout without that
    # commit applies none, said); the Action's accept-label as found on the pull request.
    quarantine_ref: str | None = None
    quarantine_auto: bool = False
    accept: AcceptLabel | None = None
    # Comparing and gating (CONTRACT section 8).
    # Results of main, newest first: pooled per case (docs/comparing.md).
    baselines: list[Path] = field(default_factory=list)
    alpha: float = 0.05  # family-wise level of the suite's regression decisions
    confirm_runs: int | None = None  # fresh runs of screened cases; None: 60 live, 0 in replay
    retries: int = 1  # re-runs of a run whose agent errored
    # Seconds of a model-service outage (no run got through) before the refused runs are
    # given up (checker/agents/service_wait.py).
    max_service_wait: float = 600.0
    # The Action's automatic history: an older result of another suite is left out (said),
    # not bad input as a --baseline given by hand is.
    baselines_found: bool = False
    verdict: str = "mean"
    fail_on: str = "failure"
    max_runs: int | None = None  # adaptive runs up to this many a case; None: --num-runs
    shard: str | None = None  # "I/N": evaluate only that shard of the selected cases
    # Who agents run as: the Action's unprivileged user (checker/agents/sandbox.py); None runs
    # them as the caller, with the caller's environment (plain `evalcheck run`).
    sandbox: AgentSandbox | None = None
    # The agent started while the inputs are read (checker/agents/early_start.py), for the
    # first run to take; None: the first run starts one.
    early_agent: EarlyAgent | None = None
    # The workspace, in the Action (--confine on the command line): symlinks under it that
    # lead out of it are not followed, files eval and config files name must lie in it, and
    # the judge cache must not (checker/safety/confine.py). None: paths are used as given.
    confine: Path | None = None
    # Files the caller writes after the run (the Action's markdown report): checked against
    # the inputs with the run's own outputs (checker/report/writes.py check_outputs).
    written_after: tuple[tuple[str, Path], ...] = ()

    @property
    def base_ref(self) -> str | None:
        """The commit the checkout is a change of: --base, else --changed-since's REF."""
        return self.base or self.changed_since

    @property
    def baseline(self) -> Path | None:
        """The newest baseline file (what the split of shards is priced with)."""
        return self.baselines[0] if self.baselines else None

    def confirmation_runs(self) -> int:
        """Fresh runs per screened case: none in replay (nothing can run again)."""
        if self.replay is not None:
            return 0
        return DEFAULT_CONFIRM_RUNS if self.confirm_runs is None else self.confirm_runs
