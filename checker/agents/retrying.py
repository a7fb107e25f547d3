"""The attempts of one run: again after the agent's own error (``--retries``), and again after
a wait when the model service refused it (agents/service_wait.py), until the service is given
up. Apart: a crash of the agent is retried at once and at most ``--retries`` times; a refusal
is not the agent's, and costs none of them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ..models.records import RecordedRun
from .base import RunJob
from .failfast import start_failure
from .service_wait import ServiceWaits


async def attempts(attempt: Callable[[], Awaitable[RecordedRun]], retries: int,
                   service: ServiceWaits, stopped: Callable[[], bool]) -> RecordedRun:
    """The run's last attempt, with how many were retried (``retries``) and refused
    (``refusals``) before it. Not a start failure nor a setup error (no credentials: a retry
    fails the same way): fail-fast owns those (agents/failfast.py), and ``stopped`` says so."""
    run = await attempt()
    retried = refused = 0
    told = run.refusals or 0  # refused calls the agent retried itself, in every attempt
    while not stopped():
        if run.unavailable is not None:
            refused += 1
            if not await service.wait(run.unavailable, refused):
                break
        elif run.error is not None and retried < retries and start_failure(run) is None:
            retried += 1
        else:
            break
        run = await attempt()
        told += run.refusals or 0
    if run.unavailable is None:
        service.answered()
    else:
        service.ended_unavailable(case=(run.key, run.eval_id))
        if service.given_up is not None:
            run.error = f"{run.error}; {service.gave_up_reason()}"
    run.retries = retried or None
    run.refusals = (refused + told) or None
    return run


def not_run(job: RunJob, service: ServiceWaits) -> RecordedRun:
    """A run not started because the model service was given up: unavailable."""
    service.ended_unavailable(started=False, case=(job.key, job.eval_id))
    return job.record(error=f"not run: {service.gave_up_reason()}", unavailable=service.given_up)
