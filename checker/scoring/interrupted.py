"""A run stopped by SIGTERM (a cancelled job, docker stop) or SIGINT (Ctrl-C) reports what it
did (CONTRACT section 11): the runs that finished are scored as any others; each first run
that did not finish is listed in its case as ``not_evaluated`` ("interrupted before this run
finished"), counted as a run not started: its case is not evaluated unless the runs that did
finish failed it (scoring/case.py: case_status), and never passed; the
results carry ``interrupted`` (the signal, the runs finished and planned) and never pass the
gate (compare/gate.py)."""

from __future__ import annotations

from ..models.results import Interrupted, Results, RunResult
from .case import NOT_FINISHED, case_status
from .pipeline import summarize


def mark_interrupted(results: Results, num_runs: int, interrupted: Interrupted) -> None:
    """``results`` as scored from the runs that finished, marked: every case's first runs
    (1 to ``num_runs``) that are missing are listed as not evaluated."""
    for eval_set in results.eval_sets:
        for case in eval_set.cases:
            if case.change == "carried":  # main's results (--changed-since): nothing of it ran
                continue
            have = {r.run for r in case.runs}
            missing = [RunResult(run=n, status="not_evaluated", error=f"{NOT_FINISHED} ({interrupted.signal})")
                       for n in range(1, num_runs + 1) if n not in have]
            if missing:
                case.runs = sorted([*case.runs, *missing], key=lambda r: r.run)
                case.status = case_status(case.runs, case.metrics)
    usage = results.summary.usage
    results.summary = summarize(results.eval_sets)
    results.summary.usage = usage
    results.passed = False
    results.interrupted = interrupted
