"""The ``evalcheck`` command line. Imports of the pipeline happen inside commands: --help stays fast."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from .version import DISTRIBUTION

EXIT_PASSED, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
# = checker.compare.gate.FAIL_ON, kept here so --help imports no pydantic (a test compares).
FAIL_ON = ("failure", "regression", "drop", "error", "never")


class InputProblem(click.ClickException):
    exit_code = EXIT_BAD_INPUT

    def show(self, file=None) -> None:
        from .safety.output import clean, say

        say(f"evalcheck: error: {clean(self.message)}", err=True)


class GuardedGroup(click.Group):
    """Every line any command prints - click's own errors and tracebacks included - goes
    through checker/safety/output.py's guard: it cannot issue a workflow command or show a secret."""

    def main(self, *args, **kwargs):
        import os

        from .safety.interrupt import sigterm_as_ctrl_c
        from .safety.output import guarded
        from .safety.redact import secret_values

        with guarded(secret_values(os.environ)), sigterm_as_ctrl_c() as seen:
            try:
                return super().main(*args, **kwargs)
            except SystemExit as exc:  # SIGTERM exits 143 where Ctrl-C exits 130
                raise SystemExit(seen.exit_status(exc.code)) from None

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM outside the agent runs (scoring ...)
            from .safety.interrupt import EXIT_SIGINT
            from .safety.output import say

            say("evalcheck: interrupted", err=True)
            raise SystemExit(EXIT_SIGINT) from None


def _max_runs() -> int:
    from .safety.limits import MAX_RUNS

    return MAX_RUNS


class Count(click.IntRange):
    """A whole number of something (``noun``: "runs"); anything else is bad input said in
    one line, with what is expected ("'three' is not a number of runs; give a whole number
    1-100"), not click's "not a valid integer range". ``most``: the largest value the
    message names, checked later with its own advice (checker/safety/limits.py)."""

    name = "integer"  # the metavar --help shows

    def __init__(self, noun: str, min: int = 1, max: int | None = None,
                 most: Callable[[], int] | None = None):
        super().__init__(min=min, max=max)
        self.noun = noun
        self.most = most

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number: int | None = None
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            with contextlib.suppress(ValueError):
                number = int(str(value).strip())
        if number is None or number < (self.min or 0) or (self.max is not None and number > self.max):
            top = self.max if self.max is not None else self.most() if self.most else None
            span = f"{self.min}-{top}" if top is not None else f"of at least {self.min}"
            said = repr(value) if number is None else str(number)
            name = param.get_error_hint(ctx).strip("'\"") if param is not None and ctx else "value"
            raise InputProblem(f"{name}: {said} is not a number of "
                               f"{self.noun}; give a whole number {span}")
        return number


def _thresholds(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, float]:
    """``NAME=VALUE`` pairs as {name: threshold}; anything else is a usage error (exit 2)."""
    import math

    out: dict[str, float] = {}
    for raw in values:
        name, sep, value = raw.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not sep or not name.strip() or not math.isfinite(number):
            raise click.BadParameter(f"{raw!r}: give NAME=VALUE, a metric's name and a finite "
                                     "number (e.g. --threshold couplet_quality=4)")
        if name.strip() in out:
            raise click.BadParameter(f"{name.strip()!r} is given twice")
        out[name.strip()] = number
    return out


def _accept(options: dict):
    """--accept-label: the label as the pull request's timeline shows it (and as it counts:
    added after the latest push, by an account with --accept-label-permission or a bot
    --accept-label-bot names), or None. Pops the three options."""
    label = options.pop("accept_label")
    permission, bots = options.pop("accept_label_permission"), options.pop("accept_label_bots")
    if label is None:
        return None
    import os

    from .action.github.labels import LabelPolicy, accept_label_from_environment, check_bots, check_permission

    policy = LabelPolicy(permission=check_permission(permission or "", "--accept-label-permission"),
                         bots=check_bots(bots, "--accept-label-bot"))
    return accept_label_from_environment(label, os.environ, policy)


def _in_pull_request_job(options: dict, cache_key: str | None = None) -> None:
    """In a GitHub Actions pull-request job, the Action's protections (inputs/pr_job.py)."""
    import os

    from .inputs.pr_job import apply_pull_request_job

    apply_pull_request_job(options, os.environ, cache_key=cache_key)


def accept_policy_options(command):
    """--accept-label-permission and --accept-label-bot, on each command that takes --accept-label."""
    command = click.option("--accept-label-bot", "accept_label_bots", multiple=True, metavar="LOGIN",
                           help="A bot (e.g. renovate[bot]) whose --accept-label counts; any other "
                                "bot's accepts nothing. Repeatable.")(command)
    return click.option("--accept-label-permission", metavar="ROLE",
                        help="The least repository role (read, triage, write, maintain, admin) of "
                             "whoever adds --accept-label's label; below it the label accepts "
                             "nothing (default: write).")(command)


def _fail_input(exc: Exception) -> InputProblem:
    return InputProblem(str(exc))


@click.group(cls=GuardedGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name=DISTRIBUTION)
def main() -> None:
    """Evaluate AI agents on Google ADK eval sets and gate pull requests on the result."""


@main.command()
@click.argument("paths", nargs=-1)
@click.option("--agent-command", metavar="CMD", help="Agent speaking the evalcheck stdio protocol, run with /bin/sh -c.")
@click.option("--agent-url", metavar="URL", help="A running ADK API server (adk api_server).")
@click.option("--agent-server-command", metavar="CMD", help="Started before the run and stopped after; use with --agent-url.")
@click.option("--app-name", metavar="NAME", help="ADK app name for --agent-url (default: the eval set's session_input.app_name).")
@click.option("--replay", type=click.Path(dir_okay=False, path_type=Path), help="Score recorded runs instead of running an agent.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path), help="Criteria file for every eval set, instead of discovered test_config.json.")
@click.option("--initial-session", type=click.Path(dir_okay=False, path_type=Path), help="Initial session of legacy .test.json files (state, app_name, user_id; a session dump works), instead of one found beside them.")
@click.option("--num-runs", type=Count("runs", most=_max_runs), default=2, show_default=True, help="Runs per eval case (at most 100).")
@click.option("--concurrency", type=Count("runs in flight"), default=None, help="Eval case runs in flight at once, fixed. Default: adapts to the agent and its model service (grows while latency is flat and nothing is refused, cut back on a refusal), starting from what fits the agent (8 for an agent serving concurrent sessions such as evalcheck-adk; the number of CPUs for a process per run; 4 for --agent-url), up to --max-concurrency.")
@click.option("--max-concurrency", type=Count("runs in flight", max=1024), default=32, show_default=True, help="The most eval case runs in flight the adaptive default grows to (set it to what the model's quota allows in flight).")
@click.option("--turn-timeout", type=click.FloatRange(min=0, min_open=True), default=300.0, show_default=True, help="Seconds an agent may take for one user turn (finite, at most 86400).")
@click.option("--judge-concurrency", type=Count("judge calls in flight"), default=8, show_default=True, help="Judge-model calls in flight at once.")
@click.option("--judge-cache", type=click.Path(file_okay=False, path_type=Path), help="Directory of the on-disk judge cache.")
@click.option("--results", type=click.Path(dir_okay=False, path_type=Path), help="Write the results file (JSON).")
@click.option("--inference-out", type=click.Path(dir_okay=False, path_type=Path), help="Write what the agent did, in the replay format.")
@click.option("--markdown", type=click.Path(dir_okay=False, path_type=Path), help="Write the markdown report.")
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), help="Write JUnit XML (one testcase per eval case).")
@click.option("--template", type=click.Path(dir_okay=False, exists=True, path_type=Path), help="Your own Jinja template for the markdown report.")
@click.option("--adk-eval-history", type=click.Path(file_okay=False, path_type=Path), metavar="DIR", help="Also write ADK EvalSetResult files, as adk eval does, under DIR/<app>/.adk/eval_history/ (adk web opens them; DIR is its agents folder).")
@click.option("--html", type=click.Path(dir_okay=False, path_type=Path), help="Also write a self-contained HTML report (one page, no network).")
@click.option("--prices", type=click.Path(dir_okay=False, path_type=Path), help="Price table (model -> USD per million input/output tokens) over the default Gemini one, for the estimated cost (docs/cost.md).")
@click.option("--max-agent-tokens", type=Count("tokens"), metavar="N", help="Agent token budget: once spent, no further run starts; cases left out are not evaluated, exit 2.")
@click.option("--max-judge-tokens", type=Count("tokens"), metavar="N", help="Judge token budget: once spent, no further judge call starts; metrics left out are not evaluated, exit 2.")
@click.option("--max-token-increase", type=click.FloatRange(min=0), metavar="PCT", help="Fail (exit 1) when a case's agent tokens per run grew by more than PCT percent against the baseline.")
@click.option("--baseline", "baselines", multiple=True, type=click.Path(dir_okay=False, path_type=Path), help="Results file of main to compare with; give several (newest first) to pool main's history (docs/comparing.md).")
@click.option("--changed-since", metavar="REF", help="Run only the eval sets whose eval file, criteria file or agent changed since the merge base of REF (git); carry the others from --baseline, labelled carried. A change outside every agent's files runs everything (docs/changed-files.md).")
@accept_policy_options
@click.option("--accept-label", metavar="LABEL", help="In a GitHub Actions job of a pull request (GITHUB_TOKEN set): when the pull request carries LABEL, its confirmed regressions do not fail --fail-on regression or drop; who added it and when are read from its timeline and reported (docs/quarantine.md).")
@click.option("--quarantine-ref", metavar="REF", help="Quarantine the cases .evalcheck/quarantine.yml lists as the commit REF names has it (git; e.g. origin/main: the base branch as it is now), never the working tree's: they run and are reported, and do not gate until their entry expires (docs/quarantine.md). Default: --base's REF.")
@click.option("--base", metavar="REF", help="The checkout is a change of REF (a pull request's base): a --baseline file git tracks is read as the merge base of REF and HEAD has it, and a --replay file the change added or changed is said to be its own (default: --changed-since's REF).")
@click.option("--agent-paths", "agent_paths", multiple=True, metavar="EVALS=PATH[,PATH...]", help="With --changed-since: the agent of the eval files at or under EVALS is these files and folders (default: the ADK agent folder the eval file lies in). Repeatable.")
@click.option("--verdict", default="mean", show_default=True, metavar="RULE", help="How runs make a metric's verdict: mean, all-runs, majority or k-of-n:K.")
@click.option("--fail-on", type=click.Choice(FAIL_ON), default="failure", show_default=True, help="What fails the run (exit 1); regression and drop need --baseline.")
@click.option("--confirm-runs", type=Count("runs", min=0, most=_max_runs), metavar="N", help="Most fresh runs for a case that looks worse than the baseline (two thirds of it when it looked only a little worse); only they decide (default 60; 0 in replay; at most 100).")
@click.option("--alpha", type=click.FloatRange(min=0, max=0.5, min_open=True), default=0.05, show_default=True, help="Family-wise significance level of the whole suite's regression decisions.")
@click.option("--retries", type=Count("retries", min=0, max=5), default=1, show_default=True, help="Re-runs of a run whose agent errored, before it counts as failing.")
@click.option("--max-service-wait", type=click.FloatRange(min=0, max=86400), default=600.0, show_default=True, metavar="SECONDS", help="How long to wait, in all, for a model service that keeps refusing (429, 503, ...): a refused run is run again after the delay the service asks for, never counted as failing; once no run got through for this long, the runs left get no verdict (exit 2).")
@click.option("--max-runs", type=Count("runs", most=_max_runs), metavar="M", help="Adaptive: give cases whose verdict is uncertain more runs, one round at a time, up to M runs in all (at most 100).")
@click.option("--shard", metavar="I/N", help="Evaluate only shard I (1-based) of N of the selected cases; merge the shards with `evalcheck merge`.")
@click.option("--threshold", "thresholds", multiple=True, metavar="NAME=VALUE", callback=_thresholds, help="Threshold of a metric of an agents-cli eval_config.yaml (a format without thresholds); without one the metric is informational. Repeatable.")
@click.option("--confine", type=click.Path(file_okay=False, exists=True, path_type=Path), metavar="DIR", help="DIR (a checkout of an untrusted change) is read as the Action reads its workspace: a symlink under it leading out, a file an eval or config file names outside it and a --judge-cache inside it are bad input (docs/command-line.md#untrusted-checkouts).")
def run(paths: tuple[str, ...], **options) -> None:
    """Discover eval files under PATHS (default .), run the agent, score, write reports.

    A PATH may select cases: path/to/x.evalset.json:case_a,case_b.
    Exit status: 0 the gate passed (per --fail-on), 1 it failed, 2 bad input.
    """
    from .errors import InputError

    modes = [k for k in ("agent_command", "agent_url", "replay") if options.get(k)]
    if len(modes) != 1:
        raise click.UsageError("give exactly one of --agent-command, --agent-url, --replay")
    if options.get("agent_server_command") and not options.get("agent_url"):
        raise click.UsageError("--agent-server-command goes with --agent-url")
    if options.get("agent_paths") and not options.get("changed_since"):
        raise click.UsageError("--agent-paths goes with --changed-since")
    from .agents.early_start import started_early

    try:
        # Our evalcheck-adk starts importing google-adk now, while the checker imports itself
        # and reads the inputs; it loads the agent at the first run (agents/early_start.py).
        # Not with --changed-since, which may run nothing.
        with started_early(options.get("agent_command"), when=not options.get("changed_since")) as early:
            from .commands.run import RunOptions, execute

            _in_pull_request_job(options, cache_key="judge_cache")
            options["accept"] = _accept(options)
            passed = execute(RunOptions(paths=list(paths), early_agent=early,
                                        **{**options, "baselines": list(options["baselines"]),
                                           "agent_paths": list(options["agent_paths"])}))
    except InputError as exc:
        raise _fail_input(exc) from None
    sys.exit(EXIT_PASSED if passed else EXIT_FAILED)


@main.command()
@click.argument("baselines", metavar="BASELINE...", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.argument("head", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--results", type=click.Path(dir_okay=False, path_type=Path), help="Write HEAD's results with the comparison (JSON).")
@click.option("--markdown", type=click.Path(dir_okay=False, path_type=Path), help="Write the markdown report.")
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), help="Write JUnit XML.")
@click.option("--template", type=click.Path(dir_okay=False, exists=True, path_type=Path), help="Your own Jinja template for the markdown report.")
@click.option("--html", type=click.Path(dir_okay=False, path_type=Path), help="Also write a self-contained HTML report (one page, no network).")
@click.option("--max-token-increase", type=click.FloatRange(min=0), metavar="PCT", help="Fail (exit 1) when a case's agent tokens per run grew by more than PCT percent against the baseline.")
@click.option("--fail-on", type=click.Choice(FAIL_ON), default="failure", show_default=True, help="What fails the comparison (exit 1); regression: only a regressed case, a failing new case or a metric error; drop: also a suite-wide drop.")
@accept_policy_options
@click.option("--accept-label", metavar="LABEL", help="In a GitHub Actions job of a pull request (GITHUB_TOKEN set): when the pull request carries LABEL, its confirmed regressions do not fail --fail-on regression or drop; who added it and when are read from its timeline and reported (docs/quarantine.md).")
@click.option("--base", metavar="REF", help="The checkout is a change of REF (a pull request's base): a BASELINE file git tracks is read as the merge base of REF and HEAD has it (default: in a GitHub Actions pull-request job, its base commit).")
@click.option("--quarantine-ref", metavar="REF", help="Quarantine the cases .evalcheck/quarantine.yml lists as the commit REF names has it (git; e.g. origin/main: the base branch as it is now), never the working tree's: they run and are reported, and do not gate until their entry expires (docs/quarantine.md).")
@click.option("--alpha", type=click.FloatRange(min=0, max=0.5, min_open=True), default=0.05, show_default=True, help="Family-wise significance level of the whole suite's regression decisions.")
def compare(**options) -> None:
    """Compare results files (BASELINE, e.g. of main - several, newest first, pool main's
    history - and HEAD) without running an agent.

    Labels every HEAD case regressed, improved, unchanged, new or changed (docs/comparing.md).
    Exit status: 0 the gate passed (per --fail-on), 1 it failed, 2 bad input.
    """
    from .commands.compare import CompareRequest, compare_files
    from .errors import InputError

    try:
        _in_pull_request_job(options)
        options["accept"] = _accept(options)
        passed = compare_files(CompareRequest(**options))
    except InputError as exc:
        raise _fail_input(exc) from None
    sys.exit(EXIT_PASSED if passed else EXIT_FAILED)


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--results", type=click.Path(dir_okay=False, path_type=Path), help="Write the merged results file (JSON).")
@click.option("--markdown", type=click.Path(dir_okay=False, path_type=Path), help="Write the markdown report.")
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), help="Write JUnit XML (one testcase per eval case).")
@click.option("--template", type=click.Path(dir_okay=False, exists=True, path_type=Path), help="Your own Jinja template for the markdown report.")
@click.option("--inference-out", type=click.Path(dir_okay=False, path_type=Path), help="Merge the shards' recorded-runs files (given among FILES) into this file.")
@click.option("--html", type=click.Path(dir_okay=False, path_type=Path), help="Also write a self-contained HTML report (one page, no network; with --inference-out, each run's turns).")
@click.option("--prices", type=click.Path(dir_okay=False, path_type=Path), help="Price table over the default Gemini one, for the merged estimated cost (docs/cost.md).")
@click.option("--max-token-increase", type=click.FloatRange(min=0), metavar="PCT", help="Fail (exit 1) when a case's agent tokens per run grew by more than PCT percent against the baseline.")
@click.option("--baseline", "baselines", multiple=True, type=click.Path(dir_okay=False, path_type=Path), help="Results file of main to compare the merged results with; several (newest first) pool main's history (docs/comparing.md).")
@click.option("--fail-on", type=click.Choice(FAIL_ON), default="failure", show_default=True, help="What fails the merge (exit 1); regression and drop need --baseline.")
@accept_policy_options
@click.option("--accept-label", metavar="LABEL", help="In a GitHub Actions job of a pull request (GITHUB_TOKEN set): when the pull request carries LABEL, its confirmed regressions do not fail --fail-on regression or drop; who added it and when are read from its timeline and reported (docs/quarantine.md).")
@click.option("--base", metavar="REF", help="The checkout is a change of REF (a pull request's base): a --baseline file git tracks is read as the merge base of REF and HEAD has it (default: in a GitHub Actions pull-request job, its base commit).")
@click.option("--quarantine-ref", metavar="REF", help="Quarantine the cases .evalcheck/quarantine.yml lists as the commit REF names has it (git; e.g. origin/main: the base branch as it is now), never the working tree's: they run and are reported, and do not gate until their entry expires (docs/quarantine.md).")
@click.option("--alpha", type=click.FloatRange(min=0, max=0.5, min_open=True), default=0.05, show_default=True, help="Family-wise significance level of the whole suite's regression decisions.")
def merge(files: tuple[Path, ...], **options) -> None:
    """Merge the results files of `run --shard I/N` shards into one, as if one machine ran all.

    FILES are every shard's results file (and, with --inference-out, their recorded-runs
    files). Exit status: 0 every gate passed, 1 a gate failed or a run errored, 2 bad input
    (a shard missing or given twice, a case in two shards, other selections or versions).
    """
    from .errors import InputError
    from .report.finish import (raise_budget_errors, raise_file_errors, raise_refusal_errors,
                                report_gate, say_run_lines)
    from .commands.merge import MergeRequest, merge_files

    try:
        _in_pull_request_job(options)
        options["accept"] = _accept(options)
        request = MergeRequest(files=list(files), **options)
        merged = merge_files(request)
    except InputError as exc:
        raise _fail_input(exc) from None
    from .compare.confirm import confirmation_line

    say_run_lines(merged, filter(None, [confirmation_line(merged.metadata)]))  # the shards' fresh runs
    passed = report_gate(merged, request.fail_on)
    try:
        raise_file_errors(merged)
        raise_budget_errors(merged)  # a shard's spent budget: exit 2, as that shard's was
        raise_refusal_errors(merged)  # a shard's refused runs likewise
    except InputError as exc:
        raise _fail_input(exc) from None
    sys.exit(EXIT_PASSED if passed else EXIT_FAILED)


@main.command()
@click.argument("old", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("new", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--initial-session", type=click.Path(dir_okay=False, path_type=Path), help="Initial session JSON (state, app_name, user_id; a session dump works); default: initial-session.json or initial.session.json beside OLD.")
def migrate(old: Path, new: Path, initial_session: Path | None) -> None:
    """Convert a legacy .test.json file to the EvalSet format (ADK's migrate_eval_data_to_new_schema)."""
    from .errors import InputError
    from .inputs.evalfile import migrate as do_migrate
    from .report.text import log_safe

    notes: list[str] = []
    try:
        eval_set = do_migrate(old, new, initial_session, notes)
    except InputError as exc:
        raise _fail_input(exc) from None
    for note in notes:
        click.echo(log_safe(f"evalcheck: note: {note}"), err=True)
    click.echo(f"wrote {new}: eval set '{eval_set.eval_set_id}' with {len(eval_set.eval_cases)} case(s)")
    click.echo(log_safe(f"evalcheck: note: delete {old} now (or move it out of the folders "
                        f"`evalcheck run` searches): it holds eval set "
                        f"'{eval_set.eval_set_id}' too, and a run that finds both evaluates "
                        "it twice"), err=True)


@main.command()
@click.option("--results", "results_file", required=True, type=click.Path(dir_okay=False, path_type=Path), help="Results file written by `evalcheck run --results` (or the action).")
@click.option("--event", "event_file", type=click.Path(dir_okay=False, path_type=Path), help="Event payload of the evaluated run (pull_request), e.g. from an artifact: gives the PR number and head SHA.")
@click.option("--sha", help="Commit for the check run and status (default: the PR head from --event or this run's event).")
@click.option("--pr", type=click.IntRange(min=1), help="Pull request number for the comment.")
@click.option("--repository", metavar="OWNER/REPO", help="Repository (default: GITHUB_REPOSITORY).")
@click.option("--comment", type=click.Choice(["update", "new", "off"]), default="update", show_default=True, help="Sticky comment, a new one, or none.")
@click.option("--comment-key", default="default", show_default=True, help="Keeps several reports on one PR apart.")
@click.option("--check-run/--no-check-run", default=True, show_default=True, help="Create a check run with annotations.")
@click.option("--commit-status/--no-commit-status", default=False, show_default=True, help="Set a commit status.")
@click.option("--fail-on", type=click.Choice(FAIL_ON), default="failure", show_default=True, help="What makes the check run fail (else neutral).")
@click.option("--template", type=click.Path(dir_okay=False, exists=True, path_type=Path), help="Your own Jinja template for the report.")
def publish(results_file: Path, event_file: Path | None, **options) -> None:
    """Post a results file to GitHub: PR comment, check run, status, job summary.

    For the fork-safe workflow_run pattern (docs/github-action.md). The token comes from
    the GITHUB_TOKEN environment variable, never from the command line. Exit status: 0
    published (refusals are warnings), 2 bad input.
    """
    from .commands.publish import PublishRequest, publish_command

    sys.exit(publish_command(PublishRequest(results=results_file, event=event_file, **options)))


def console() -> None:
    """The ``evalcheck`` command: ``main``, then the end of the process without the
    interpreter's teardown, which unloads every module (some 80 ms once the pipeline is
    loaded, after the reports are written). Exit handlers run and the standard streams are
    flushed first; with another thread still running, or an exit status that is not a
    number, the process ends the ordinary way."""
    import threading

    try:
        main()
        code: object = 0
    except SystemExit as done:
        code = 0 if done.code is None else done.code
    if not isinstance(code, int) or threading.active_count() > 1:
        raise SystemExit(code)
    import atexit
    import os

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    console()
