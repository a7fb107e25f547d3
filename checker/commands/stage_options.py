"""Each stage's own options, built from the run's RunOptions: a stage reads only these (small,
frozen), never RunOptions, and writes into none of them; what it decides comes back in its
output (docs/architecture.md, "The stages")."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..options import RunOptions

if TYPE_CHECKING:
    from ..agents.schedule import AgentOptions
    from ..compare.adaptive import AdaptiveOptions
    from ..report.finish import ReportOptions
    from ..scale.changed import ChangedOptions
    from ..scale.shards import ShardOptions
    from ..scoring.metadata import MetadataOptions
    from ..scoring.services import ScoringOptions


def mode(options: RunOptions) -> str:
    """How the runs come: "replay" (a file of recorded runs), "api" (an ADK API server), "stdio"."""
    return "replay" if options.replay is not None else "api" if options.agent_url else "stdio"


def agent_options(options: RunOptions) -> AgentOptions:
    from ..agents.schedule import AgentOptions
    from ..agents.scheduler import ScheduleOptions

    return AgentOptions(agent_command=options.agent_command, agent_url=options.agent_url,
                        agent_server_command=options.agent_server_command, app_name=options.app_name,
                        num_runs=options.num_runs, turn_timeout=options.turn_timeout,
                        max_service_wait=options.max_service_wait, sandbox=options.sandbox,
                        early=options.early_agent,
                        schedule=ScheduleOptions(concurrency=options.concurrency,
                                                 max_concurrency=options.max_concurrency,
                                                 retries=options.retries,
                                                 judge_concurrency=options.judge_concurrency,
                                                 agent_url=bool(options.agent_url)))


def adaptive_options(options: RunOptions) -> AdaptiveOptions:
    from ..compare.adaptive import AdaptiveOptions

    return AdaptiveOptions(num_runs=options.num_runs, max_runs=options.max_runs,
                           confirm_runs=options.confirmation_runs(), replay=options.replay is not None,
                           alpha=options.alpha)


def scoring_options(options: RunOptions) -> ScoringOptions:
    from ..scoring.services import ScoringOptions

    return ScoringOptions(judge_concurrency=options.judge_concurrency, judge_cache=options.judge_cache)


def metadata_options(options: RunOptions) -> MetadataOptions:
    from ..scoring.metadata import MetadataOptions

    return MetadataOptions(mode=mode(options), paths=tuple(options.paths), num_runs=options.num_runs,
                           concurrency=options.concurrency)


def changed_options(options: RunOptions) -> ChangedOptions:
    from ..scale.changed import ChangedOptions

    return ChangedOptions(changed_since=options.changed_since, auto=options.changed_since_auto,
                          replay=options.replay is not None, agent_command=options.agent_command,
                          agent_url=options.agent_url)


def shard_options(options: RunOptions) -> ShardOptions:
    from ..scale.shards import ShardOptions

    return ShardOptions(shard=options.shard, num_runs=options.num_runs, mode=mode(options),
                        agent_command=options.agent_command, app_name=options.app_name,
                        max_runs=options.max_runs, verdict=options.verdict)


def report_options(options: RunOptions, template: Path | None) -> ReportOptions:
    """``template``: the one the run read (the Action's private copy), not the option's path."""
    from ..report.finish import ReportOptions

    return ReportOptions(results=options.results, markdown=options.markdown, junit=options.junit,
                         html=options.html, template=template, fail_on=options.fail_on)


@dataclass(frozen=True)
class StageOptions:
    """The stages' options of one run, built once (``of``) before any stage runs; the report's
    are built by ``write``, from the template the read stage returned (report_options)."""

    agents: AgentOptions
    adaptive: AdaptiveOptions
    scoring: ScoringOptions
    metadata: MetadataOptions
    changed: ChangedOptions
    shards: ShardOptions

    @classmethod
    def of(cls, options: RunOptions) -> StageOptions:
        return cls(agents=agent_options(options), adaptive=adaptive_options(options),
                   scoring=scoring_options(options), metadata=metadata_options(options),
                   changed=changed_options(options), shards=shard_options(options))
