"""``evalcheck`` in a ``run:`` step of a GitHub Actions pull-request job: the checkout is the
pull request's, as in the Action, so the command line takes the Action's protections without
being told (docs/command-line.md#in-a-pull-request-job).

When ``GITHUB_ACTIONS`` is ``true``, ``GITHUB_EVENT_NAME`` a pull request event and its
payload (``GITHUB_EVENT_PATH``) names the base commit (``pull_request.base.sha``), that commit
is the base (``--base``, unless given): a baseline or replay file the pull request wrote is
its claim, and the base branch's quarantine applies; a judge cache inside the workspace is
refused. Anywhere else nothing changes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

PULL_REQUEST_EVENTS = ("pull_request", "pull_request_target")
CACHE_FIX = ("keep the judge cache outside the checkout, e.g. under $RUNNER_TEMP, restored and "
             "saved by actions/cache (docs/command-line.md#in-a-pull-request-job)")


@dataclass(frozen=True)
class PullRequestJob:
    base: str  # the pull request's base commit (full SHA)
    number: int | None
    workspace: Path


def pull_request_job(env: Mapping[str, str], cwd: Path) -> PullRequestJob | None:
    """The pull request this process runs a job of, or None (not GitHub Actions, not a pull
    request event, or a payload without a base commit). An event file that cannot be read is
    bad input naming it."""
    if env.get("GITHUB_ACTIONS") != "true" or env.get("GITHUB_EVENT_NAME") not in PULL_REQUEST_EVENTS:
        return None
    if not env.get("GITHUB_EVENT_PATH"):
        return None
    event = _event(Path(env["GITHUB_EVENT_PATH"]))
    pull = event.get("pull_request")
    base = pull.get("base") if isinstance(pull, dict) else None
    sha = base.get("sha") if isinstance(base, dict) else None
    if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{40}", sha):
        return None
    number = pull.get("number") if isinstance(pull, dict) else None
    workspace = Path(env["GITHUB_WORKSPACE"]) if env.get("GITHUB_WORKSPACE") else cwd
    return PullRequestJob(sha, number if isinstance(number, int) else None, workspace)


def _event(path: Path) -> dict:
    from ..safety.limits import loads_bounded

    try:
        data = loads_bounded(path.read_bytes()[: 64 << 20].decode("utf-8"))
    except FileNotFoundError:
        raise InputError("GITHUB_EVENT_PATH names no file", file=str(path)) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"the event file is not valid JSON: {str(exc)[:200]}", file=str(path)) from None
    if not isinstance(data, dict):
        raise InputError("the event file must hold a JSON object", file=str(path), path="$")
    return data


def apply_pull_request_job(options: dict, env: Mapping[str, str], *, cache_key: str | None = None) -> None:
    """A command's options (click's dict) in a pull-request job: ``base`` from the event unless
    given, said once; ``options[cache_key]`` (the judge cache) inside the workspace refused."""
    job = pull_request_job(env, Path.cwd())
    if job is None:
        return
    from ..safety.confine import check_judge_cache_outside
    from ..safety.output import say

    if cache_key is not None:
        check_judge_cache_outside(options.get(cache_key), job.workspace, "--judge-cache", CACHE_FIX)
    if options.get("base") is None:
        options["base"] = job.base
        number = f" #{job.number}" if job.number is not None else ""
        say(f"evalcheck: note: a GitHub Actions job of pull request{number}: files the gate reads "
            f"are compared with its base commit {job.base[:12]} (as --base {job.base[:12]}; "
            "give --base to choose another)", err=True)

