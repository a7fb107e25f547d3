"""What the Action's run and ``evalcheck publish`` (commands/publish.py) do alike in a GitHub
job: the exit statuses, the one bad-input report, the job summary, posting the results and
the time all GitHub calls of the job may take."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ...errors import InputError
from ...models.results import Results
from ...safety.output import clean, say
from .publish import PublishOptions, PublishOutcome
from .workflow import Commands, RunContext, summary_room, write_summary

EXIT_PASSED, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
BUDGET_VARIABLE = "EVALCHECK_PUBLISH_BUDGET"


def write_step_summary(results: Results, ctx: RunContext, template: Path | None,
                       fail_on: str = "failure") -> None:
    """The full report in the job summary (1 MiB cap: it degrades like the comment)."""
    if ctx.summary_path is None:
        return
    from ...report.markdown import Links, render_within

    room = summary_room(ctx.summary_path)
    links = Links(run_url=ctx.run_url, blob_base=ctx.blob_base())
    text, _ = render_within(results, room, lambda s: len(s.encode("utf-8")), template=template,
                            extra={"links": links, "fail_on": fail_on}, reserve=64)
    write_summary(ctx.summary_path, text)


def publish_results(results: Results, ctx: RunContext, publish_options: PublishOptions, token: str,
                    commands: Commands, *, sha: str | None = None,
                    pr_number: int | None = None) -> PublishOutcome:
    """Comment, check run and status; refusals become warnings. Returns the outcome."""
    from .client import GitHubClient
    from .publish import Target, publish

    owner, repo = ctx.owner_repo
    if not token or not owner:
        what = "github-token" if not token else "GITHUB_REPOSITORY"
        commands.warning(f"evalcheck: no {what}, so nothing was posted to GitHub")
        return PublishOutcome()
    target = Target(owner=owner, repo=repo, sha=sha or ctx.head_sha,
                    pr_number=pr_number if pr_number is not None else ctx.pr_number,
                    run_url=ctx.run_url, blob_base=ctx.blob_base(sha))
    from ...version import evalcheck_version

    agent = f"evalcheck/{evalcheck_version() or 'dev'}"
    with GitHubClient(token, ctx.api_url, user_agent=agent, budget=publish_options.budget) as client:
        return publish(client, results, target, publish_options, commands)


def bad_input(commands: Commands, exc: Exception) -> int:
    """The one report of bad input: an error annotation and a log line, text cleaned."""
    commands.error(f"evalcheck: {clean(exc)}")
    say(f"evalcheck: error: {clean(exc)}", err=True)
    return EXIT_BAD_INPUT


def one_line_error(exc: Exception) -> str:
    return " ".join(str(exc).split())[:300]


def publish_budget(env: Mapping[str, str]) -> float:
    """Seconds all GitHub calls of a job may take together (EVALCHECK_PUBLISH_BUDGET)."""
    from .client import DEFAULT_BUDGET

    raw = (env.get(BUDGET_VARIABLE) or "").strip()
    if not raw:
        return DEFAULT_BUDGET
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise InputError(f"{BUDGET_VARIABLE} must be a number of seconds above 0, got {raw!r}")
    return value
