"""Where ``evalcheck publish`` posts: only what the trusted ``workflow_run`` event says.

In the fork-safe pair (docs/github-action.md#pull-requests-from-forks) the results and the
evaluated run's ``event.json`` come from an artifact that the pull request's own workflow
uploaded: a fork can write anything there. The commit is therefore always
``workflow_run.head_sha``, and the pull request is one whose head is that commit and whose
head repository is the run's: listed in ``workflow_run.pull_requests`` (same-repository
PRs), or named by the artifact and confirmed with the API (forks, where GitHub leaves that
list empty). An artifact or flag that names another commit, a PR whose head is another
commit or repository, or no PR at all, is refused: nothing is posted.

Outside a ``workflow_run`` (publishing by hand, or from the evaluating job itself) the
caller's ``--sha``, ``--pr`` and ``--event`` are the caller's own word and are used as given.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class Refused(Exception):
    """The artifact disagrees with the trusted event: nothing may be posted."""


@dataclass
class Claimed:
    sha: str | None   # --sha, else the artifact event's head commit
    pr: int | None    # --pr, else the artifact event's PR number


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def trusted_target(workflow_run: dict[str, Any], claimed: Claimed,
                   get_pull: Callable[[int], dict[str, Any]]) -> tuple[str, int]:
    """(commit, PR number) to post on for a ``workflow_run`` event; raises Refused."""
    sha = _str(workflow_run.get("head_sha"))
    if sha is None:
        raise Refused("the workflow_run event has no head_sha")
    if claimed.sha is not None and claimed.sha != sha:
        raise Refused(f"the artifact names commit {claimed.sha[:12]}, but the evaluated run was on "
                      f"{sha[:12]}")
    head_repo = workflow_run.get("head_repository")
    head_repo = _str(head_repo.get("full_name")) if isinstance(head_repo, dict) else None
    listed = [p["number"] for p in workflow_run.get("pull_requests") or []
              if isinstance(p, dict) and isinstance(p.get("number"), int)
              and isinstance(p.get("head"), dict) and p["head"].get("sha") == sha]
    if claimed.pr is None:
        if listed:
            return sha, listed[0]
        raise Refused("the artifact names no pull request, and the workflow_run lists none at "
                      f"{sha[:12]}")
    if claimed.pr in listed:
        return sha, claimed.pr
    pull = get_pull(claimed.pr)
    head = pull.get("head")
    head = head if isinstance(head, dict) else {}
    pr_sha = _str(head.get("sha"))
    repo = head.get("repo")
    pr_repo = _str(repo.get("full_name")) if isinstance(repo, dict) else None
    if pr_sha != sha:
        raise Refused(f"pull request #{claimed.pr} is at {str(pr_sha)[:12]}, but the evaluated run "
                      f"was on {sha[:12]}")
    if head_repo is None or pr_repo != head_repo:
        raise Refused(f"pull request #{claimed.pr} comes from {pr_repo or 'an unknown repository'}, "
                      f"but the evaluated run's head repository is {head_repo or 'not named'}")
    return sha, claimed.pr
