"""``evalcheck compare BASE.json HEAD.json``: label HEAD's cases against BASE, no agent run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click

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
    from ..main import write_reports
    from ..options import RunOptions
    from ..report.terminal import comparison_lines, failure_lines, summary_line
    from ..report.text import log_safe
    from .comparison import compare
    from .gate import gate_failed, gate_message
    from .results_file import load_results_file

    baseline = load_results_file(request.baseline, "baseline")
    head = load_results_file(request.head, "results file")
    results: Results = compare(baseline, head, alpha=request.alpha,
                               baseline_info=BaselineInfo(path=str(request.baseline)))
    write_reports(results, RunOptions(results=request.results, markdown=request.markdown,
                                      junit=request.junit, template=request.template))
    for line in failure_lines(results) + comparison_lines(results):
        click.echo(log_safe(line))
    click.echo(summary_line(results))
    click.echo(gate_message(results, request.fail_on))
    return not gate_failed(results, request.fail_on)
