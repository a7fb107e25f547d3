"""``accept-label``: whether the pull request carries the label that accepts its regressions,
who added it when, and whether it counts - read from the pull request's timeline (GET
/issues/{n}/timeline), not from the event payload, which a re-run of the job replays as it was.

The label is on the pull request when its last ``labeled`` event comes after its last
``unlabeled`` one; that event's actor and time are the trail. It accepts what it was given
for, and nothing else:

- it counts only when added after the head commit under test was pushed: a ``labeled``
  event after the last push on the timeline (``committed``, ``head_ref_force_pushed``,
  ``head_ref_restored``). A label older than the latest push accepts nothing, and the report
  says "the accept label predates the latest push (abc1234): add it again to accept";
- the account that added it must hold at least the required permission on the repository
  (GET /collaborators/{username}/permission; ``write`` unless configured), and a bot counts
  only when it is one of those allowed by name.

A timeline or a permission that cannot be read accepts nothing (every regression gates) and
says why: the override is never assumed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ...compare.overrides import AcceptLabel
from ...errors import InputError
from .client import GitHubClient, GitHubError
from .workflow import RunContext

PUSHES = ("committed", "head_ref_force_pushed", "head_ref_restored")
# GitHub's repository roles, lowest first ("permission" gives the legacy base role:
# maintain reads as write, triage as read; "role_name" the role itself)
ROLES = ("read", "triage", "write", "maintain", "admin")
DEFAULT_PERMISSION = "write"


@dataclass(frozen=True)
class LabelPolicy:
    """Who may accept: the least repository role of a person adding the label, and the bots
    (logins, e.g. ``renovate[bot]``) whose label counts too."""

    permission: str = DEFAULT_PERMISSION
    bots: tuple[str, ...] = ()


@dataclass(frozen=True)
class LabelEvent:
    """The label as the timeline has it: its last ``labeled`` event, and whether a push came
    after it."""

    label: str
    actor: str
    bot: bool
    time: str
    pushed_after: bool


def label_on_timeline(events: Iterable[Mapping[str, Any]], label: str) -> LabelEvent | None:
    """The last ``labeled`` event of ``label`` (names compare case-insensitively, as GitHub's
    do), unless an ``unlabeled`` one followed it, with whether a push followed it; None when
    it is not on. The timeline is read once, oldest first."""
    wanted = label.casefold()
    found: LabelEvent | None = None
    for event in events:
        kind = event.get("event")
        if kind in PUSHES:
            if found is not None and not found.pushed_after:
                found = LabelEvent(found.label, found.actor, found.bot, found.time, pushed_after=True)
            continue
        named = event.get("label")
        name = named.get("name") if isinstance(named, dict) else None
        if kind not in ("labeled", "unlabeled") or not isinstance(name, str) or name.casefold() != wanted:
            continue
        if kind == "unlabeled":
            found = None
            continue
        actor = event.get("actor")
        login = actor.get("login") if isinstance(actor, dict) else None
        login = login if isinstance(login, str) and login else "(unknown)"
        bot = (isinstance(actor, dict) and actor.get("type") == "Bot") or login.endswith("[bot]")
        when = event.get("created_at")
        found = LabelEvent(name, login, bot, when if isinstance(when, str) else "", pushed_after=False)
    return found


def role_of(answer: Mapping[str, Any]) -> str:
    """The repository role a permission answer names: its ``role_name`` when that is one of
    GitHub's roles (a custom role: its base ``permission``)."""
    role = answer.get("role_name")
    if isinstance(role, str) and role in ROLES:
        return role
    permission = answer.get("permission")
    return permission if isinstance(permission, str) else "none"


def judge_label(found: LabelEvent, head: str, policy: LabelPolicy,
                permission_of: Any) -> tuple[AcceptLabel, str | None]:
    """The label as it counts for the head commit ``head`` (refused, with why, when it does
    not), and a warning when a permission could not be read. ``permission_of(login)`` gives
    the permission answer or raises GitHubError."""
    accept = AcceptLabel(label=found.label, actor=found.actor, time=found.time, commit=head)

    def refuse(why: str) -> AcceptLabel:
        return AcceptLabel(found.label, found.actor, found.time, head, refused=why)

    if found.pushed_after:
        return refuse(f"the accept label predates the latest push ({head[:7]}): add it again "
                      "to accept"), None
    if found.bot:
        if found.actor.casefold() in {b.casefold() for b in policy.bots}:
            return accept, None
        return refuse(f"the accept label was added by @{found.actor}, a bot that accept-label-bots "
                      f"does not name: nothing accepted (a person with {policy.permission} "
                      "permission adds it)"), None
    try:
        role = role_of(permission_of(found.actor))
    except GitHubError as exc:
        why = (f"could not read @{found.actor}'s permission on the repository (HTTP {exc.status}: "
               f"{exc.message}): nothing accepted")
        return refuse(f"the accept label {why}"), f"accept-label: {why}"
    rank = ROLES.index(role) if role in ROLES else -1
    if rank < ROLES.index(policy.permission):
        return refuse(f"the accept label was added by @{found.actor}, whose permission on the "
                      f"repository is {role}, below the {policy.permission} it needs: nothing "
                      "accepted"), None
    return accept, None


def find_accept_label(client: GitHubClient, owner: str, repo: str, number: int, label: str,
                      head: str = "", policy: LabelPolicy = LabelPolicy()
                      ) -> tuple[AcceptLabel | None, str | None]:
    """(the label as it counts for the head commit ``head``, or None when the pull request
    does not carry it; a warning when the timeline or a permission could not be read)."""
    try:
        found = label_on_timeline(client.list_issue_timeline(owner, repo, number), label)
    except GitHubError as exc:
        need = (" (the job needs `pull-requests: read` or `issues: read`)"
                if exc.status in (401, 403, 404) else "")
        return None, (f"accept-label: could not read pull request #{number}'s timeline: HTTP "
                      f"{exc.status}: {exc.message}{need}; no regression is accepted")
    if found is None:
        return None, None
    return judge_label(found, head, policy,
                       lambda login: client.get_collaborator_permission(owner, repo, login))


def read_accept_label(label: str, token: str, ctx: RunContext, budget: float | None = None,
                      policy: LabelPolicy = LabelPolicy()) -> tuple[AcceptLabel | None, str | None]:
    """The label on the pull request of ``ctx`` (its event), read with ``token``, as it counts
    for the head commit the run evaluates (``pull_request.head.sha``)."""
    from ...version import evalcheck_version

    owner, repo = ctx.owner_repo
    number = ctx.pr_number
    assert number is not None and owner
    with GitHubClient(token, ctx.api_url, user_agent=f"evalcheck/{evalcheck_version() or 'dev'}",
                      budget=budget) as client:
        return find_accept_label(client, owner, repo, number, label, ctx.head_sha, policy)


def check_permission(value: str, name: str) -> str:
    """A required permission: one of GitHub's repository roles."""
    role = value.strip().lower() or DEFAULT_PERMISSION
    if role not in ROLES:
        raise InputError(f"{name} must be one of {', '.join(ROLES)}, got {value[:40]!r}",
                         fix="the least repository role whose label accepts regressions, e.g. write")
    return role


def check_bots(names: Iterable[str], name: str) -> tuple[str, ...]:
    """Bot logins whose label counts, each ending in [bot] (as GitHub names them)."""
    bots = tuple(n.strip() for n in names if n.strip())
    for bot in bots:
        if not bot.endswith("[bot]") or len(bot) > 100:
            raise InputError(f"{name}: {bot[:60]!r} is not a bot's login",
                             fix="a bot's login as the timeline names it, e.g. renovate[bot]")
    return bots


def accept_label_from_environment(label: str, env: Mapping[str, str],
                                  policy: LabelPolicy = LabelPolicy()) -> AcceptLabel | None:
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
    found, warning = read_accept_label(label.strip(), token, ctx, policy=policy)
    if warning:
        say(f"evalcheck: warning: {clean(warning)}", err=True)
    return found
