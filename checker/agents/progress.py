"""The progress of the runs on stderr: cases done / total, the runs done per second and the
concurrency now (when a limiter sets it), and a line per finished case (with its errors)."""

from __future__ import annotations

import os
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import IO, TYPE_CHECKING

from ..models.records import RecordedRun
from ..models.setkey import shown
from ..safety.output import GuardedStream, clean
from ..safety.redact import Redactor
from .base import RunJob

if TYPE_CHECKING:
    from ..limiter import AdaptiveLimiter

# In CI logs (no line redrawn): a line of how it goes at most this often, between case lines.
STATUS_EVERY = 30.0
RATE_WINDOW = 10.0  # seconds the runs-per-second figure looks back


class Progress:
    """Cases done / total on stderr: one \\r-updated line on a terminal, and in CI logs
    (not a TTY, or CI=true) one line per finished case instead."""

    def __init__(self, jobs: Iterable[RunJob], stream: IO[str] | None = None,
                 interactive: bool | None = None):
        self.stream = stream if stream is not None else sys.stderr
        if interactive is None:
            ci = os.environ.get("CI", "").lower() in ("true", "1", "yes")
            interactive = not ci and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.interactive = interactive
        self.remaining: dict[tuple[str, str], int] = {}
        self.errors: dict[tuple[str, str], list[RecordedRun]] = {}
        runs_per_case = getattr(jobs, "runs_per_case", None)  # a RunPlan: without making its jobs
        if runs_per_case is not None:
            self.remaining = runs_per_case()
        else:
            for job in jobs:
                key = (job.key, job.eval_id)
                self.remaining[key] = self.remaining.get(key, 0) + 1
        self.runs_per_case = dict(self.remaining)
        self.total_cases = len(self.remaining)
        self.cases_done = 0
        self.failed_runs = 0
        self._drawn = False
        self._last_draw = 0.0
        self._hidden = Redactor()  # credentials learnt while running (hide)
        self._limiter: AdaptiveLimiter | None = None
        self._clock = time.monotonic
        self._began = 0.0
        self.runs_done = 0
        self._done_at: deque[float] = deque()  # when the latest runs were done (the rate)
        self._last_status = 0.0

    def watch(self, limiter: AdaptiveLimiter, clock: Callable[[], float] = time.monotonic) -> None:
        """Show the runs done per second and the concurrency ``limiter`` allows now."""
        self._limiter = limiter
        self._clock = clock
        self._began = self._last_status = clock()

    def _line(self) -> str:
        line = (f"evalcheck: {self.cases_done}/{self.total_cases} cases done, "
                f"{self.failed_runs} failed run{'s' if self.failed_runs != 1 else ''}")
        if self._limiter is not None:
            line += f", {self.rate():.1f} runs/s, concurrency {self._limiter.limit}"
        return line

    def rate(self) -> float:
        """Runs done per second over the last ``RATE_WINDOW`` seconds (since the start when
        that is shorter)."""
        now = self._clock()
        while self._done_at and self._done_at[0] < now - RATE_WINDOW:
            self._done_at.popleft()
        seconds = min(RATE_WINDOW, now - self._began)
        return len(self._done_at) / seconds if seconds > 0 else 0.0

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed stderr must not fail the runs
            pass

    def run_done(self, job: RunJob, run: RecordedRun) -> None:
        key = (job.key, job.eval_id)
        self.runs_done += 1
        if self._limiter is not None:
            self._done_at.append(self._clock())
        if run.error is not None and run.unavailable is None:  # a refusal is not a failed run
            self.failed_runs += 1
            self.errors.setdefault(key, []).append(run)
        self.remaining[key] -= 1
        case_done = self.remaining[key] == 0
        if case_done:
            self.cases_done += 1
        lines = []
        errored = sorted(self.errors.get(key, []), key=lambda r: r.run)
        if case_done and (errored or not self.interactive):
            lines.append(self._case_line(key, errored, self.runs_per_case[key]))
        if self.interactive and isinstance(self.stream, GuardedStream):
            now = time.monotonic()
            if lines or case_done or now - self._last_draw > 0.1:
                try:
                    self.stream.redraw(self._line(), lines, clear=self._drawn)
                except (OSError, ValueError):
                    pass
                self._drawn = True
                self._last_draw = now
        else:
            if self._limiter is not None and lines and self._clock() - self._last_status >= STATUS_EVERY:
                lines.append(self._line())  # how it goes, now and then, in a CI log
                self._last_status = self._clock()
            for line in lines:
                self._write(line + "\n")

    def hide(self, secrets: Iterable[str]) -> None:
        """Values no later line may show: credentials that became known while running (a
        simulated user's credential headers; the environment's are hidden by the guard)."""
        self._hidden.add(*secrets)

    def _case_line(self, key: tuple[str, str], errored: list[RecordedRun], runs: int) -> str:
        return self._hidden.text(self._case_text(key, errored, runs))

    def _case_text(self, key: tuple[str, str], errored: list[RecordedRun], runs: int) -> str:
        prefix = f"evalcheck: [{self.cases_done}/{self.total_cases}] {clean(shown(key[0]))}/{clean(key[1])}:"
        if not errored:
            return f"{prefix} {runs} run{'s' if runs != 1 else ''} done"
        parts = [f"run {r.run}: {clean(r.error or '', 300)}" for r in errored]
        text = f"{prefix} {len(errored)} of {runs} runs errored - " + "; ".join(parts)
        tail = errored[-1].stderr_tail
        if tail:  # the last lines of the agent's log, where its own error usually is
            text += f"\n    last agent output (run {errored[-1].run}):"
            text += "".join("\n    | " + clean(line, 200) for line in tail.splitlines()[-5:])
        return text

    def add_jobs(self, jobs: list[RunJob]) -> None:
        """Extra runs (adaptive runs): their cases are open again until these finish."""
        for job in jobs:
            key = (job.key, job.eval_id)
            if self.remaining.get(key, 0) == 0 and key in self.remaining:
                self.cases_done -= 1
            self.remaining[key] = self.remaining.get(key, 0) + 1
            self.runs_per_case[key] = self.runs_per_case.get(key, 0) + 1

    def close(self) -> None:
        if self.interactive and self._drawn:
            self._write("\n")
