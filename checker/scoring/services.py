"""The scoring services of one run, set up before any agent runs: the judge service (and
the limits it shares with Vertex AI metrics) and the custom metrics' worker."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..metrics.base import ScoringContext, ScoringServices

if TYPE_CHECKING:
    from ..agents.sandbox import AgentSandbox
    from ..inputs.discover import EvalTarget
    from ..models.usage import TokenBudget


@dataclass(frozen=True)
class ScoringOptions:
    """What the scoring services take of a run's options (built by checker/commands/stage_options.py)."""

    judge_concurrency: int = 8  # judge calls in flight at once
    judge_cache: Path | None = None  # --judge-cache: answers kept across runs


def build_context(options: ScoringOptions, judge_budget: TokenBudget | None = None) -> ScoringContext:
    """One judge service per run; ``judge_budget``: --max-judge-tokens."""
    from ..judges.service import JudgeService  # no SDK import: the client is built on first use

    from ..judges.limits import JudgeLimits

    limits = JudgeLimits.from_env(os.environ)  # bad values are bad input, found before any run
    services = ScoringServices(judge_concurrency=options.judge_concurrency,
                               judge_cache=options.judge_cache, judge_limits=limits)
    # One judge service per run; its limit (judge_semaphore) is shared with Vertex AI metrics.
    judge = services.judge = JudgeService(concurrency=options.judge_concurrency,
                                          cache_dir=options.judge_cache, shared=services,
                                          limits=limits)
    judge.budget = judge_budget
    return ScoringContext(services=services)


def start_metric_worker(context: ScoringContext, targets: Iterable[EvalTarget], root: Path,
                        sandbox: AgentSandbox | None) -> Path | None:
    """The custom metrics' worker, in ``context``; the private copy of their sources (None
    without custom metrics), which the caller removes when scoring is over."""
    from .custom_metric_worker import metric_worker
    from .metric_sources import copy_metric_sources

    # Custom metrics are the PR's code: never imported here, always in the worker process,
    # as the agent's user in the Action, from a copy of their sources made now.
    sources = copy_metric_sources(targets, root)
    context.services.custom_metric_worker = metric_worker(root, sandbox, sources=sources)
    return sources
