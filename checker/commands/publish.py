"""``evalcheck publish``: post a results file made elsewhere - the second half of the
fork-safe workflow pair (docs/github-action.md)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..compare.gate import gate_failed
from ..errors import InputError
from ..action.github.job import (EXIT_BAD_INPUT, EXIT_PASSED, bad_input, one_line_error, publish_budget,
                                 publish_results, write_step_summary)
from ..action.github.publish import PublishOptions, check_comment_key
from ..action.github.workflow import Commands, RunContext, write_outputs
from ..safety.output import clean, guarded, say
from ..action.publish_target import Claimed, Refused, trusted_target
from ..safety.redact import Redactor, secret_values
from ..report.writes import OutputFiles


@dataclass
class PublishRequest:
    """``evalcheck publish``: post a results file made elsewhere (the fork-safe pair)."""

    results: Path
    event: Path | None = None       # the evaluated run's event (untrusted when from an artifact)
    sha: str | None = None
    pr: int | None = None
    repository: str | None = None
    comment: str = "update"
    comment_key: str = "default"
    check_run: bool = True
    commit_status: bool = False
    fail_on: str = "failure"
    template: Path | None = None


def publish_command(request: PublishRequest, env: Mapping[str, str] | None = None) -> int:
    """Publish ``request.results``. On a ``workflow_run`` the commit and the PR come from
    that trusted event only (publish_target.py); an artifact that disagrees is refused and
    nothing is posted. Returns the exit status."""
    env = dict(os.environ if env is None else env)
    with guarded(secret_values(env)):
        return _publish(request, env)


def _publish(request: PublishRequest, env: dict[str, str]) -> int:
    from ..action.github.client import GitHubClient, GitHubError
    from ..report.finish import results_from_file
    from ..action.github.workflow import load_event

    commands = Commands(sys.stdout)
    token = env.get("GITHUB_TOKEN", "")
    commands.add_mask(token)
    try:
        ctx = RunContext.from_env(env)
        if request.repository:
            ctx.repository = request.repository
        try:
            results = results_from_file(request.results)
        except FileNotFoundError:
            raise InputError("results file not found", file=str(request.results)) from None
        except ValueError as exc:
            raise InputError(f"not a results file: {one_line_error(exc)}", file=str(request.results)) from None
        claimed = Claimed(sha=request.sha, pr=request.pr)
        if request.event is not None:
            evaluated = RunContext(repository=ctx.repository, event=load_event(request.event))
            claimed.pr = claimed.pr if claimed.pr is not None else evaluated.pr_number
            claimed.sha = claimed.sha or _head_of(evaluated)
        # Results from an artifact are outside text too: no secret of this job in them.
        results = Redactor(secret_values(env)).model(results)
        options = PublishOptions(comment=request.comment, comment_key=check_comment_key(request.comment_key),
                                 check_run=request.check_run, commit_status=request.commit_status,
                                 gate_failed=gate_failed(results, request.fail_on), template=request.template,
                                 fail_on=request.fail_on,
                                 budget=publish_budget(env))
        owner, repo = ctx.owner_repo
        run = ctx.event.get("workflow_run")
        pr: int | None
        if isinstance(run, dict):
            # The fork-safe pair: only the trusted event says where to post (publish_target.py).
            def get_pull(number: int) -> dict:
                if not (token and owner):
                    raise Refused(f"cannot confirm pull request #{number} without a token")
                with GitHubClient(token, ctx.api_url, budget=options.budget) as client:
                    try:
                        return client.get_pull(owner, repo, number)
                    except GitHubError as exc:
                        raise Refused(f"cannot read pull request #{number}: HTTP {exc.status}") from None

            try:
                sha, pr = trusted_target(run, claimed, get_pull)
            except Refused as exc:
                return refuse(commands, exc)
        else:  # by hand: the caller's own word
            pr = claimed.pr if claimed.pr is not None else ctx.pr_number
            sha = claimed.sha or ctx.head_sha or ctx.sha
        if not sha:
            raise InputError("no commit to publish for", fix="pass --sha or --event, or run on workflow_run")
    except InputError as exc:
        return bad_input(commands, exc)
    files = OutputFiles(report=lambda message: commands.error(f"evalcheck: {clean(message)}"))
    if ctx.summary_path is not None:
        files.attempt("job summary", ctx.summary_path, lambda: write_step_summary(results, ctx, request.template,
                                                                                        request.fail_on))
    outcome = publish_results(results, ctx, options, token, commands, sha=sha, pr_number=pr)
    if (output_path := ctx.output_path) is not None:
        outputs = {"passed": "true" if results.passed else "false", "comment-url": outcome.comment_url or ""}
        files.attempt("step outputs (GITHUB_OUTPUT)", output_path,
                      lambda: write_outputs(output_path, outputs))
    # The gate is the evaluating job's; this job only reports (see docs/github-action.md).
    return EXIT_BAD_INPUT if files.failed else EXIT_PASSED


def _head_of(evaluated: RunContext) -> str | None:
    """The commit the artifact's event names (its PR's head, or its own commit)."""
    head = evaluated.pull_request.get("head")
    sha = head.get("sha") if isinstance(head, dict) else None
    return sha if isinstance(sha, str) and sha else (evaluated.head_sha or None)


def refuse(commands: Commands, exc: Exception) -> int:
    """An artifact that disagrees with the trusted event: a warning, nothing posted, exit 2."""
    commands.warning(f"evalcheck publish: refused, nothing posted: {clean(exc)}")
    say(f"evalcheck: error: refused, nothing posted: {clean(exc)}", err=True)
    return EXIT_BAD_INPUT
