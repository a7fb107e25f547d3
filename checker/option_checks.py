"""The checks of one ``evalcheck run``'s options, all before any agent runs: counts and rules
(``check_run_options``), the files it reads (``check_input_files``) and the files it writes
against them (``check_run_files``). Bad input raises InputError (exit status 2)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from .models.verdict_rule import VerdictRule, parse_verdict_rule, runs_needed
from .errors import InputError
from .options import RunOptions
from .report.writes import Named, check_outputs
from .safety.confine import check_judge_cache_outside, confined, lies_inside
from .safety.limits import check_runs, check_turn_timeout

if TYPE_CHECKING:
    from .inputs.discover import EvalTarget

MAX_RETRIES = 5


def check_run_options(options: RunOptions) -> VerdictRule:
    """Run counts, the turn timeout, the comparison's options; the verdict rule they allow."""
    check_runs("num-runs", options.num_runs)
    check_turn_timeout(options.turn_timeout)
    if options.max_service_wait != 0:  # 0: a refused run is not run again
        check_turn_timeout(options.max_service_wait, "max-service-wait")
    if options.max_runs is not None:
        check_runs("max-runs", options.max_runs)
    check_comparison_options(options)
    rule = parse_verdict_rule(options.verdict)
    check_run_counts(options, rule)
    return rule


def check_comparison_options(options: RunOptions) -> None:
    """--alpha in (0, 0.5]; --confirm-runs capped like --num-runs; --retries 0 to 5."""
    if not 0 < options.alpha <= 0.5:
        raise InputError(f"alpha must be above 0 and at most 0.5, got {options.alpha}",
                         fix="the family-wise significance level, e.g. 0.05 (the default)")
    if options.confirm_runs:
        check_runs("confirm-runs", options.confirm_runs)
    if not 0 <= options.retries <= MAX_RETRIES:
        raise InputError(f"retries must be between 0 and {MAX_RETRIES}, got {options.retries}")


def check_run_counts(options: RunOptions, rule: VerdictRule) -> None:
    """--max-runs not below --num-runs; enough runs for a k-of-n:K rule to pass at all."""
    if options.max_runs is not None and options.max_runs < options.num_runs:
        raise InputError(f"--max-runs {options.max_runs} is below --num-runs {options.num_runs}",
                         fix="--max-runs counts all runs of a case, the first --num-runs included")
    most = max(options.num_runs, options.max_runs or 0)
    if options.replay is None and runs_needed(rule) > most:
        raise InputError(f"--verdict {rule} needs at least {runs_needed(rule)} runs, but a case "
                         f"gets at most {most}", fix="raise --num-runs (or --max-runs)")


def check_input_files(options: RunOptions) -> None:
    """The config file exists; no file the run reads leads out of the workspace."""
    if options.config_file is not None and not options.config_file.is_file():
        raise InputError("config file not found", file=str(options.config_file))
    check_judge_cache_outside(options.judge_cache, options.confine, "--judge-cache",
                              "keep the cache outside the checkout (e.g. ~/.cache/evalcheck-judge), "
                              "restored by your CI's cache")
    for what, path in (("the replay file", options.replay), ("the config file", options.config_file),
                       ("the template", options.template), ("the judge cache", options.judge_cache),
                       ("the initial session file", options.initial_session),
                       ("the prices file", options.prices)):
        if path is not None:
            confined(path, options.confine, what)


def tracked_cache_note(cache: Path | None, root: Path) -> str | None:
    """Plain ``evalcheck run``: a warning when git tracks entries of the judge cache (they are
    whoever committed them's answers); None when it tracks none or git cannot tell."""
    if cache is None or not lies_inside(cache, root) or not (root / ".git").exists():
        return None
    from .inputs.git_changes import tracked_files

    try:
        tracked = tracked_files(root, cache)
    except InputError:  # no git, or not a repository git reads: a warning is all this is
        return None
    if not tracked:
        return None
    return (f"--judge-cache {cache}: git tracks {len(tracked)} file(s) in it ({tracked[0]}"
            f"{', ...' if len(tracked) > 1 else ''}): committed answers are taken as the judge's "
            "verdicts, so in a pull request's checkout they are the change's claim; keep the "
            "cache out of the repository, or pass --confine . to refuse it")


def check_run_files(options: RunOptions, targets: Iterable[EvalTarget]) -> None:
    """No output overwrites an input or another output: before anything is written."""
    check_outputs(run_outputs(options), run_inputs(options, targets))


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
