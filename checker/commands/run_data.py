"""What the stages of ``evalcheck run`` hand each other (commands/run.py conducts them):
the inputs read, the plan, the runs, the token budgets and the run's clock, all plain typed
data."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, UTC
from pathlib import Path
from typing import TYPE_CHECKING

from ..models.records import RecordedRun
from ..models.results import Interrupted, PullRequestFile, Results
from ..models.setkey import RunKey
from ..models.usage import TokenBudget
from ..models.verdict_rule import VerdictRule

if TYPE_CHECKING:
    from ..agents.service_wait import ServiceWaits
    from ..compare.adaptive import AdaptiveRuns
    from ..compare.overrides import Overrides
    from ..errors import InputError
    from ..inputs.discover import EvalTarget
    from ..inputs.git_changes import Changes
    from ..limiter import ConcurrencyHistory
    from ..metrics.base import ScoringContext
    from ..models.results import ShardInfo
    from ..options import RunOptions
    from ..report.adk_history import HistoryPlan
    from ..report.cost import PriceTable
    from ..safety.redact import Redactor
    from ..scale.changed import Selection
    from ..scale.depends import AgentMapping
    from ..simulation.model import SimulatorStats
    from .stage_options import StageOptions


@dataclass
class Inputs:
    """What the run reads, checked before any agent runs (bad input is found here)."""
    root: Path
    rule: VerdictRule
    baselines: list[Results]  # main's results, newest first
    baseline_paths: list[Path]  # their files (--baseline less those left out)
    targets: list[EvalTarget]  # with --shard, outlined only: the plan loads its own cases
    notes: list[str]  # e.g. an empty eval set skipped
    problems: list[InputError] = field(default_factory=list)  # eval files that could not be read
    prices: PriceTable | None = None
    changed: Changes | None = None  # --changed-since: what changed (None: run everything)
    agent_paths: list[AgentMapping] = field(default_factory=list)
    overrides: Overrides | None = None  # quarantine (base branch) and accept label
    # Files the gate reads that the change under test added or changed (inputs/pr_files.py)
    claims: list[PullRequestFile] = field(default_factory=list)
    # The markdown's template as read: in the sandbox, a copy the agent's user cannot write
    template: Path | None = None


@dataclass
class Plan:
    """What runs and how it is judged: this shard's cases, the scoring services, adaptive runs."""
    targets: list[EvalTarget]
    rule: VerdictRule
    shard: ShardInfo | None
    warnings: list[str]
    context: ScoringContext
    simulated: SimulatorStats  # conversation_scenario cases' simulated users
    adaptive: AdaptiveRuns | None
    stages: StageOptions  # what each stage takes of the run's options
    replayed: Mapping[RunKey, list[RecordedRun]] | None = None  # the replay's selected runs, read
    metric_sources: Path | None = None  # the private copy of the custom metrics' packages
    problems: list[InputError] = field(default_factory=list)  # eval files that could not be read
    history: HistoryPlan | None = None  # --adk-eval-history: the eval sets, before scoring
    prices: PriceTable | None = None  # the default table, or --prices over it
    budgets: Budgets = field(default_factory=lambda: Budgets())
    selection: Selection | None = None  # --changed-since: what runs, what is carried
    # The waits on a model service that refuses, and what it refused (agents/service_wait.py)
    service: ServiceWaits | None = None
    template: Path | None = None  # the markdown's template as read (Inputs.template)


@dataclass
class Budgets:
    """The token budgets of the run (--max-agent-tokens, --max-judge-tokens)."""
    agent: TokenBudget | None = None
    judge: TokenBudget | None = None

    @classmethod
    def of(cls, options: RunOptions) -> Budgets:
        """No agent budget in replay mode: no agent runs."""
        return cls(agent=TokenBudget("--max-agent-tokens", options.max_agent_tokens, "agent")
                   if options.max_agent_tokens and options.replay is None else None,
                   judge=TokenBudget("--max-judge-tokens", options.max_judge_tokens, "judge")
                   if options.max_judge_tokens else None)

    def spent(self) -> list[TokenBudget]:
        return [b for b in (self.agent, self.judge) if b is not None and b.refused]


@dataclass
class Runs:
    """What the agents did (or the replay file holds), by case, and the redactor for it;
    what the concurrency did over the runs (None in replay mode: nothing ran)."""
    by_case: Mapping[RunKey, list[RecordedRun]]
    redactor: Redactor
    concurrency: ConcurrencyHistory | None = None
    interrupted: Interrupted | None = None  # SIGTERM or Ctrl-C stopped the runs (what finished is here)


@dataclass(frozen=True)
class Started:
    at: datetime
    clock: float  # time.monotonic()

    @classmethod
    def now(cls) -> Started:
        return cls(datetime.now(UTC), time.monotonic())


@dataclass
class Prepared:
    """Everything the verdict reads, read before any of the pull request's code runs
    (setup-command, the agents, custom metrics): eval files and criteria, the baselines, the
    recorded runs, the template (the Action's private copy) and the custom metrics' sources
    (a private copy). Nothing later reads those files again (docs/github-action.md#trust-model)."""
    started: Started
    inputs: Inputs
    plan: Plan
