"""``accept-label``: whether the pull request carries the label that accepts its regressions,
and who added it when - read from the pull request's timeline (GET /issues/{n}/timeline),
not from the event payload, which a re-run of the job replays as it was.

The label is on the pull request when its last ``labeled`` event comes after its last
``unlabeled`` one; that event's actor and time are the trail. A timeline that cannot be read
accepts nothing (every regression gates) and says why: the override is never assumed.
"""

from __future__ import annotations

from ...compare.overrides import AcceptLabel
from .client import GitHubClient, GitHubError


def label_on_timeline(events, label: str) -> AcceptLabel | None:
    """The last ``labeled`` event of ``label`` (names compare case-insensitively, as
    GitHub's do), unless an ``unlabeled`` one followed it; None when it is not on."""
    wanted = label.casefold()
    found: AcceptLabel | None = None
    for event in events:
        kind = event.get("event")
        named = event.get("label")
        name = named.get("name") if isinstance(named, dict) else None
        if kind not in ("labeled", "unlabeled") or not isinstance(name, str) or name.casefold() != wanted:
            continue
        if kind == "unlabeled":
            found = None
            continue
        actor = event.get("actor")
        login = actor.get("login") if isinstance(actor, dict) else None
        when = event.get("created_at")
        found = AcceptLabel(label=name, actor=login if isinstance(login, str) else "(unknown)",
                            time=when if isinstance(when, str) else "")
    return found


def find_accept_label(client: GitHubClient, owner: str, repo: str, number: int,
                      label: str) -> tuple[AcceptLabel | None, str | None]:
    """(the label as the timeline shows it, or None; a warning when it could not be read)."""
    try:
        return label_on_timeline(client.list_issue_timeline(owner, repo, number), label), None
    except GitHubError as exc:
        need = (" (the job needs `pull-requests: read` or `issues: read`)"
                if exc.status in (401, 403, 404) else "")
        return None, (f"accept-label: could not read pull request #{number}'s timeline: HTTP "
                      f"{exc.status}: {exc.message}{need}; no regression is accepted")
