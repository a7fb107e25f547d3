"""``evalcheck run``: read inputs -> plan -> run agents (or replay) -> score -> compare -> write.

``evaluate`` is the conductor: one call per stage, each taking and returning the typed data
below (docs/architecture.md draws it)."""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import aio
from .compare.verdict import VerdictRule, parse_verdict_rule, runs_needed
from .inputs.discover import EvalTarget, discover, find_repo_root
from .safety.confine import confined
from .errors import InputError
from .safety.limits import check_runs, check_turn_timeout
from .metrics.base import ScoringContext
from .models.records import RecordedRun, RecordedRuns
from .models.results import FileError, Results
from .models.usage import TokenBudget
from .options import RunOptions
from .scoring.pipeline import RunKey, run_counts, score_all
from .safety.output import clean, say
from .safety.redact import Redactor, secret_values
from .report.terminal import failure_lines
from .report.finish import report_gate, write_reports
from .version import evalcheck_version
from .report.writes import Named, OutputFiles, check_outputs, say_error

if TYPE_CHECKING:
    from .compare.adaptive import AdaptiveRuns
    from .report.cost import PriceTable
    from .models.results import ShardInfo
    from .report.adk_history import HistoryPlan
    from .simulation.model import SimulatorStats


@dataclass
class Inputs:
    """What the run reads, checked before any agent runs (bad input is found here)."""
    root: Path
    rule: VerdictRule
    baselines: list[Results]  # main's results, newest first
    targets: list[EvalTarget]  # with --shard, outlined only: the plan loads its own cases
    notes: list[str]  # e.g. an empty eval set skipped
    problems: list[InputError] = field(default_factory=list)  # eval files that could not be read
    prices: PriceTable | None = None


@dataclass
class Plan:
    """What runs and how it is judged: this shard's cases, the scoring services, adaptive runs."""
    targets: list[EvalTarget]
    rule: VerdictRule
    shard: ShardInfo | None
    warnings: list[str]
    context: ScoringContext
    simulated: SimulatorStats  # conversation_scenario cases' simulated users
    adaptive: AdaptiveRuns | None
    replayed: Mapping[RunKey, list[RecordedRun]] | None = None  # the replay's selected runs, read
    metric_sources: Path | None = None  # the private copy of the custom metrics' packages
    problems: list[InputError] = field(default_factory=list)  # eval files that could not be read
    history: HistoryPlan | None = None  # --adk-eval-history: the eval sets, before scoring
    prices: PriceTable | None = None  # the default table, or --prices over it
    budgets: Budgets = field(default_factory=lambda: Budgets())


@dataclass
class Budgets:
    """The token budgets of the run (--max-agent-tokens, --max-judge-tokens)."""
    agent: TokenBudget | None = None
    judge: TokenBudget | None = None

    def spent(self) -> list[TokenBudget]:
        return [b for b in (self.agent, self.judge) if b is not None and b.refused]


@dataclass
class Runs:
    """What the agents did (or the replay file holds), by case, and the redactor for it."""
    by_case: Mapping[RunKey, list[RecordedRun]]
    redactor: Redactor


@dataclass(frozen=True)
class Started:
    at: datetime
    clock: float  # time.monotonic()

    @classmethod
    def now(cls) -> Started:
        return cls(datetime.now(timezone.utc), time.monotonic())


def execute(options: RunOptions, secrets: Iterable[str] = ()) -> bool:
    """Run the whole job; returns whether the gate (``options.fail_on``) passed. Raises
    InputError on bad input, and once everything else is done, if an output file could not
    be written. ``secrets``: values to redact on top of the environment's secret variables."""
    files = OutputFiles()
    results = evaluate(options, secrets, files)
    passed = report_gate(results, options.fail_on, with_baseline=bool(options.baselines))
    from .compare.tokens import token_gate_failed, token_gate_message

    if token_gate_message(results):
        say(clean(token_gate_message(results)))
    passed = passed and not token_gate_failed(results)
    files.check()
    raise_file_errors(results)
    raise_budget_errors(results)
    return passed


def raise_budget_errors(results: Results) -> None:
    """A token budget that was spent: bad input (exit 2) naming it, once everything that
    did run was scored and reported."""
    spent = results.budgets or []
    if not spent:
        return
    from .report.cost import budget_line

    raise InputError("; ".join(budget_line(b) for b in spent),
                     fix="raise the budget, or select fewer cases or runs")


def raise_file_errors(results: Results) -> None:
    """Eval files that could not be read, each said on its own line, then bad input (exit 2):
    after every other file was evaluated and reported."""
    errors = results.file_errors or []
    if not errors:
        return
    for error in errors:
        say_error(error.error)
    raise InputError(f"{len(errors)} eval file{'s' if len(errors) > 1 else ''} could not be read "
                     f"({', '.join(e.path for e in errors)}); the other eval files were evaluated "
                     "and reported", fix="fix or rename the file(s) named above")


@dataclass
class Prepared:
    """Everything the verdict reads, read before any of the pull request's code runs
    (setup-command, the agents, custom metrics): eval files and criteria, the baselines, the
    recorded runs, the template (the Action's private copy) and the custom metrics' sources
    (a private copy). Nothing later reads those files again (docs/github-action.md#trust-model)."""
    started: Started
    inputs: Inputs
    plan: Plan


def prepare(options: RunOptions) -> Prepared:
    """The reading stages: ``read_inputs`` and ``plan_runs``. The Action calls it before
    setup-command; ``evaluate`` when not given it."""
    started = Started.now()
    inputs = read_inputs(options)
    return Prepared(started, inputs, plan_runs(options, inputs))


def evaluate(options: RunOptions, secrets: Iterable[str], files: OutputFiles,
             prepared: Prepared | None = None) -> Results:
    """Read, plan, run, score, compare, write the files (failures reported by ``files``) and
    print the failure lines; the results, redacted as written. ``prepared``: the reading
    stages, when the caller ran them earlier (the Action: before setup-command)."""
    # Read earlier by the caller (the Action, before setup-command): the run's clock starts
    # here, so that setup-command's time is not the evaluation's, as before.
    started = Started.now() if prepared is not None else None
    prepared = prepared or prepare(options)
    started, inputs, plan = started or prepared.started, prepared.inputs, prepared.plan
    try:
        runs = run_cases(options, plan, secrets, files)
        results = score(options, plan, runs, started)
    finally:
        if plan.metric_sources is not None:
            import shutil

            shutil.rmtree(plan.metric_sources, ignore_errors=True)
    results = compare_with_baseline(options, inputs.baselines, plan, results)
    return write(options, plan, runs.redactor, results, files, runs.by_case)


def read_inputs(options: RunOptions) -> Inputs:
    """Check the options, read the baseline, find the eval files: all bad input, found before
    any agent runs."""
    check_runs("num-runs", options.num_runs)
    check_turn_timeout(options.turn_timeout)
    if options.max_runs is not None:
        check_runs("max-runs", options.max_runs)
    check_comparison_options(options)
    rule = parse_verdict_rule(options.verdict)
    check_run_counts(options, rule)
    baselines = read_baselines(options)  # bad input is found before any agent runs
    root = find_repo_root(Path.cwd())
    if options.config_file is not None and not options.config_file.is_file():
        raise InputError("config file not found", file=str(options.config_file))
    for what, path in (("the replay file", options.replay), ("the config file", options.config_file),
                       ("the template", options.template), ("the judge cache", options.judge_cache),
                       ("the initial session file", options.initial_session),
                       ("the prices file", options.prices)):
        if path is not None:
            confined(path, options.confine, what)
    if options.template is not None:
        from .report.markdown import check_template, private_template_copy

        check_template(options.template)
        if options.sandbox is not None:  # a copy the agent's user cannot write
            import tempfile

            options.template = private_template_copy(
                options.template, Path(tempfile.mkdtemp(prefix="evalcheck-template-")))
    notes: list[str] = []
    problems: list[InputError] = []  # eval files that cannot be read: the others still run
    targets = discover(options.paths, root=root, config_file=options.config_file,
                       initial_session=options.initial_session, notes=notes,
                       confine=options.confine, outline_only=options.shard is not None,
                       problems=problems, thresholds=options.thresholds)
    from .report.cost import default_table, read_prices

    prices = read_prices(options.prices) if options.prices is not None else default_table()
    return Inputs(root=root, rule=rule, baselines=baselines, targets=targets, notes=notes,
                  problems=problems, prices=prices)


def plan_runs(options: RunOptions, inputs: Inputs) -> Plan:
    """This shard's cases, the outputs checked against the inputs, the warnings said, the
    scoring services and adaptive runs set up."""
    targets, shard = inputs.targets, None
    if options.shard is not None:
        from .scale.shards import shard_targets

        targets, shard = shard_targets(targets, options, inputs.baselines[0] if inputs.baselines else None)
        for target in targets:  # outlined so far: load this shard's cases, only them
            target.loaded.keep_cases(target.case_ids)
    check_outputs(run_outputs(options), run_inputs(options, targets))  # before anything is written
    warnings = list(dict.fromkeys([*inputs.notes, *(w for t in targets for w in t.config.warnings)]))
    for warning in warnings:
        say(f"evalcheck: warning: {clean(warning)}", err=True)
    from .simulation.model import SimulatorStats

    simulated = SimulatorStats()
    context = build_context(options)
    budgets = Budgets(
        agent=TokenBudget("--max-agent-tokens", options.max_agent_tokens, "agent")
        if options.max_agent_tokens and options.replay is None else None,
        judge=TokenBudget("--max-judge-tokens", options.max_judge_tokens, "judge")
        if options.max_judge_tokens else None)
    context.services["judge"].budget = budgets.judge
    replayed = None
    if options.replay is not None:
        from .inputs.replay import index_replay

        replayed = index_replay(options.replay, targets)  # the selected runs' text, in memory
    from .scoring.custom_metric_worker import metric_worker
    from .scoring.metric_sources import copy_metric_sources

    # Custom metrics are the PR's code: never imported here, always in the worker process,
    # as the agent's user in the Action, from a copy of their sources made now.
    sources = copy_metric_sources(targets, inputs.root)
    context.services["custom_metric_worker"] = metric_worker(inputs.root, options.sandbox, sources=sources)
    adaptive = extra_runs(options, targets, inputs.rule, context,
                          inputs.baselines if shard is None else [])
    history = None
    if options.adk_eval_history is not None:  # the eval sets as ADK reads them, before scoring
        from .report.adk_history import plan_history

        history = plan_history(options.adk_eval_history, targets, options.app_name)
    return Plan(targets=targets, rule=inputs.rule, shard=shard, warnings=warnings, context=context,
                simulated=simulated, adaptive=adaptive, replayed=replayed, metric_sources=sources,
                problems=inputs.problems, history=history, prices=inputs.prices,
                budgets=budgets)


def run_cases(options: RunOptions, plan: Plan, secrets: Iterable[str], files: OutputFiles) -> Runs:
    """Run the agents (or read the replay), end the sandbox, and write what they did
    (--inference-out)."""
    runs = plan.replayed if plan.replayed is not None else \
        collect_runs(plan.targets, options, plan.simulated, plan.adaptive, plan.budgets.agent)
    if plan.adaptive is not None:  # confirmation runs are kept apart: only they decide a drop
        runs = {key: plan.adaptive.first_runs(key, found) for key, found in runs.items()}
    if options.replay is not None:
        check_replayed_counts(options.replay, run_counts(runs), plan.rule)
    # Known secrets never reach a file: agent output, judge errors and server bodies are
    # outside text (checker/safety/redact.py). The one place: here, before anything is written.
    redactor = Redactor([*secret_values(os.environ), *secrets, *plan.simulated.credentials])
    if options.sandbox is not None:  # nothing of the agent's may run past this point
        options.sandbox.end()
    if options.inference_out:
        placed = [((t.key, c), r.model_copy(update={"eval_set_path": t.path}))
                  for t in plan.targets for c in t.case_ids
                  for r in sorted(runs.get((t.key, c), []), key=lambda r: r.run)]
        ordered = [r for _, r in placed]
        records = RecordedRuns(runs=ordered)
        if plan.shard is not None:
            from .scale.shards import recorded_runs_shard

            # the version too: the merge refuses recorded runs of another evalcheck's run
            records.metadata = {"evalcheckVersion": evalcheck_version(), "shard": recorded_runs_shard(
                plan.shard, plan.targets, [key for key, _ in placed])}
        write_records(options.inference_out, records, redactor, files)
    return Runs(by_case=runs, redactor=redactor)


def score(options: RunOptions, plan: Plan, runs: Runs, started: Started) -> Results:
    """Score every case's runs; the results, with what describes the run in their metadata."""
    adaptive = plan.adaptive
    results = aio.run(plan.context.scoring(
        score_all(plan.targets, runs.by_case, plan.context, plan.rule,
                  known=adaptive.scored if adaptive else None,
                  release_cases=True)))  # targets are not used after scoring
    if options.sandbox is not None:  # custom metrics ran as the agent's user: none lives on
        options.sandbox.settle()
    results.shard = plan.shard
    from .scoring.budget import leave_out

    leave_out(results, plan.budgets.agent, plan.budgets.judge)
    if plan.prices is not None:
        from .report.cost import apply_prices

        apply_prices(results, plan.prices)
    if plan.history is not None:  # each run's verdicts, which the results file does not hold
        from .report.adk_history import keep_verdicts

        keep_verdicts(plan.history, results)
    if plan.problems:
        results.file_errors = [FileError(path=p.file or "", error=str(p)) for p in plan.problems]
        results.passed = False
    if empty_shard(plan) is not None and not plan.problems:
        results.passed = True  # not "0 of 0 failed": an empty shard is no failure (docs/sharding.md)
    judge = plan.context.services["judge"]
    if judge.stats.used():
        results.metadata["judge"] = judge.metadata()
    if plan.simulated.used():
        results.metadata["userSimulator"] = plan.simulated.as_metadata()
    if plan.warnings:
        results.metadata["warnings"] = plan.warnings
    if adaptive is not None:
        results.metadata.update(adaptive.metadata())
    # Keys already there (e.g. "judge") win: this only adds what describes the run.
    results.metadata = {**run_metadata(options, runs.by_case, started.at, datetime.now(timezone.utc),
                                       time.monotonic() - started.clock), **results.metadata}
    return results


def compare_with_baseline(options: RunOptions, baselines: list[Results], plan: Plan,
                          results: Results) -> Results:
    """Each case against main's pooled runs (--baseline), decided on the confirmation runs
    when there were some; the results unchanged without a baseline."""
    if not baselines or plan.shard is not None:  # a shard's baseline only balances the split
        return results
    from .compare.command import compare_with_files

    from .compare.tokens import record_token_gate

    confirmation = plan.adaptive.confirmation if plan.adaptive is not None else None
    results = compare_with_files(options.baselines, results, alpha=options.alpha, baselines=baselines,
                                 confirmations=confirmation.confirmations()
                                 if confirmation is not None else None)
    record_token_gate(results, options.max_token_increase)
    from .report.trend import record_trend

    record_trend(results, baselines)
    return results


def write(options: RunOptions, plan: Plan, redactor: Redactor, results: Results,
          files: OutputFiles, runs: Mapping[RunKey, list[RecordedRun]] | None = None) -> Results:
    """Redact, write the report files (and --adk-eval-history, from ``runs``) and print the
    terminal lines; the results as written."""
    from .metrics.machinery.vertex import vertex_access_tokens

    judge = plan.context.services["judge"]
    redactor.add(*judge.credentials, *vertex_access_tokens(plan.context.services))
    results = redactor.model(results)
    write_reports(results, options, files)
    if options.html:
        write_html(options, results, redactor, runs or {}, files)
    if plan.history is not None and runs is not None:
        from .report.adk_history import write_eval_history

        for line in write_eval_history(plan.history, results, runs, redactor, files, options.confine):
            say(f"evalcheck: {clean(line)}", err=True)
    for line in failure_lines(results):
        say(clean(line))
    from .report.trend import trend_lines

    for line in trend_lines(results):  # the terminal's text for the comment's chart
        say(clean(line))
    empty = empty_shard(plan)
    if empty is not None:
        say(f"evalcheck: {empty}")
    if judge.stats.used():
        say(clean(judge.line()))
    if plan.simulated.used():
        say(clean(plan.simulated.line()))
    for line in plan.adaptive.lines() if plan.adaptive is not None else []:
        say(clean(line))
    retried = retries_line(results)
    if retried:
        say(retried)
    return results


def retries_line(results: Results) -> str | None:
    """How many runs errored and were run again (--retries), and how many came back."""
    runs = [r for s in results.eval_sets for c in s.cases for r in c.runs if r.retries]
    if not runs:
        return None
    recovered = sum(r.status != "error" for r in runs)
    return (f"retries: {len(runs)} run(s) errored and were run again; {recovered} then "
            f"succeeded, {len(runs) - recovered} still errored and count as failing runs")


def write_html(options: RunOptions, results: Results, redactor: Redactor,
               runs: Mapping[RunKey, list[RecordedRun]], files: OutputFiles) -> None:
    """The HTML report, with every run's turns (redacted: agent output is outside text)."""
    assert options.html is not None
    from .report.html import render_html
    from .report.trend import trend_html

    shown = {(key, case.eval_id): [redactor.model(r) for r in runs.get((key, case.eval_id), [])]
             for key, eval_set in zip(results.set_keys(), results.eval_sets) for case in eval_set.cases}
    files.write(options.html, render_html(results, shown, fail_on=options.fail_on,
                                          trend=trend_html(results)), "HTML report")


def extra_runs(options: RunOptions, targets: list[EvalTarget], rule: VerdictRule,
               context: ScoringContext, baselines: list[Results]) -> AdaptiveRuns | None:
    """The rounds after the first --num-runs: adaptive runs (--max-runs) and, with a
    baseline, confirmation runs of the cases that look worse (--confirm-runs)."""
    adaptive = options.max_runs is not None and options.max_runs > options.num_runs
    confirm = options.confirmation_runs() if baselines else 0
    if options.replay is not None:
        if adaptive:
            say("evalcheck: note: --max-runs is ignored in replay mode (nothing to run)", err=True)
        return None
    if not adaptive and not confirm:
        return None
    from .compare.adaptive import AdaptiveRuns
    from .compare.pooling import BaselinePool

    extra = AdaptiveRuns(targets, options.max_runs if adaptive else options.num_runs, rule, context,
                         pool=BaselinePool(baselines, ambiguous={t.eval_set_id for t in targets
                                                                 if t.key != t.eval_set_id})
                         if baselines else None, confirm_runs=confirm)
    extra.adaptive = adaptive
    return extra


def empty_shard(plan: Plan) -> str | None:
    """The line saying this shard holds no cases; None when not sharding or it holds some."""
    if plan.shard is None:
        return None
    from .scale.shards import empty_shard_line

    return empty_shard_line(plan.shard)


def collect_runs(targets: list[EvalTarget], options: RunOptions,
                 simulator_stats: SimulatorStats | None = None,
                 adaptive: AdaptiveRuns | None = None,
                 budget: TokenBudget | None = None) -> Mapping[RunKey, list[RecordedRun]]:
    if options.replay is not None:
        from .inputs.replay import index_replay

        return index_replay(options.replay, targets)
    from .agents.schedule import RunInterrupted, run_agent_jobs

    try:
        jobs = run_agent_jobs(targets, options, simulator_stats=simulator_stats,
                              more=adaptive.more if adaptive else None, budget=budget)
        if adaptive is not None:  # it scores in this event loop: close its judge clients here
            jobs = adaptive.context.scoring(jobs)
        runs = aio.run(jobs)
        # A limit bound to that event loop must not be reused by the scoring loop.
        if adaptive is not None:
            adaptive.context.services.pop("judge_semaphore", None)
    except (RunInterrupted, KeyboardInterrupt) as exc:
        # Ctrl-C: the agents are already killed; keep what finished, then stop (no scoring).
        finished = exc.finished if isinstance(exc, RunInterrupted) else []
        message = f"evalcheck: interrupted; {len(finished)} run(s) had finished"
        if options.inference_out and finished and write_records(
                options.inference_out, RecordedRuns(runs=finished), Redactor(secret_values(os.environ)),
                OutputFiles(report=say_error)):
            message += f", written to {options.inference_out}"
        say(message, err=True)
        raise SystemExit(130) from None
    grouped: dict[RunKey, list[RecordedRun]] = {}
    for run in runs:
        grouped.setdefault((run.key, run.eval_id), []).append(run)
    return grouped


def write_records(path: Path, records: RecordedRuns, redactor: Redactor,
                  files: OutputFiles | None = None) -> bool:
    """What the agents did, in the replay format, secrets redacted (agent output is outside
    text). Returns whether the file was written (a failure is reported by ``files``)."""
    records = redactor.model(records)
    return (files or OutputFiles()).write(path, records.model_dump_json(indent=2, exclude_none=True) + "\n",
                                          "recorded runs (inference-out)")


def build_context(options: RunOptions) -> ScoringContext:
    from .judges.service import JudgeService  # no SDK import: the client is built on first use

    from .judges.limits import JudgeLimits

    limits = JudgeLimits.from_env(os.environ)  # bad values are bad input, found before any run
    services = {"judge_concurrency": options.judge_concurrency, "judge_cache": options.judge_cache,
                "judge_limits": limits}
    # One judge service per run; its limit ("judge_semaphore") is shared with Vertex AI metrics.
    services["judge"] = JudgeService(concurrency=options.judge_concurrency,
                                     cache_dir=options.judge_cache, shared=services, limits=limits)
    return ScoringContext(services=services)


def _utc(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def run_metadata(options: RunOptions, runs: Mapping[RunKey, list[RecordedRun]], started: datetime,
                 finished: datetime, seconds: float) -> dict[str, Any]:
    """``Results.metadata`` of this run (extra information, CONTRACT section 4).

    In replay mode no agent ran: ``numRuns`` is the most runs recorded for a case and
    ``concurrency`` is null (nothing ran concurrently).
    """
    mode = "replay" if options.replay is not None else "api" if options.agent_url else "stdio"
    replayed = max(run_counts(runs), default=0)
    return {"evalcheckVersion": evalcheck_version(), "mode": mode,
            "numRuns": replayed if mode == "replay" else options.num_runs,
            "concurrency": None if mode == "replay" else options.concurrency,
            "startedAt": _utc(started), "finishedAt": _utc(finished),
            "durationSeconds": round(seconds, 3), "pythonVersion": platform.python_version()}


def run_outputs(options: RunOptions) -> list[Named]:
    return [("--results", options.results), ("--markdown", options.markdown),
            ("--junit", options.junit), ("--inference-out", options.inference_out),
            ("--html", options.html), *options.written_after]


def run_inputs(options: RunOptions, targets: Iterable[EvalTarget]) -> list[Named]:
    """The files a run reads, which its outputs must not overwrite."""
    # Not the baseline: it is read whole before anything is written (a baseline restored at
    # the results path, as actions/cache does, is then replaced by this run's results).
    named: list[Named] = [("the replay file (--replay)", options.replay),
                          ("the template (--template)", options.template),
                          ("the config file (--config)", options.config_file),
                          ("the initial session file (--initial-session)", options.initial_session),
                          ("the prices file (--prices)", options.prices)]
    criteria = {}
    for target in targets:
        named.append((f"the eval file {target.loaded.display_path}", target.loaded.path))
        if target.config.path is not None:  # one test_config.json may serve many eval files
            criteria[target.config.path] = f"the criteria file {target.config.display_path}"
    return named + [(what, path) for path, what in criteria.items()]


def check_run_counts(options: RunOptions, rule: VerdictRule) -> None:
    """--max-runs not below --num-runs; enough runs for a k-of-n:K rule to pass at all."""
    if options.max_runs is not None and options.max_runs < options.num_runs:
        raise InputError(f"--max-runs {options.max_runs} is below --num-runs {options.num_runs}",
                         fix="--max-runs counts all runs of a case, the first --num-runs included")
    most = max(options.num_runs, options.max_runs or 0)
    if options.replay is None and runs_needed(rule) > most:
        raise InputError(f"--verdict {rule} needs at least {runs_needed(rule)} runs, but a case "
                         f"gets at most {most}", fix="raise --num-runs (or --max-runs)")


def check_replayed_counts(replay: Path, counts: Iterable[int], rule: VerdictRule) -> None:
    """In replay the runs are what was recorded: a rule no case has the runs to pass is bad
    input (as --num-runs below K is live), not a suite of failures."""
    needed = runs_needed(rule)
    counts = list(counts)
    if needed > 1 and counts and max(counts) < needed:
        raise InputError(f"--verdict {rule} needs at least {needed} runs, but the replay file "
                         f"holds at most {max(counts)} for a case", file=str(replay),
                         fix=f"record at least {needed} runs a case, or use a rule they can meet "
                             f"(e.g. k-of-n:{max(counts)})")
    short = sum(1 for n in counts if n < needed)
    if short:
        say(f"evalcheck: warning: {short} case(s) have fewer than {needed} recorded runs and "
            f"cannot pass --verdict {rule}", err=True)


def read_baselines(options: RunOptions) -> list[Results]:
    if not options.baselines:
        return []
    from .compare.results_file import load_baselines

    skipped: list[Path] | None = [] if options.baselines_found else None
    files = load_baselines(list(options.baselines), skipped)
    if skipped:
        say(f"evalcheck: note: {len(skipped)} older result(s) of main evaluated other eval data "
            "for every shared case (another suite): not pooled", err=True)
        options.baselines = [p for p in options.baselines if p not in skipped]
    return files


MAX_RETRIES = 5


def check_comparison_options(options: RunOptions) -> None:
    """--alpha in (0, 0.5]; --confirm-runs capped like --num-runs; --retries 0 to 5."""
    if not 0 < options.alpha <= 0.5:
        raise InputError(f"alpha must be above 0 and at most 0.5, got {options.alpha}",
                         fix="the family-wise significance level, e.g. 0.05 (the default)")
    if options.confirm_runs:
        check_runs("confirm-runs", options.confirm_runs)
    if not 0 <= options.retries <= MAX_RETRIES:
        raise InputError(f"retries must be between 0 and {MAX_RETRIES}, got {options.retries}")
