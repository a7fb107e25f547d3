"""``evalcheck run``: read inputs -> plan -> run agents (or replay) -> score -> compare -> write.

``evaluate`` is the conductor: one call per stage, each taking and returning the typed data
of run_data.py (docs/architecture.md draws it)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from .. import aio
from ..compare.overrides import apply_overrides, read_overrides, say_overrides
from ..compare.results_file import BaselineOptions, read_baselines
from ..inputs.bulk import fewer_collections
from ..inputs.discover import discover, find_repo_root
from ..models.records import RecordedRun
from ..models.results import FileError, Interrupted, Results
from ..inputs.pr_files import replay_claim
from ..option_checks import (check_input_files, check_run_files, check_run_options,
                            tracked_cache_note)
from ..options import RunOptions
from ..report.finish import (raise_budget_errors, raise_file_errors, raise_judge_errors,
                            raise_refusal_errors, report_gate, say_run_lines, write_reports)
from ..report.writes import OutputFiles
from ..safety.output import clean, say
from ..safety.redact import Redactor, secret_values
from ..scoring.metadata import describe_run
from ..models.setkey import RunKey
from ..scoring.pipeline import run_counts, score_all
from ..scoring.services import build_context, start_metric_worker
from .run_data import Budgets, Inputs, Plan, Prepared, Runs, Started
from .stage_options import StageOptions, report_options
from ..judges.service import judge_service
from ..agents.service_wait import ServiceWaits


def execute(options: RunOptions, secrets: Iterable[str] = ()) -> bool:
    """Run the whole job; returns whether the gate (``options.fail_on``) passed. Raises
    InputError on bad input, and once everything else is done, if an output file could not
    be written. ``secrets``: values to redact on top of the environment's secret variables."""
    files = OutputFiles()
    results = evaluate(options, secrets, files)
    passed = report_gate(results, options.fail_on)
    if results.interrupted is not None:  # reported; the exit is the signal's (cli.py: 130, 143)
        from ..safety.interrupt import EXIT_SIGINT

        raise SystemExit(EXIT_SIGINT)
    files.check()
    raise_file_errors(results)
    raise_budget_errors(results)
    raise_judge_errors(results)
    raise_refusal_errors(results)
    return passed


@fewer_collections()  # bulk data: eval files, recorded runs (inputs/bulk.py)
def prepare(options: RunOptions) -> Prepared:
    """The reading stages: ``read_inputs`` and ``plan_runs``. The Action calls it before
    setup-command; ``evaluate`` when not given it."""
    started = Started.now()
    stages = StageOptions.of(options)
    inputs = read_inputs(options, stages)
    return Prepared(started, inputs, plan_runs(options, inputs, stages))


@fewer_collections()  # bulk data: runs, results (inputs/bulk.py)
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
    results = compare_with_baseline(options, inputs, plan, results)
    if inputs.claims:
        from ..compare.baseline_change import record_claims

        results = record_claims(results, inputs.claims)
    say_overrides(apply_overrides(results, inputs.overrides))
    return write(options, plan, runs.redactor, results, files, runs.by_case)


def read_inputs(options: RunOptions, stages: StageOptions) -> Inputs:
    """Check the options, read the baseline, find the eval files: all bad input, found before
    any agent runs."""
    rule = check_run_options(options)
    root = find_repo_root(Path.cwd())
    # bad input is found before any agent runs; a baseline file of the repository that the
    # change under test changed is read as its base commit has it (inputs/pr_files.py)
    read = read_baselines(BaselineOptions(tuple(options.baselines), options.base_ref, options.baselines_found), root)
    baselines, claims = read.files, read.claims
    check_input_files(options)
    claims += filter(None, [replay_claim(options.replay, root, options.base_ref)])
    notes: list[str] = []
    if options.confine is None:  # (under --confine a judge cache in the checkout is refused)
        notes += filter(None, [tracked_cache_note(options.judge_cache, root)])
    template = None
    if options.template is not None:  # in the sandbox, a copy the agent's user cannot write
        from ..report.markdown import template_for_run

        template = template_for_run(options.template, private=options.sandbox is not None)
    found = discover(options.paths, root=root, config_file=options.config_file,
                     initial_session=options.initial_session, confine=options.confine,
                     outline_only=options.shard is not None, thresholds=options.thresholds,
                     keep_going=True)  # eval files that cannot be read are problems: the others still run
    targets, problems = found.targets, found.problems
    notes += found.notes
    if options.agent_command:  # evalcheck-adk over a folder of agents: each eval set's agent
        from ..agents.adk_command import check_bridge_agents

        check_bridge_agents(options.agent_command, targets)
    from ..report.cost import default_table, read_prices

    prices = read_prices(options.prices) if options.prices is not None else default_table()
    inputs = Inputs(root=root, rule=rule, baselines=baselines, baseline_paths=read.paths, targets=targets, notes=notes,
                    problems=problems, prices=prices, claims=claims, template=template)
    if options.changed_since is not None or options.agent_paths:  # git read before PR code runs
        from ..scale.changed import read_changed
        from ..scale.depends import parse_agent_paths

        inputs.agent_paths = parse_agent_paths(options.agent_paths, root,
                                               "input 'agent-paths'" if options.changed_since_auto else "--agent-paths")
        inputs.changed, said = read_changed(stages.changed, root, bool(baselines))
        notes.extend(said)
    # git, before PR code; --base names the base branch whose quarantine applies, too (a base
    # commit the checkout lacks then applies none, said, as for the Action)
    inputs.overrides = read_overrides(options.quarantine_ref or options.base, options.accept, root, notes,
                                      auto=options.quarantine_auto or options.quarantine_ref is None)
    return inputs


def plan_runs(options: RunOptions, inputs: Inputs, stages: StageOptions) -> Plan:
    """This shard's cases, the outputs checked against the inputs, the warnings said, the
    scoring services and adaptive runs set up."""
    targets, shard, selection = inputs.targets, None, None
    # Before anything is written; the template as read (the Action's private copy), as ever.
    check_run_files(replace(options, template=inputs.template), targets)
    if inputs.changed is not None:  # --changed-since: the eval sets nothing changed are carried
        from ..scale.changed import select

        selection = select(targets, inputs.changed, options.changed_since or "", inputs.root,
                           inputs.baselines[0], str(inputs.rule), stages.changed, inputs.agent_paths)
        for line in selection.lines():
            say(clean(line), err=True)
        targets = selection.runs(targets)
    if options.shard is not None:  # outlined so far: load this shard's cases, only them
        from ..scale.shards import load_shard

        targets, shard = load_shard(targets, stages.shards, inputs.baselines[0] if inputs.baselines else None)
        if selection is not None:
            from ..scale.changed import shard_positions

            shard = shard_positions(shard, targets, selection)
    warnings = list(dict.fromkeys([*inputs.notes, *(w for t in inputs.targets for w in t.config.warnings)]))
    for warning in warnings:
        say(f"evalcheck: warning: {clean(warning)}", err=True)
    from ..simulation.model import SimulatorStats

    budgets = Budgets.of(options)
    context = build_context(stages.scoring, budgets.judge)
    replayed = None
    if options.replay is not None:
        from ..inputs.replay import index_replay

        replayed = index_replay(options.replay, targets)  # the selected runs' text, in memory
    sources = start_metric_worker(context, targets, inputs.root, options.sandbox)
    from ..compare.adaptive import extra_runs

    # A shard screens and confirms its own cases too; the merge decides (docs/sharding.md).
    adaptive = extra_runs(stages.adaptive, targets, inputs.rule, context, inputs.baselines, shard=shard is not None)
    history = None
    if options.adk_eval_history is not None:  # the eval sets as ADK reads them, before scoring
        from ..report.adk_history import plan_history

        history = plan_history(options.adk_eval_history, targets, options.app_name)
    return Plan(targets=targets, rule=inputs.rule, shard=shard, warnings=warnings, context=context,
                simulated=SimulatorStats(), adaptive=adaptive, stages=stages, replayed=replayed,
                metric_sources=sources, problems=inputs.problems, history=history,
                prices=inputs.prices, budgets=budgets, selection=selection,
                service=ServiceWaits(options.max_service_wait), template=inputs.template)


def run_cases(options: RunOptions, plan: Plan, secrets: Iterable[str], files: OutputFiles) -> Runs:
    """Run the agents (or read the replay), end the sandbox, and write what they did
    (--inference-out)."""
    concurrency, interrupted = None, None
    if plan.replayed is not None:
        runs = plan.replayed
    else:
        from ..agents.collect import RunsInterrupted, collect_runs

        adaptive = plan.adaptive
        try:
            collected = collect_runs(plan.targets, plan.stages.agents, plan.simulated,
                                     more=adaptive.more if adaptive is not None else None,
                                     scoring=adaptive.context if adaptive is not None else None,
                                     budget=plan.budgets.agent, service=plan.service)
            runs, concurrency = collected.by_case, collected.concurrency
        except RunsInterrupted as stopped:  # what finished is written, scored and reported, marked
            from ..safety.interrupt import signal_name

            from ..report.records import say_interrupted

            say_interrupted(options.inference_out, stopped.recorded, stopped.planned)
            runs, interrupted = stopped.runs, Interrupted(signal=signal_name(), runs_finished=stopped.finished,
                                                          runs_planned=stopped.planned)
    if plan.adaptive is not None:  # confirmation runs are kept apart: only they decide a drop
        runs = {key: plan.adaptive.first_runs(key, found) for key, found in runs.items()}
    if options.replay is not None:
        from ..inputs.replay import check_replayed_counts

        check_replayed_counts(options.replay, run_counts(runs), plan.rule)
    # Known secrets never reach a file: agent output, judge errors and server bodies are
    # outside text (checker/safety/redact.py). The one place: here, before anything is written.
    redactor = Redactor([*secret_values(os.environ), *secrets, *plan.simulated.credentials])
    if options.sandbox is not None:  # nothing of the agent's may run past this point
        options.sandbox.end()
    if options.inference_out and interrupted is None:  # (interrupted: written as it stopped)
        from ..report.records import write_inference_out

        write_inference_out(options.inference_out, plan.targets, runs, plan.shard, redactor, files)
    return Runs(by_case=runs, redactor=redactor, concurrency=concurrency, interrupted=interrupted)


def score(options: RunOptions, plan: Plan, runs: Runs, started: Started) -> Results:
    """Score every case's runs; the results, with what describes the run in their metadata."""
    adaptive = plan.adaptive
    results = aio.run(plan.context.scoring(
        score_all(plan.targets, runs.by_case, plan.context, plan.rule,
                  # (interrupted mid-round: a case's scores may predate its last runs)
                  known=adaptive.scored if adaptive and runs.interrupted is None else None,
                  release_cases=True)))  # targets are not used after scoring
    if plan.selection is not None:  # the carried eval sets in their places (in shard 1 only)
        from ..scale.changed import splice

        results = splice(results, plan.selection, keep_cases=plan.shard is None or plan.shard.index == 1)
    if options.sandbox is not None:  # custom metrics ran as the agent's user: none lives on
        options.sandbox.settle()
    results.shard = plan.shard
    from ..scoring.budget import leave_out

    leave_out(results, plan.budgets.agent, plan.budgets.judge)
    if runs.interrupted is not None:
        from ..scoring.interrupted import mark_interrupted

        mark_interrupted(results, options.num_runs, runs.interrupted)
    if plan.prices is not None:
        from ..report.cost import apply_prices

        apply_prices(results, plan.prices)
    if plan.history is not None:  # each run's verdicts, which the results file does not hold
        from ..report.adk_history import keep_verdicts

        keep_verdicts(plan.history, results)
    if plan.problems:
        results.file_errors = [FileError(path=p.file or "", error=str(p)) for p in plan.problems]
        results.passed = False
    if empty_shard(plan) is not None and not plan.problems:
        results.passed = True  # not "0 of 0 failed": an empty shard is no failure (docs/sharding.md)
    describe_run(results, plan.stages.metadata, runs.by_case, started_at=started.at, started_clock=started.clock,
                 judge=judge_service(plan.context), simulated=plan.simulated, warnings=plan.warnings,
                 adaptive=adaptive.metadata() if adaptive is not None else None, concurrency=runs.concurrency)
    if plan.selection is not None:
        results.metadata["changedSince"] = plan.selection.metadata()
    if plan.service is not None and plan.service.used():  # the model service's refusals
        results.metadata["modelService"] = plan.service.metadata()
    return results


def compare_with_baseline(options: RunOptions, inputs: Inputs, plan: Plan, results: Results) -> Results:
    """Each case against main's pooled runs (--baseline), decided on the confirmation runs
    when there were some; the results unchanged without a baseline."""
    baselines = inputs.baselines
    confirmation = plan.adaptive.confirmation if plan.adaptive is not None else None
    if plan.shard is not None and confirmation is not None:
        # A shard compares nothing (it cannot see the suite): it records its fresh runs and
        # what it screened them against, for the merge to decide on (docs/sharding.md).
        from ..compare.recorded import family_of, record_shard_confirmation

        return record_shard_confirmation(results, confirmation,
                                         family_of(baselines, options.alpha, confirmation.confirm_runs),
                                         results.set_keys())  # as discovery keyed the targets
    if not baselines or plan.shard is not None:  # a shard's baseline alone only balances the split
        return results
    from .compare import compare_run

    return compare_run(inputs.baseline_paths, results, baselines, alpha=options.alpha,
                       confirmations=confirmation.confirmations() if confirmation is not None else None,
                       contested_runs=confirmation.disagreement_runs() if confirmation is not None else None,
                       max_token_increase=options.max_token_increase)


def write(options: RunOptions, plan: Plan, redactor: Redactor, results: Results,
          files: OutputFiles, runs: Mapping[RunKey, list[RecordedRun]] | None = None) -> Results:
    """Redact, write the report files (and --adk-eval-history, from ``runs``) and print the
    terminal lines; the results as written."""
    from ..metrics.machinery.vertex import vertex_access_tokens

    judge = judge_service(plan.context)
    redactor.add(*judge.credentials, *vertex_access_tokens(plan.context.services))
    results = redactor.model(results)
    write_reports(results, report_options(options, plan.template), files, runs=runs, redactor=redactor)
    if plan.history is not None and runs is not None:
        from ..report.adk_history import write_eval_history

        for line in write_eval_history(plan.history, results, runs, redactor, files, options.confine):
            say(f"evalcheck: {clean(line)}", err=True)
    say_run_lines(results, plan_lines(plan))
    return results


def plan_lines(plan: Plan) -> list[str]:
    """The terminal lines of what the plan set up: an empty shard, the judge, the simulated
    users, the extra runs."""
    empty = empty_shard(plan)
    judge = judge_service(plan.context)
    return [*([f"evalcheck: {empty}"] if empty is not None else []),
            *([clean(judge.line())] if judge.stats.used() else []),
            *([clean(plan.simulated.line())] if plan.simulated.used() else []),
            *([clean(plan.service.line())] if plan.service is not None and plan.service.used()
              else []),
            *(clean(line) for line in (plan.adaptive.lines() if plan.adaptive is not None else []))]


def empty_shard(plan: Plan) -> str | None:
    """The line saying this shard holds no cases; None when not sharding or it holds some."""
    if plan.shard is None:
        return None
    from ..scale.shards import empty_shard_line

    return empty_shard_line(plan.shard)
