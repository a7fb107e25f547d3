"""How a command that produced results ends (run, compare, merge, the Action): the report
files written and the verdict printed. Shared here so that no command imports another's
module (``main`` is ``evalcheck run``'s)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError
from ..models.results import Results
from ..safety.output import clean, say
from .terminal import claim_lines, comparison_lines, failure_lines, retries_line, summary_line
from .writes import OutputFiles, say_error

if TYPE_CHECKING:
    from ..safety.redact import Redactor
    from .html import RunsByCase


@dataclass(frozen=True)
class ReportOptions:
    """The report files a command writes and how they read (built by checker/commands/)."""

    results: Path | None = None  # the results file
    markdown: Path | None = None
    junit: Path | None = None
    html: Path | None = None
    template: Path | None = None  # the markdown's template (the Action's private copy)
    fail_on: str = "failure"


def write_reports(results: Results, options: ReportOptions, files: OutputFiles | None = None, *,
                  runs: RunsByCase | None = None, redactor: Redactor | None = None) -> None:
    """Every report file asked for (run, compare and merge alike); one that cannot be written
    does not stop the others. Without ``files`` the failures raise InputError once all were
    tried. ``runs``: the recorded runs, whose turns the HTML report shows (redacted by
    ``redactor``; by the environment's secrets without one)."""
    out = files if files is not None else OutputFiles()
    if options.results:
        from .results_json import results_json

        out.write(options.results, results_json(results), "results file")
    if options.markdown:
        from .markdown import render_markdown

        out.write(options.markdown, render_markdown(results, template=options.template,
                                                      fail_on=options.fail_on), "markdown report")
    if options.junit:
        from .junit import render_junit

        out.write(options.junit, render_junit(results), "JUnit file")
    if options.html:
        import os

        from ..safety.redact import Redactor, secret_values
        from .html import write_html

        write_html(options.html, results, redactor or Redactor(secret_values(os.environ)),
                   runs or {}, out, fail_on=options.fail_on)
    if files is None:
        out.check()


def report_gate(results: Results, fail_on: str, *, timed: bool = True) -> bool:
    """Print the comparison's lines, the token gate's (--max-token-increase), the cases'
    counts and, last, the gate's decision (``gate_message``: always, every rule in one
    form); whether the job passes (the gate and the token gate). ``timed``: the counts say
    how long the run took (not for `compare`, which ran nothing)."""
    from ..compare.gate import gate_failed
    from ..compare.headline import gate_message
    from ..compare.tokens import token_gate_failed, token_gate_message

    for line in [*claim_lines(results), *comparison_lines(results)]:
        say(clean(line))
    if token_gate_message(results):
        say(clean(token_gate_message(results)))
    say(summary_line(results, timed=timed))
    say(clean(gate_message(results, fail_on)))
    return not gate_failed(results, fail_on) and not token_gate_failed(results)


def say_run_lines(results: Results, notes: Iterable[str]) -> None:
    """The terminal lines after the report files (run, compare, merge): the failures, the
    trend of main (the comment's chart as text), ``notes`` (said as given), the retries."""
    from .trend import trend_lines

    for line in failure_lines(results):
        say(clean(line))
    for line in trend_lines(results):  # the terminal's text for the comment's chart
        say(clean(line))
    for line in notes:
        say(line)
    retried = retries_line(results)
    if retried:
        say(retried)


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


def raise_budget_errors(results: Results) -> None:
    """A token budget that was spent: bad input (exit 2) naming it, once everything that
    did run was scored and reported."""
    spent = results.budgets or []
    if not spent:
        return
    from .cost import budget_line

    raise InputError("; ".join(budget_line(b) for b in spent),
                     fix="raise the budget, or select fewer cases or runs")


def judge_errors(results: Results) -> InputError | None:
    """What keeps the judges from giving the verdicts (exit 2, said once, after everything
    that could be scored was reported): credentials that are missing or were refused, or a
    judge service that kept refusing calls until the retries were spent and left metrics
    without a verdict. Never a low score, never the agent's regression."""
    judge = results.metadata.get("judge") if isinstance(results.metadata, dict) else None
    if not isinstance(judge, dict):
        return None
    setup = judge.get("setupError")
    errored = [(c, m) for s in results.eval_sets for c in s.cases for m in c.metrics
               if m.status == "error" and m.error and ("judge" in m.error.lower() or (
                   setup and str(setup) in m.error))]
    cases = len({id(c) for c, _ in errored})
    where = (f"{len(errored)} judge metric{'s' if len(errored) != 1 else ''} on {cases} "
             f"case{'s' if cases != 1 else ''} could not be scored")
    if setup:
        return InputError(f"the judge cannot be used: {setup}; {where}",
                          fix="set the judge's credentials in the environment evalcheck runs in "
                              "(in the Action, the step's env: from a secret), or name another "
                              "judge_model (docs/metrics.md)")
    refusals = judge.get("refusals") or {}
    if refusals.get("calls") and errored:
        codes = ", ".join(f"{code} x{n}" for code, n in sorted((refusals.get("codes") or {}).items()))
        calls = refusals["calls"]
        return InputError(
            f"the judge service refused {calls} judge call{'s' if calls != 1 else ''} until the "
            f"retries were spent ({codes}); {where}: no verdict on them, nothing counted "
            "against the agent",
            fix="run again once the judge's quota allows, or lower --judge-concurrency")
    return None


def raise_judge_errors(results: Results) -> None:
    problem = judge_errors(results)
    if problem is not None:
        raise problem


def raise_refusal_errors(results: Results) -> None:
    """Runs the model service kept refusing past --max-service-wait: exit 2 naming the
    refusals, once everything that did run was scored and reported (never exit 1: the agent
    did not fail them)."""
    from ..scoring.refusals import refused

    gap = refused(results)
    if gap is None:
        return
    raise InputError(gap.sentence(),
                     fix="run again once the model service answers, or raise --max-service-wait "
                         "(the Action's max-service-wait), lower --concurrency, or raise the "
                         "model's quota")


def results_from_file(path: Path) -> Results:
    """A results file this evalcheck wrote itself (the Action's own outputs)."""
    return Results.model_validate(json.loads(path.read_text(encoding="utf-8")))
