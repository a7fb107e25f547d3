"""``accept-label``: whether the pull request carries the label that accepts its regressions,
and who added it when - read from the pull request's timeline (GET /issues/{n}/timeline),
not from the event payload, which a re-run of the job replays as it was.

The label is on the pull request when its last ``labeled`` event comes after its last
``unlabeled`` one; that event's actor and time are the trail. A timeline that cannot be read
accepts nothing (every regression gates) and says why: the override is never assumed.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...compare.overrides import AcceptLabel
from ...errors import InputError
from .client import GitHubClient, GitHubError
from .workflow import RunContext


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


def read_accept_label(label: str, token: str, ctx: RunContext,
                      budget: float | None = None) -> tuple[AcceptLabel | None, str | None]:
    """The label on the pull request of ``ctx`` (its event), read with ``token``."""
    from ...version import evalcheck_version

    owner, repo = ctx.owner_repo
    number = ctx.pr_number
    assert number is not None and owner
    with GitHubClient(token, ctx.api_url, user_agent=f"evalcheck/{evalcheck_version() or 'dev'}",
                      budget=budget) as client:
        return find_accept_label(client, owner, repo, number, label)


def accept_label_from_environment(label: str, env: Mapping[str, str]) -> AcceptLabel | None:
    """``--accept-label`` on the command line, in a GitHub Actions job of a pull request:
    its number and repository from the runner's variables and event, the token from
    GITHUB_TOKEN. Anywhere else it is bad input; a timeline that cannot be read accepts
    nothing, with a warning."""
    from ...safety.output import clean, say

    fix = ("run it in a pull_request workflow with the token in the environment "
           "(env: GITHUB_TOKEN: ${{ github.token }}), or leave --accept-label out")
    if not label.strip() or len(label) > 50:
        raise InputError(f"--accept-label {label[:60]!r} is not a label name",
                         fix="a GitHub label name, e.g. evalcheck:accept-regression")
    ctx = RunContext.from_env(env)
    if ctx.pr_number is None or not ctx.repository:
        raise InputError("--accept-label reads the pull request's timeline, and this is no pull "
                         "request's job (GITHUB_EVENT_PATH names no pull_request event)", fix=fix)
    token = env.get("GITHUB_TOKEN", "")
    if not token:
        raise InputError("--accept-label needs GITHUB_TOKEN to read the pull request's timeline", fix=fix)
    found, warning = read_accept_label(label.strip(), token, ctx)
    if warning:
        say(f"evalcheck: warning: {clean(warning)}", err=True)
    return found
