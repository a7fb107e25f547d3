"""Stop at once when the agent cannot start at all, or cannot run for want of setup.

A typo in ``--agent-command``, a missing dependency, nothing listening at ``--agent-url``,
no model credentials or a refused key (agents/setup_errors.py): every run would fail the
same way before the agent answers anything. When the first runs
to finish (as many as run at once, at least two when there are two) all failed like that,
in the same way, the whole run stops with one message (exit status 2, bad input) instead
of reporting the failure once per case and run. Until that is decided those runs are held
back from the progress lines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import InputError
from ..models.records import RecordedRun
from ..safety.text import one_line
from .base import RunJob, cannot_start
from .our_commands import not_found_hint
from .setup_errors import SetupProblem, setup_problem

if TYPE_CHECKING:
    from .api_server import ServerStartError

_HINTS = {
    "exited with status 127": "the command was not found: check --agent-command "
                              "(and that its program is installed and on PATH)",
    "exited with status 126": "the command cannot be executed: check its permissions "
                              "(chmod +x) and its #! line",
}


class AgentCannotStart(InputError):
    """The agent failed the same way at the start of every one of the first runs."""


def start_failure(run: RecordedRun) -> str | None:
    """How ``run`` failed before the agent answered anything, when that stops the whole
    run: the agent could not start, or a setup problem failed its first turn. None else."""
    if run.unavailable is not None:  # the model service refused it: not the agent's setup
        return None
    how = cannot_start(run)
    if how is not None or run.invocations:
        return how
    problem = setup_problem(run.error, run.stderr_tail)
    return f"setup: {problem.kind}" if problem else None


class StartWatch:
    """Watches the first runs to finish; ``observe`` says which runs to report now."""

    def __init__(self, jobs: int, concurrency: int):
        self.jobs = jobs
        self.first = min(jobs, max(concurrency, 2))
        self.held: list[tuple[RunJob, RecordedRun]] = []
        self.decided = self.first == 0
        self.verdict: AgentCannotStart | None = None

    def resize(self, concurrency: int) -> None:
        """The concurrency became known (the default, decided after the first run began)."""
        if not self.decided:
            self.first = min(self.jobs, max(concurrency, 2))
            if len(self.held) >= self.first and self.held:
                self.decided = True
                self.verdict = self._verdict(start_failure(self.held[0][1]) or "")

    @property
    def stopped(self) -> bool:
        return self.verdict is not None

    def observe(self, job: RunJob, run: RecordedRun) -> list[tuple[RunJob, RecordedRun]]:
        if self.decided:
            return [] if self.stopped else [(job, run)]
        how = start_failure(run)
        if how is None or any(start_failure(r) != how for _, r in self.held):
            self.decided = True
            held, self.held = self.held, []
            return [*held, (job, run)]
        self.held.append((job, run))
        if len(self.held) >= self.first:
            self.decided = True
            self.verdict = self._verdict(how)
        return []

    def _verdict(self, how: str) -> AgentCannotStart:
        runs = [r for _, r in self.held]
        which = (f"the first {len(runs)} runs all failed the same way" if len(runs) > 1
                 else "its only run failed")
        problem = setup_problem(runs[0].error, runs[0].stderr_tail)
        if how.startswith("setup: ") and problem is not None:
            return _setup_verdict(problem, which, runs[0].error or "")
        text = (f"the agent cannot start: {which} before it answered anything: "
                f"{one_line(runs[0].error or how, 300)}")
        tail = next((r.stderr_tail for r in runs if r.stderr_tail), None)
        hint = next((h for status, h in _HINTS.items() if status in how), None)
        if "status 127" in how:  # evalcheck-adk(-ts): where it was looked for
            hint = not_found_hint(tail) or hint
        if hint:
            text += f" ({hint})"
        if (runs[0].error or "").startswith("the agent reported an error") \
                or "; its log says: " in (runs[0].error or ""):
            return AgentCannotStart(text)  # it said why itself (its log repeats it, or warnings)
        return _with_tail(text, tail)


def _setup_verdict(problem: SetupProblem, which: str, error: str) -> AgentCannotStart:
    text = f"{problem.what}: {which} before it answered anything: {one_line(error, 300)}"
    if problem.evidence != error:  # the agent's log says why (an API server's HTTP 500)
        text += f"; its log says: {one_line(problem.evidence, 300)}"
    return AgentCannotStart(f"{text} ({problem.fix})")


def server_cannot_start(exc: ServerStartError) -> AgentCannotStart:
    """The agent server did not come up (or nothing listens at --agent-url)."""
    return _with_tail(f"the agent server cannot be used: {one_line(str(exc), 300)}", exc.tail)


def _with_tail(text: str, tail: str | None) -> AgentCannotStart:
    if tail:  # the agent's own last words, where its error usually is
        lines = [one_line(line, 200) for line in tail.splitlines()[-3:]]
        text += "; its last output: " + " | ".join(line for line in lines if line)
    return AgentCannotStart(text)  # one line; printed through the one sanitiser (cli.py)
