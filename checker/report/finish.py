"""How a command that produced results ends (run, compare, merge, the Action): the report
files written and the verdict printed. Shared here so that no command imports another's
module (``main`` is ``evalcheck run``'s)."""

from __future__ import annotations

import json
from pathlib import Path

from ..models.results import Results
from ..options import RunOptions
from ..safety.output import clean, say
from .terminal import comparison_lines, summary_line
from .writes import OutputFiles


def write_reports(results: Results, options: RunOptions, files: OutputFiles | None = None) -> None:
    """Every report file asked for; one that cannot be written does not stop the others.
    Without ``files`` the failures raise InputError once all were tried."""
    out = files if files is not None else OutputFiles()
    if options.results:
        out.write(options.results, results.model_dump_json(indent=2) + "\n", "results file")
    if options.markdown:
        from .markdown import render_markdown

        out.write(options.markdown, render_markdown(results, template=options.template,
                                                      fail_on=options.fail_on), "markdown report")
    if options.junit:
        from .junit import render_junit

        out.write(options.junit, render_junit(results), "JUnit file")
    if files is None:
        out.check()


def report_gate(results: Results, fail_on: str, *, with_baseline: bool, timed: bool = True) -> bool:
    """Print the comparison and the gate's lines; whether the gate passed. ``timed``: the
    summary line says how long the run took (not for `compare`, which ran nothing)."""
    from ..compare.gate import gate_failed, gate_message

    for line in comparison_lines(results):
        say(clean(line))
    say(summary_line(results, timed=timed))
    if fail_on != "failure" or with_baseline:
        say(gate_message(results, fail_on))
    return not gate_failed(results, fail_on)


def results_from_file(path: Path) -> Results:
    """A results file this evalcheck wrote itself (the Action's own outputs)."""
    return Results.model_validate(json.loads(path.read_text(encoding="utf-8")))
