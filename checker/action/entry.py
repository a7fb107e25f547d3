"""The GitHub Action's entrypoint: inputs -> setup-command -> evaluation -> publish.

Run by the ``entrypoint`` script inside the container the runner starts (action.yml).
Exit status: 0 the gate passed (per ``fail-on``), 1 it failed, 2 bad input or setup.
Its inputs: config.py; the steps it shares with ``evalcheck publish`` (the fork-safe pair): github/job.py.
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..compare.gate import gate_failed
from ..compare.headline import gate_message
from ..safety.confine import unbend_output
from ..errors import InputError
from ..safety.confine import check_judge_cache_outside
from .github.job import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_PASSED, bad_input, publish_results, write_step_summary
from .github.publish import PublishOptions, PublishOutcome
from .github.workflow import Commands, Inputs, RunContext, write_outputs
from .config import (ActionConfig, changed_since, pull_request_base, quarantine_ref, read_config,
                     with_found_baselines)
from .host_files import give_back, give_cache_back, relative_to_workspace
from ..models.results import Results
from ..safety.interrupt import EXIT_SIGINT
from ..safety.output import clean, guarded, say
from ..safety.redact import secret_values
from ..agents.sandbox import AgentSandbox, scrub_environ
from ..agents.setup_command import run_setup
from ..report.writes import OutputFiles

if TYPE_CHECKING:
    from ..commands.run_data import Prepared
    from ..compare.overrides import AcceptLabel
    from .github.baseline import BaselineSearch

CACHE_FIX = ("keep it under the runner's home, e.g. judge-cache: /github/home/judge-cache, "
             "restored and saved by actions/cache with path: ${{ runner.temp }}/_github_home/judge-cache "
             "(docs/github-action.md#the-judge-cache)")


def agent_sandbox(config: ActionConfig, ctx: RunContext) -> AgentSandbox | None:
    """The unprivileged user the PR's code - setup-command, the agents, custom metrics - runs
    as, in every mode, replay included, when the container has that user
    (checker/agents/sandbox.py)."""
    sandbox = AgentSandbox.for_action(
        config.workdir, ctx.workspace, secrets=[config.token],
        outputs=[config.results_path, config.markdown_path, config.run.junit, config.run.inference_out],
        protected=[config.run.judge_cache])
    if sandbox is None:
        say("evalcheck: note: agents run as the checker's own user (not evalcheck's container "
            "image running as root); see docs/github-action.md#trust-model", err=True)
    return sandbox


def forget_runner_environ(secrets: list[str]) -> None:
    """Read once, kept in memory: the token, the inputs and the file-command paths leave
    this process's environment, so that no child can inherit them by mistake."""
    for name in set(os.environ) - set(scrub_environ(os.environ, secrets)):
        del os.environ[name]


def find_auto_baseline(config: ActionConfig, ctx: RunContext) -> BaselineSearch | None:
    """``baseline: auto`` on a pull request: the search for the results artifact of its merge
    base (or up to 20 commits older), which ``with_found_baselines`` compares with. Never fails the job: what it could
    not find becomes a note in the report (github/baseline.py). A shard job finds it too: it
    screens and confirms its cases against it, and the merge job, finding the same, decides
    (docs/sharding.md)."""
    if not config.auto_baseline:
        return None
    from .github.baseline import auto_baseline, describe
    from ..version import evalcheck_version

    search = auto_baseline(ctx, config.token, user_agent=f"evalcheck/{evalcheck_version() or 'dev'}",
                           budget=config.publish.budget, depth=config.baseline_depth)
    if search is None:
        return None
    say(clean(describe(search)))
    return search


def find_accept_label(config: ActionConfig, ctx: RunContext, commands: Commands) -> AcceptLabel | None:
    """On a pull request, the accept label as its timeline shows it (who added it, when), or
    None; a timeline that cannot be read accepts nothing, with a warning."""
    number = ctx.pr_number
    if not config.accept_label or number is None or not ctx.owner_repo[0] or not config.token \
            or config.run.shard:
        return None
    from .github.labels import read_accept_label

    found, warning = read_accept_label(config.accept_label, config.token, ctx, config.publish.budget,
                                       config.accept_policy)
    if warning:
        commands.warning(f"evalcheck: {clean(warning)}")
    if found is not None and found.refused is not None:
        commands.warning(f"evalcheck: label {clean(found.label)!r} on pull request #{number}: "
                         f"{clean(found.refused)}")
    elif found is not None:
        say(clean(f"evalcheck: label {found.label!r} on pull request #{number}, added by "
                  f"@{found.actor} at {found.time} after the push of {found.commit[:7]}: confirmed "
                  "regressions will not fail the gate"))
    return found


def record_baseline(results: Results, search: BaselineSearch, config: ActionConfig,
                    files: OutputFiles, pooled: list[Path] | None = None) -> Results:
    """Where the automatic baseline came from (or why there is none) goes into the results
    file and so into every report; its temporary copy is removed."""
    import shutil

    from ..report.results_json import results_json
    from .github.baseline import record_search

    # Only the results of main that were pooled (another suite's is left out, and said):
    # ``pooled``, the files the run read (all of config.run.baselines when not told).
    kept = pooled if pooled is not None else config.run.baselines
    search.history = [found for found in search.history if found.path in kept]
    results = record_search(results, search)
    files.write(config.results_path, results_json(results), "results file")
    if search.private is not None:
        shutil.rmtree(search.private, ignore_errors=True)
    return results


def main(env: Mapping[str, str] | None = None) -> int:
    real_environ = env is None
    env = dict(os.environ if env is None else env)
    if real_environ:
        forget_runner_environ([Inputs(env).text("github-token")])
    # Every line printed from here on is neutralised and redacted (checker/safety/output.py).
    with guarded(secret_values(env)):
        return _main(env)


def _main(env: dict[str, str]) -> int:
    commands = Commands(sys.stdout)
    # Mask first: nothing later may print it, but a crash message might quote it.
    token = Inputs(env).text("github-token")
    commands.add_mask(token)
    sandboxes: list[AgentSandbox] = []
    try:
        return _evaluate(env, commands, sandboxes)
    finally:
        for sandbox in sandboxes:  # the workspace goes back to its owner whatever happened
            with contextlib.suppress(InputError):
                sandbox.close()
            for problem in sandbox.problems:
                commands.warning(f"evalcheck: could not give back {clean(problem, 300)}")


def _evaluate(env: dict[str, str], commands: Commands, sandboxes: list[AgentSandbox]) -> int:
    """Inputs -> setup-command -> evaluation -> publish; a sandbox made is added to
    ``sandboxes`` at once, so that the caller ends it whatever happens."""
    # A file that cannot be written (disk full) is an error naming it; the rest goes on.
    files = OutputFiles(report=lambda message: commands.error(f"evalcheck: {clean(message)}"))
    try:
        ctx = RunContext.from_env(env)
        config, search = job_config(read_config(env, Path.cwd()), ctx, commands, sandboxes)
        results, template = evaluate_job(config, search, commands, files, secret_values(env))
    except InputError as exc:
        return bad_input(commands, exc)
    return publish_job(results, config, ctx, commands, files, template)


def job_config(config: ActionConfig, ctx: RunContext, commands: Commands,
               sandboxes: list[AgentSandbox]) -> tuple[ActionConfig, BaselineSearch | None]:
    """The job's run options, all found before any of the pull request's code runs: confined to
    the workspace, the agents' sandbox, main's results (``baseline: auto``, and the search
    that found them), the overrides, the changed files and the base commit."""
    boundary = ctx.workspace or config.workdir
    check_judge_cache_outside(config.run.judge_cache, boundary, "input 'judge-cache'", CACHE_FIX)
    for output in (config.results_path, config.markdown_path, config.run.junit, config.run.inference_out,
                   config.run.html):
        if output is not None:
            unbend_output(output, boundary)
    sandbox = agent_sandbox(config, ctx)
    if sandbox is not None:
        sandboxes.append(sandbox)
    search = find_auto_baseline(config, ctx)
    run = replace(with_found_baselines(config.run, search), confine=boundary, sandbox=sandbox,
                  # Overrides (docs/quarantine.md): the base branch's quarantine file, read with
                  # git before any of the PR's code runs; the accept label, from the PR's timeline.
                  quarantine_ref=quarantine_ref(ctx.event_name, ctx.event), quarantine_auto=True,
                  accept=find_accept_label(config, ctx, commands),
                  changed_since=changed_since(config, ctx.pull_request, ctx.event_name,
                                              search.found.commit if search and search.found else None),
                  changed_since_auto=True,
                  # On a pull request, files of the repository the gate reads are its claim,
                  # compared with its base commit (a baseline file it changed is read as the base has it).
                  base=pull_request_base(ctx.pull_request))
    return replace(config, run=run), search


def evaluate_job(config: ActionConfig, search: BaselineSearch | None, commands: Commands, files: OutputFiles,
                 secrets: list[str]) -> tuple[Results, Path | None]:
    """Read what the verdict reads, run setup-command, then evaluate (or merge the shards); the
    results, with where the automatic baseline came from, and the template as read."""
    from ..commands.run import prepare

    os.chdir(config.workdir)
    # Everything the verdict reads - eval files, criteria, the baseline, recorded runs,
    # the template, the custom metrics' sources - is read (or privately copied) now,
    # before setup-command, the agents or a custom metric run (the event file was read
    # first of all, by RunContext). Every rendering reads the template's private copy.
    prepared = None if config.merge else prepare(config.run)
    template = prepared.inputs.template if prepared is not None else config.run.template
    set_up(config, commands)
    commands.group("evalcheck: merge" if config.merge else "evalcheck: evaluation")
    try:
        if prepared is None:
            results = merge_shards(config)
        else:
            results = evaluate_prepared(config, prepared, search, files, secrets)
    finally:
        commands.endgroup()
    if prepared is None and search is not None:
        results = record_baseline(results, search, config, files)
    return results, template


def set_up(config: ActionConfig, commands: Commands) -> None:
    """The sandbox takes the workspace over (when the PR's code runs: setup-command, an agent),
    then setup-command runs."""
    sandbox = config.run.sandbox
    if sandbox is not None:
        sandbox.begin(hand_over=bool(config.setup_command or config.run.agent_command
                                     or config.run.agent_url))
    if config.setup_command:
        run_setup(config.setup_command, config.workdir, commands, sandbox)


def merge_shards(config: ActionConfig) -> Results:
    """The merge job: the shards' results merged, the run's files written (commands/merge.py)."""
    from ..commands.merge import merge_in_action
    from ..report.finish import results_from_file

    if config.run.sandbox is not None:  # no agent runs: setup-command's leftovers end here
        config.run.sandbox.end()
    merge_in_action(config.merge, config.run, config.fail_on)
    return results_from_file(config.results_path)


def evaluate_prepared(config: ActionConfig, prepared: Prepared, search: BaselineSearch | None,
                      files: OutputFiles, secrets: list[str]) -> Results:
    """The evaluation of what was read, where the automatic baseline came from recorded, and
    the gate's lines. A cancelled job exits here: the files say what ran; nothing is
    published, no verdict output."""
    from ..commands.run import evaluate
    from ..report.finish import report_gate

    results = evaluate(config.run, secrets, files, prepared)
    if search is not None:  # before the lines below: they name the baseline
        results = record_baseline(results, search, config, files, prepared.inputs.baseline_paths)
    report_gate(results, config.run.fail_on)
    if results.interrupted is not None:
        raise SystemExit(EXIT_SIGINT)
    return results


def publish_job(results: Results, config: ActionConfig, ctx: RunContext, commands: Commands,
                files: OutputFiles, template: Path | None) -> int:
    """The markdown report, the job summary, the comment and checks, the files handed back,
    the step's outputs; the exit status."""
    from ..compare.tokens import token_gate_failed
    from ..report.markdown import Links, render_markdown

    # A shard's verdict is not the suite's: the merge job gates (docs/sharding.md).
    failed = (gate_failed(results, config.fail_on) or token_gate_failed(results)) and not config.run.shard
    try:  # rendered first: a broken user template is bad input, found before any posting
        report = render_markdown(results, template=template,
                                 extra={"links": Links(run_url=ctx.run_url, blob_base=ctx.blob_base()),
                                        "fail_on": config.fail_on})
    except InputError as exc:
        return bad_input(commands, exc)
    files.write(config.markdown_path, report, "markdown report")
    outcome = post_results(results, config, ctx, commands, files,
                           replace(config.publish, template=template, gate_failed=failed))
    give_back([p for p in (config.results_path, config.markdown_path, config.run.junit,
                           config.run.inference_out, config.run.html) if p], ctx.workspace)
    give_cache_back(config.run.judge_cache)
    write_step_outputs(results, config, ctx, outcome, files)
    if failed:  # the gate's line (with the token gate's, when that failed) as an annotation
        commands.error(f"evalcheck: {clean(gate_message(results, config.fail_on))}")
    return exit_status(results, failed, files, commands)


def post_results(results: Results, config: ActionConfig, ctx: RunContext, commands: Commands,
                 files: OutputFiles, publish_options: PublishOptions) -> PublishOutcome:
    """The job summary, the comment, check run and status (``publish: false``: none, said)."""
    if not config.publish_enabled:
        say(f"evalcheck: publish: false - nothing posted; results in "
            f"{relative_to_workspace(config.results_path, ctx.workspace)}")
        return PublishOutcome()
    if ctx.summary_path is not None:
        files.attempt("job summary", ctx.summary_path,
                      lambda: write_step_summary(results, ctx, publish_options.template, config.fail_on))
    return publish_results(results, ctx, publish_options, config.token, commands)


def write_step_outputs(results: Results, config: ActionConfig, ctx: RunContext, outcome: PublishOutcome,
                       files: OutputFiles) -> None:
    """The step's outputs (GITHUB_OUTPUT), for later steps: paths relative to the workspace."""
    if (output_path := ctx.output_path) is None:
        return
    outputs = {"passed": "true" if results.passed else "false",
               "results-path": relative_to_workspace(config.results_path, ctx.workspace),
               "markdown-path": relative_to_workspace(config.markdown_path, ctx.workspace),
               "comment-url": outcome.comment_url or ""}
    files.attempt("step outputs (GITHUB_OUTPUT)", output_path, lambda: write_outputs(output_path, outputs))


def exit_status(results: Results, failed: bool, files: OutputFiles, commands: Commands) -> int:
    """1 the gate failed, 0 it passed; 2 when a passing gate's outputs are missing, or what
    ran was reported but is bad input: eval files that could not be read, a spent token
    budget, the judges' credentials or refusals, the model service's refusals."""
    if files.failed and not failed:
        return EXIT_BAD_INPUT  # a passing gate whose outputs are missing is not a pass
    problems = [error.error for error in results.file_errors or []]  # reported with the others' results
    if not problems and results.budgets:  # a spent token budget: what ran was reported
        from ..report.cost import budget_line

        problems = [budget_line(budget) for budget in results.budgets]
    if problems:
        for problem in problems:
            commands.error(f"evalcheck: {clean(problem)}")
        return EXIT_BAD_INPUT
    from ..report.finish import judge_errors

    judged = judge_errors(results)
    if judged is not None:  # missing judge credentials, or a judge that kept refusing: no verdict
        return bad_input(commands, judged)
    from ..scoring.refusals import refused

    gap = refused(results)
    if gap is not None:  # the model service's refusals: what ran was reported; exit 2, named
        commands.error(f"evalcheck: {clean(gap.sentence())}")
        return EXIT_BAD_INPUT
    return EXIT_FAILED if failed else EXIT_PASSED


def entrypoint() -> None:
    from ..safety.interrupt import sigterm_as_ctrl_c

    with guarded(secret_values(os.environ)), sigterm_as_ctrl_c() as seen:
        code: str | int | None  # an exit status, or SystemExit's code
        try:
            code = main()
        except KeyboardInterrupt:  # Ctrl-C, or SIGTERM from a cancelled job / docker stop
            say("evalcheck: interrupted", err=True)
            code = seen.status
        except SystemExit as exc:  # the agent runs were interrupted (agents/collect.py)
            code = seen.exit_status(exc.code)
        except Exception as exc:  # a bug of ours: say so in one line, keep the trace for a report
            Commands(sys.stdout).error(f"evalcheck crashed: {type(exc).__name__}: {clean(exc, 500)}")
            traceback.print_exc()  # through the guard: each line neutralised and redacted
            code = EXIT_FAILED
    sys.exit(code)


if __name__ == "__main__":
    entrypoint()
