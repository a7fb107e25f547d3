"""Options of one ``evalcheck run`` (CLI flags or Action inputs): plain data every stage reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .agents.sandbox import AgentSandbox


@dataclass
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
    concurrency: int = 4
    turn_timeout: float = 300.0
    judge_concurrency: int = 8
    judge_cache: Path | None = None
    results: Path | None = None
    inference_out: Path | None = None
    markdown: Path | None = None
    junit: Path | None = None
    template: Path | None = None
    # Comparing and gating (CONTRACT section 8).
    baseline: Path | None = None
    verdict: str = "mean"
    fail_on: str = "failure"
    max_runs: int | None = None  # adaptive runs up to this many a case; None: --num-runs
    shard: str | None = None  # "I/N": evaluate only that shard of the selected cases
    # Who agents run as: the Action's unprivileged user (checker/agents/sandbox.py); None runs
    # them as the caller, with the caller's environment (plain `evalcheck run`).
    sandbox: AgentSandbox | None = None
    # The workspace, in the Action: symlinks under it that lead out of it are not followed
    # (checker/safety/confine.py). None: follow them, as any command-line tool does.
    confine: Path | None = None
    # Files the caller writes after the run (the Action's markdown report): checked against
    # the inputs with the run's own outputs (checker/report/writes.py check_outputs).
    written_after: tuple[tuple[str, Path], ...] = ()
