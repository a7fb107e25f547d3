"""``evalcheck compare BASE.json HEAD.json``: label HEAD's cases against BASE, no agent run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..models.results import BaselineInfo, Results


@dataclass
class CompareRequest:
    baseline: Path
    head: Path
    results: Path | None = None
    markdown: Path | None = None
    junit: Path | None = None
    template: Path | None = None
    fail_on: str = "failure"
    alpha: float = 0.05


def compare_files(request: CompareRequest) -> bool:
    """Compare, write the reports asked for, print the summary; returns whether the gate
    passed. Raises InputError for a file that is not a results file."""
    from ..report.finish import report_gate, write_reports
    from ..options import RunOptions
    from ..safety.output import clean, say
    from ..report.terminal import failure_lines
    from ..report.writes import check_outputs
    from .comparison import compare
    from .results_file import load_suite_results

    check_outputs([("--results", request.results), ("--markdown", request.markdown), ("--junit", request.junit)],
                  [("the baseline (BASELINE)", request.baseline), ("the results file (HEAD)", request.head),
                   ("the template (--template)", request.template)])
    if request.template is not None:
        from ..report.markdown import check_template

        check_template(request.template)
    baseline = load_suite_results(request.baseline, "baseline")
    head = load_suite_results(request.head, "results file")
    results: Results = compare(baseline, head, alpha=request.alpha,
                               baseline_info=BaselineInfo(path=str(request.baseline)))
    write_reports(results, RunOptions(results=request.results, markdown=request.markdown,
                                      junit=request.junit, template=request.template))
    for line in failure_lines(results):
        say(clean(line))
    return report_gate(results, request.fail_on, with_baseline=True)
