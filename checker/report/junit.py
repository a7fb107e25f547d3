"""JUnit XML: one testcase per eval case, grouped in one testsuite per eval set."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ..safety.logtext import escape_char
from ..models.results import CaseResult, Results
from ..compare.verdict import baseline_pass_counts, case_pass_counts
from ..models.verdict_rule import rule_of
from ..scoring.case import NOT_FINISHED
from ..scoring.refusals import no_verdict
from .scores import fmt_score as fmt, not_evaluated, shortfall
from .terminal import case_labels, judge_lines


# What XML 1.0 cannot carry, not even as a character reference: most control characters,
# surrogates, U+FFFE and U+FFFF (its Char production).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _clean(text: str) -> str:
    """Valid XML text: each character XML cannot carry shown as an escape (``\\x1b``,
    ``\\uffff``), as evalcheck's log lines show it, so that distinct ids stay distinct."""
    return _NOT_XML.sub(lambda m: escape_char(m.group()), text)


def _clean_tree(root: ET.Element) -> None:
    """Every attribute and text made valid: ids, file paths and messages come from eval
    files, file names and agents, and one bad character makes the whole file unreadable."""
    for element in root.iter():
        for name, value in list(element.attrib.items()):
            element.set(name, _clean(value))
        if element.text:
            element.text = _clean(element.text)


def _error_message(case: CaseResult) -> str:
    """Whose fault the error is: the agent's runs, or a metric (judge) that could not score."""
    parts = []
    runs = [str(r.run) for r in case.runs if r.status == "error"]
    if runs:
        parts.append(f"agent run{'s' if len(runs) > 1 else ''} {', '.join(runs)} errored")
    metrics = [m.name for m in case.metrics if m.status == "error"]
    if metrics:
        parts.append("metric error: " + ", ".join(metrics))
    return "; ".join(parts) or "error"


def _properties(testcase: ET.Element, case: CaseResult) -> None:
    """The comparison label and flakiness as testcase properties (readers show or ignore them)."""
    values: list[tuple[str, str]] = []
    if case.change:
        values.append(("change", case.change))
    if case.flaky:
        counts, before = case_pass_counts(case), baseline_pass_counts(case)
        values.append(("flaky", f"{counts} runs passed (95% CI {counts.low:.2f}-{counts.high:.2f})"
                       + (f"; baseline {before} (95% CI {before.low:.2f}-{before.high:.2f})"
                          if before is not None else "")))
    if not values:
        return
    properties = ET.SubElement(testcase, "properties")
    for name, value in values:
        ET.SubElement(properties, "property", name=name, value=value)


CARRIED = "carried from main: "
CARRIED_PASSED = CARRIED + "passed on main, not re-run (nothing it depends on changed)"


def _skipped(case: CaseResult) -> bool:
    """Not evaluated, or carried from main as passed (--changed-since): a JUnit reader must
    not count a case this pull request did not run as passed in it."""
    return case.status == "not_evaluated" or (case.change == "carried" and case.status == "passed")


def _no_verdict(case: CaseResult) -> str:
    """Why a case is not evaluated: the model service's refusals, an interrupted run ("interrupted
    before 2 of its 3 runs finished (SIGTERM)"), or no gating metric scored."""
    stopped = [r for r in case.runs if r.status == "not_evaluated" and (r.error or "").startswith(NOT_FINISHED)]
    if stopped and not no_verdict(case):
        signal = (stopped[0].error or "").removeprefix(NOT_FINISHED).strip()
        return f"interrupted before {len(stopped)} of its {len(case.runs)} runs finished {signal}".rstrip()
    return no_verdict(case) or "no gating metric could be scored"


def _root(results: Results) -> ET.Element:
    root = ET.Element("testsuites", name="evalcheck", tests=str(results.summary.cases),
                      failures=str(results.summary.failed), errors=str(results.summary.errored),
                      skipped=str(sum(_skipped(c) for s in results.eval_sets for c in s.cases)))
    if results.interrupted is not None:  # SIGTERM or Ctrl-C: what finished, never a pass
        stopped = results.interrupted
        ET.SubElement(ET.SubElement(root, "properties"), "property", name="interrupted",
                      value=f"{stopped} ({stopped.signal})")
    return root


def render_junit(results: Results) -> str:
    rule = rule_of(results.verdict_rule)
    root = _root(results)
    for eval_set in results.eval_sets:
        suite = ET.SubElement(root, "testsuite", name=eval_set.eval_set_id, file=eval_set.path,
                              tests=str(len(eval_set.cases)),
                              failures=str(sum(c.status == "failed" for c in eval_set.cases)),
                              errors=str(sum(c.status == "error" for c in eval_set.cases)),
                              skipped=str(sum(_skipped(c) for c in eval_set.cases)))
        for case in eval_set.cases:
            carried = case.change == "carried"
            # A carried case did not run here: main's run time would be counted in this PR's.
            durations = [r.duration_seconds for r in case.runs if r.duration_seconds is not None]
            tc = ET.SubElement(suite, "testcase", classname=eval_set.eval_set_id, name=case.eval_id,
                               file=eval_set.path, line=str(case.line),
                               time="0" if carried else f"{sum(durations):.3f}")
            labels = case_labels(case)
            _properties(tc, case)
            lines = [f"labels: {', '.join(labels)}"] if labels else []
            for metric in case.metrics:
                against = ""
                if metric.baseline_score is not None:
                    against = f"; baseline {fmt(metric.baseline_score)}, delta {metric.delta:+.2f}" \
                        if metric.delta is not None else f"; baseline {fmt(metric.baseline_score)}"
                    if metric.p_value is not None:
                        against += f", p of the pass rate {metric.p_value:.3g}"
                lines.append(f"{metric.name}: {fmt(metric.score)} (threshold {fmt(metric.threshold)}, "
                             f"{metric.status}; runs {[fmt(s) for s in metric.runs]}{against})")
                if metric.status == "error" and metric.error:
                    lines.append(f"{metric.name} error: {metric.error}")
                if metric.status in ("failed", "error"):
                    lines += judge_lines(metric)
            for run in case.runs:
                if run.error:
                    lines.append(f"agent run {run.run} error: {run.error}")
                    if run.stderr_tail:
                        lines.append(f"stderr tail:\n{run.stderr_tail}")
            body = "\n".join(lines)
            failed = [f"{m.name} {shortfall(m, rule)}" for m in case.metrics if m.status == "failed"]
            failed += [f"{m.name} {not_evaluated(m)}" for m in case.metrics if m.status == "not_evaluated"]
            # A carried failure stays a failure (the gate counts it), said first to be main's.
            shown = [label for label in labels if label != "carried from main"]
            tag = (CARRIED if carried else "") + (f"[{', '.join(shown)}] " if shown else "")
            if carried and case.status == "passed":
                ET.SubElement(tc, "skipped", message=CARRIED_PASSED).text = body
            elif case.status == "failed":
                ET.SubElement(tc, "failure", message=tag + "failed: " + ", ".join(failed),
                              type="threshold").text = body
            elif case.status == "error":
                ET.SubElement(tc, "error", message=tag + _error_message(case),
                              type="error").text = body
            elif case.status == "not_evaluated":
                ET.SubElement(tc, "skipped", message=(CARRIED if carried else "") + _no_verdict(case)).text = body
            else:
                ET.SubElement(tc, "system-out").text = body
    _clean_tree(root)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
