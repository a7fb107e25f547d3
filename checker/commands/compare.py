"""``evalcheck compare BASE.json HEAD.json``: label HEAD's cases against BASE, no agent run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..models.results import BaselineInfo, Results
from ..compare.overrides import AcceptLabel, Overrides, apply_overrides, read_overrides, say_overrides


@dataclass
class CompareRequest:
    baselines: list[Path]  # newest first
    head: Path
    results: Path | None = None
    markdown: Path | None = None
    junit: Path | None = None
    template: Path | None = None
    html: Path | None = None
    fail_on: str = "failure"
    alpha: float = 0.05
    max_token_increase: float | None = None
    quarantine_ref: str | None = None  # .evalcheck/quarantine.yml of the commit it names
    accept: AcceptLabel | None = None  # --accept-label, as the pull request's timeline shows it
    # --base (in a pull-request job: its base commit): a BASELINE file git tracks is read as
    # the base has it, and its quarantine applies when --quarantine-ref is not given
    base: str | None = None


def compare_with_files(paths: list[Path], head: Results, *, alpha: float,
                       confirmations=None, baselines: list[Results] | None = None,
                       contested_runs=None) -> Results:
    """``head`` compared with the baseline files at ``paths`` (newest first; ``baselines``:
    the same files already read), each named in the results by its path."""
    from ..inputs.discover import report_path
    from ..compare.comparison import compare
    from ..compare.results_file import load_baselines

    from ..compare.tokens import add_token_changes

    files = baselines if baselines is not None else load_baselines(list(paths))
    return add_token_changes(files, compare(files, head, alpha=alpha, confirmations=confirmations,
                                            baseline_info=[BaselineInfo(path=report_path(p)) for p in paths],
                                            contested_runs=contested_runs))


def compare_run(paths: list[Path], results: Results, baselines: list[Results] | None = None, *,
                alpha: float, confirmations=None, max_token_increase: float | None = None,
                contested_runs=None) -> Results:
    """The compare stage of run, compare and merge: each case against main's pooled runs
    (decided on the confirmation runs when given), the token gate (--max-token-increase), the
    trend of main. ``baselines``: the files at ``paths``, when already read."""
    from ..compare.results_file import load_baselines

    baselines = baselines if baselines is not None else load_baselines(list(paths))
    from ..report.trend import record_trend
    from ..compare.tokens import record_token_gate

    results = compare_with_files(paths, results, alpha=alpha, baselines=baselines,
                                 confirmations=confirmations, contested_runs=contested_runs)
    record_token_gate(results, max_token_increase)
    record_trend(results, baselines)
    return results


def command_overrides(quarantine_ref: str | None, accept: AcceptLabel | None, *,
                      auto: bool = False) -> Overrides | None:
    """The overrides of ``compare`` and ``merge`` (--quarantine-ref, --accept-label; the
    Action's merge job: ``auto``), read first: bad input is found before the work; the notes
    said."""
    from ..inputs.discover import find_repo_root
    from ..safety.output import clean, say

    notes: list[str] = []
    overrides = read_overrides(quarantine_ref, accept, find_repo_root(Path.cwd()), notes, auto=auto)
    for note in notes:
        say(f"evalcheck: warning: {clean(note)}", err=True)
    return overrides


def compare_files(request: CompareRequest) -> bool:
    """Compare, write the reports asked for, print the summary; returns whether the gates
    (--fail-on, --max-token-increase) passed. Raises InputError for a file that is not a
    results file."""
    from ..report.finish import ReportOptions, report_gate, say_run_lines, write_reports
    from ..report.writes import check_outputs
    from ..compare.results_file import load_suite_results

    check_outputs([("--results", request.results), ("--markdown", request.markdown), ("--junit", request.junit),
                   ("--html", request.html)],
                  [*(("the baseline (BASELINE)", path) for path in request.baselines),
                   ("the results file (HEAD)", request.head), ("the template (--template)", request.template)])
    if request.template is not None:
        from ..report.markdown import check_template

        check_template(request.template)
    from ..compare.results_file import load_baselines

    overrides = command_overrides(request.quarantine_ref or request.base, request.accept,
                                  auto=request.quarantine_ref is None)
    from ..errors import InputError

    claims: list = []
    if request.base is not None:  # a baseline file of the repository the change rewrote: the base's
        from ..inputs.discover import find_repo_root
        from ..compare.results_file import BaselineOptions, read_baselines

        read = read_baselines(BaselineOptions(tuple(request.baselines), request.base), find_repo_root(Path.cwd()))
        baselines, claims, paths = read.files, read.claims, read.paths
    else:
        baselines, paths = load_baselines(list(request.baselines)), list(request.baselines)
    head = load_suite_results(request.head, "results file")
    if not baselines:
        raise InputError("no BASELINE left to compare with: " + "; ".join(c.said for c in claims),
                         fix="compare with a results file of the base branch")
    # The run's confirmation runs decide again when they can (docs/comparing.md, step 4).
    from ..compare.recorded import check_screened, recorded_keys, reuse_recorded

    reuse = reuse_recorded(head, baselines, request.alpha)
    recorded = reuse.recorded
    results = compare_run(paths, head, baselines, alpha=request.alpha,
                          confirmations=recorded.confirmations if recorded is not None else None,
                          contested_runs=recorded.contested if recorded is not None else None,
                          max_token_increase=request.max_token_increase)
    if recorded is not None:
        check_screened(results, recorded, recorded_keys(results, baselines), str(request.head),
                       "the results file")
    elif reuse.runs and results.comparison is not None and results.comparison.familywise is not None:
        results.comparison.familywise["withoutFreshRuns"] = {"runs": reuse.runs, "why": reuse.why}
    if claims:
        from ..compare.baseline_change import record_claims

        results = record_claims(results, claims)
    say_overrides(apply_overrides(results, overrides))
    write_reports(results, ReportOptions(results=request.results, markdown=request.markdown,
                                         junit=request.junit, template=request.template,
                                         html=request.html, fail_on=request.fail_on))
    from ..compare.confirm import confirmation_line

    # The run's fresh runs, when they decided again.
    say_run_lines(results, filter(None, [confirmation_line(results.metadata) if recorded is not None else None]))
    passed = report_gate(results, request.fail_on, timed=False)
    from ..report.finish import raise_refusal_errors

    raise_refusal_errors(results)  # runs the model service kept refusing: exit 2, as the run's
    return passed
