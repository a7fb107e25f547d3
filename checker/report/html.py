"""The HTML report (``--html FILE``): one self-contained page a reviewer can browse.

No network: the style and the one small script are inline, and the page's
Content-Security-Policy allows nothing else (``default-src 'none'``; the script by its
hash). It shows the gate, the summary, tokens and cost, the trend of main, and every case (in the
comment's order: what needs attention first, report/view.py: attention_first):
status, change against the baseline, scores beside the baseline's, each run (status,
duration, tokens, error), the turns of each run recorded (when the run's recorded runs are
given: ``evalcheck run``), the evidence of each failing metric (tool calls with the first
divergence, texts, judge rationales). Filters: failing, regressed, flaky, all.

Every text from the agent, the eval files or the judges is escaped (report/html_parts.py).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..compare.comparison import suite_drops
from ..models.verdict_rule import rule_of
from ..models.records import RecordedRun
from ..safety.text import plural
from ..models.results import CaseResult, EvalSetResult, MetricResult, Results
from .changes import MAX_REMOVED
from .cost import case_tokens, usage_line
from .explain import explain, fmt_score
from .behaviour import behaviour_view
from .reliability import case_line, suite_k_of, suite_line
from .view import attention_first
from .html_parts import behaviour_html, esc, explanation, pre, run_turns, table, tag
from .scores import fmt_p
from .text import fmt_duration

if TYPE_CHECKING:
    from ..safety.redact import Redactor
    from .writes import OutputFiles

RunsByCase = Mapping[tuple[str, str], list[RecordedRun]]

STYLE = """
body{font:14px/1.5 system-ui,-apple-system,"Segoe UI","Noto Sans",sans-serif;color:#1f2328;
 max-width:1100px;margin:16px auto;padding:0 16px}
h1{font-size:1.5em;margin:.2em 0}.gate.failed{color:#b42318}.gate.passed{color:#1a7f37}
table{border-collapse:collapse;margin:6px 0 12px}th,td{border:1px solid #d1d9e0;padding:3px 8px;
 text-align:left;vertical-align:top}th{background:#f6f8fa}
pre{background:#f6f8fa;padding:8px;white-space:pre-wrap;word-break:break-word;margin:4px 0}
code{background:#eff1f3;padding:0 3px;border-radius:4px;word-break:break-word}
details.case{border:1px solid #d1d9e0;border-radius:6px;margin:6px 0;padding:4px 10px}
details.case>summary{cursor:pointer;font-weight:600}
.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;margin-left:6px;
 background:#eaeef2}.status-passed{background:#dafbe1}.status-failed,.status-error{background:#ffebe9}
.status-not_evaluated{background:#fff8c5}.change-regressed{background:#ffebe9}
.change-improved{background:#dafbe1}.change-carried{background:#eaeef2}.flaky{background:#fbefff}
.shifted{background:#fff1e5}
tr.divergence td{background:#ffebe9;font-weight:600}tr.differs td{background:#fff8f7}
del{background:#ffebe9;color:#82071e}ins{background:#dafbe1;color:#116329;text-decoration:none}
.sidebyside{display:grid;grid-template-columns:1fr 1fr;gap:8px}
.filters button{margin-right:6px;padding:3px 10px;border:1px solid #d1d9e0;border-radius:6px;
 background:#f6f8fa;cursor:pointer}.filters button[aria-pressed=true]{background:#0969da;color:#fff}
.note{color:#59636e}.error{background:#ffebe9}ol.turns>li{margin-bottom:8px}
blockquote{border-left:3px solid #d1d9e0;margin:4px 0;padding:0 10px;color:#424a53}
h5{font-size:14px;margin:12px 0 4px}h6{font-size:13px;font-weight:600;color:#424a53;margin:8px 0 2px}
.hidden{display:none}
"""

# The page's only script: the filter buttons. Allowed by its hash (Content-Security-Policy).
SCRIPT = """
document.querySelectorAll(".filters button").forEach(function (button) {
  button.addEventListener("click", function () {
    var want = button.getAttribute("data-filter");
    document.querySelectorAll(".filters button").forEach(function (b) {
      b.setAttribute("aria-pressed", b === button ? "true" : "false");
    });
    var shown = 0;
    document.querySelectorAll("details.case").forEach(function (c) {
      var show = want === "all" || c.getAttribute("data-" + want) === "1";
      c.classList.toggle("hidden", !show);
      if (show) { shown += 1; }
    });
    document.getElementById("shown").textContent = String(shown);
  });
});
"""

FILTERS = (("all", "All"), ("failing", "Failing"), ("regressed", "Regressed"), ("flaky", "Flaky"))


def _csp() -> str:
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    return f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'; img-src data:"


def _badge(text: str, cls: str) -> str:
    return tag("span", esc(text), f"badge {cls}")


def _metrics(case: CaseResult) -> str:
    compared = any(m.baseline_score is not None for m in case.metrics)
    confirmed = any(m.confirm_runs is not None for m in case.metrics)
    head = (["metric", "status", "score", "threshold", "per run"] + (["baseline", "change"] if compared else [])
            + (["confirmation runs"] if confirmed else []))
    rows = []
    for m in case.metrics:
        row = [tag("code", esc(m.name)), _badge(m.status, f"status-{m.status}"), fmt_score(m.score),
               fmt_score(m.threshold), esc(", ".join(fmt_score(s) if s is not None else "n/a" for s in m.runs))]
        if compared:
            row += [fmt_score(m.baseline_score),
                    "" if m.delta is None else f"{m.delta:+.2f}"
                    + (f" (p of the pass rate {fmt_p(m.p_value)})" if m.p_value is not None else "")]
        if confirmed:
            row.append(_confirmation(m))
        rows.append(row)
        if m.error:
            rows.append([tag("span", esc(m.error, 1000), "note")] + [""] * (len(head) - 1))
    return table(head, rows, "metrics")


def _confirmation(metric: MetricResult) -> str:
    """The fresh runs a screened metric's decision read: how many, how many passed, its budget."""
    fresh = metric.confirm_runs
    if fresh is None:
        return ""
    passed = sum(1 for s in fresh if s is not None and metric.threshold is not None and metric.meets(s))
    budget = f" (budget {metric.confirm_budget})" if metric.confirm_budget is not None else ""
    checked = metric.disagreement_runs
    check = ""
    if checked is not None and len(checked) > len(fresh):  # went on for the screening check alone
        agree = sum(1 for s in checked if s is not None and metric.threshold is not None and metric.meets(s))
        check = f"; the screening check read {len(checked)}, {agree} passed"
    return f"{plural(len(fresh), 'fresh run')}, {passed} passed{budget}{check}"


def _runs(case: CaseResult, recorded: list[RecordedRun]) -> str:
    by_number = {r.run: r for r in recorded}
    rows = []
    # A simulated user's column only for a case that had one (conversation_scenario).
    sides = ["agent", "judge", *(["simulator"] if any(r.usage and r.usage.simulator
                                                      for r in case.runs) else [])]
    for run in case.runs:
        usage = run.usage
        tokens = [f"{t.input:,} + {t.output:,}" if (t := getattr(usage, side, None)) else ""
                  for side in sides]
        rows.append([str(run.run), _badge(run.status, f"status-{run.status}"),
                     fmt_duration(run.duration_seconds) if run.duration_seconds is not None else "",
                     *tokens, esc(run.error or "", 1000)])
    names = {"agent": "agent", "judge": "judge", "simulator": "simulated user"}
    out = table(("run", "status", "duration", *(f"{names[s]} tokens in + out" for s in sides), "error"),
                rows, "runs")
    for run in case.runs:
        found = by_number.get(run.run)
        if found is not None:
            out += tag("details", tag("summary", f"Run {run.run}: {len(found.invocations)} turn"
                                                 f"{'' if len(found.invocations) == 1 else 's'}")
                       + run_turns(found), "run")
        elif run.stderr_tail:
            out += tag("details", tag("summary", f"Run {run.run}: agent log") + pre(run.stderr_tail, "log"))
    return out


def _case(eval_set: EvalSetResult, case: CaseResult, recorded: list[RecordedRun], rule: str,
          k: int | None = None) -> str:
    failing = case.status != "passed"
    flags = {"failing": failing, "regressed": case.change == "regressed", "flaky": case.flaky}
    summary = tag("code", esc(case.eval_id)) + _badge(case.status, f"status-{case.status}")
    if case.change:
        summary += _badge(case.change, f"change-{case.change}")
    if case.flaky:
        summary += _badge("flaky", "flaky")
    if case.behaviour is not None and case.behaviour.shift is not None and case.change != "regressed":
        summary += _badge("behaviour changed", "shifted")
    if case.quarantined is not None:  # the base branch's quarantine file: reported, not gating
        summary += _badge("quarantined", "quarantined")
    tokens = case_tokens(case.usage)
    if tokens:
        summary += tag("span", " " + esc(tokens), "note")
    body = [tag("p", f"{esc(eval_set.path)}:{case.line}", "note"), _metrics(case)]
    runs = case_line(case, k)
    if runs:
        body.insert(1, tag("p", "Reliability: " + esc(runs), "reliability"))
    shown = behaviour_view(eval_set.eval_set_id, case)  # everything: a page has no size budget
    if shown is not None:
        body.append(tag("h4", f"Behaviour against main: {esc(shown.headline)}") + behaviour_html(shown))
    if case.change == "carried":  # --changed-since: main's results, not this run's
        body.insert(1, tag("p", "Carried from main, not re-run: nothing it depends on changed. "
                                "Status, scores and runs are main's.", "note"))
    if case.quarantined is not None:
        q = case.quarantined
        body.insert(1, tag("p", f"Quarantined until {esc(q.expires)} by the base branch's quarantine "
                                f"file ({esc(q.owner)}: {esc(q.reason)}): reported, not gating.", "note"))
    change = case.token_change or {}
    if change:
        percent = change.get("percent")
        body.append(tag("p", f"Agent tokens per run: {change.get('baseline'):,} on main, "
                             f"{change.get('here'):,} here"
                             + (f" ({percent:+g}%)" if isinstance(percent, (int, float)) else ""), "tokens"))
    if failing:
        explanations, hidden = explain(case, rule_of(rule))
        if explanations:
            body.append(tag("h4", "Why it did not pass") + "".join(explanation(e) for e in explanations))
        if hidden:
            body.append(tag("p", f"{hidden} more failing turns not shown.", "note"))
    body.append(tag("h4", "Runs") + _runs(case, recorded))
    attrs = {f"data_{k}": "1" if v else "0" for k, v in flags.items()}
    if failing:  # what needs a look is open on arrival
        attrs["open"] = ""
    return tag("details", tag("summary", summary) + "".join(body), "case", **attrs)


def _summary(results: Results, fail_on: str) -> str:
    from ..compare.headline import headline
    from ..compare.tokens import token_gate_message

    decided = headline(results, fail_on)
    s = results.summary
    parts = [tag("h1", esc(decided.sentence), f"gate {'passed' if decided.passed else 'failed'}")]
    if decided.lines:  # the rest, short lines under the one sentence
        parts.append(tag("ul", "".join(tag("li", esc(line)) for line in decided.lines), "headline"))
    parts.append(tag("p", f"{s.passed} of {plural(s.cases, 'eval case')} passed in "
                          f"{plural(s.eval_sets, 'eval set')} \u00b7 {s.failed} failed \u00b7 {s.errored} "
                          f"errored \u00b7 {s.not_evaluated} not evaluated"
                          + (f" \u00b7 {s.carried} carried from main (not re-run)" if s.carried else ""),
                     "summary"))
    if suite_line(results):
        parts.append(tag("p", esc(suite_line(results)), "reliability"))
    if results.comparison is not None:
        c = results.comparison.summary
        parts.append(tag("p", f"Against the baseline: {c.regressed} regressed, {c.improved} improved, "
                              f"{c.unchanged} unchanged, {c.new} new, {c.changed} changed, {c.removed} removed"
                              + (f", {c.carried} carried from main" if c.carried else "")
                              + (f", {c.outside} outside this run" if c.outside else "")))
        removed = results.comparison.removed
        if removed:  # what "removed" counts, named (as the markdown and the terminal do)
            shown = ", ".join(esc(f"{r.eval_set_id} / {r.eval_id}") for r in removed[:MAX_REMOVED])
            more = len(removed) - MAX_REMOVED
            parts.append(tag("p", f"Removed since the baseline ({len(removed)}): {shown}"
                                  + (f" and {more} more" if more > 0 else "") + ".", "removed"))
        for drop in suite_drops(results.comparison):  # a plain line: the headline says it where it gates
            parts.append(tag("p", esc(f"The suite's mean fell: {drop}, over the cases compared on both sides"
                                      + ("" if fail_on == "drop" else " (gates only under fail-on drop)")),
                             "suite-drop"))
        if token_gate_message(results):
            parts.append(tag("p", esc(token_gate_message(results)), "tokens"))
    line = usage_line(results)
    if line:
        parts.append(tag("p", esc(line), "usage"))
    if results.interrupted is not None:
        stopped = results.interrupted
        parts.append(tag("p", f"Interrupted by {esc(stopped.signal)}: {stopped.runs_finished} of "
                              f"{stopped.runs_planned} runs finished and are scored here; the runs that did not "
                              "finish are not evaluated, and so is each case they leave without a verdict. "
                              "A run that did not end never passes the gate.", "error interrupted"))
    for budget in results.budgets or []:
        from .cost import budget_line

        parts.append(tag("p", esc(budget_line(budget)), "error"))
    from ..scoring.refusals import refused, service_note

    gap, note = refused(results), service_note(results)
    if gap is not None:  # the model service's refusals left runs out: no verdict on their cases
        parts.append(tag("p", esc(gap.sentence() + ": those runs are left out, never counted as "
                                  "failing runs (exit status 2)"), "error"))
    if note is not None:
        parts.append(tag("p", esc(note), "note"))
    for error in results.file_errors or []:
        parts.append(tag("p", esc(error.error), "error"))
    return "".join(parts)


def _footer(results: Results, fail_on: str) -> str:
    """What the comment's footer says: evalcheck, the run's time, the verdict rule and the
    gate's, the baseline, how regressions were decided (alpha, method, results of main
    pooled), the judges and what they cost; then the settings read but not acted on."""
    from .changes import build_changes
    from .view import build_footer, familywise_line

    f = build_footer(results)
    baseline = build_changes(results).baseline if results.comparison is not None else None
    said = [f"evalcheck {f.version}".strip(), f.duration, f"verdict rule {results.verdict_rule}",
            f"fail-on {fail_on}", f"baseline {baseline}" if baseline is not None else "",
            familywise_line(results), ("judged by " + ", ".join(f.judges)) if f.judges else "",
            (f"{plural(f.judge_calls, 'judge call')}, {plural(f.judge_cached, 'cached answer')}"
             if f.judge_calls is not None else ""), f.usage, f.tokens]
    out = tag("p", esc(" \u00b7 ".join(x for x in said if x)), "note footer")
    if f.warnings:
        out += tag("ul", "".join(tag("li", esc(w)) for w in f.warnings), "warnings")
    return out


def render_html(results: Results, runs: RunsByCase | None = None, *, fail_on: str = "failure",
                trend: str = "") -> str:
    """The page. ``runs``: the recorded runs by (eval set key, eval id), to show each run's
    turns; ``trend``: markup of the trend of main (report/trend.py), already escaped."""
    runs = runs or {}
    counts = {"all": 0, "failing": 0, "regressed": 0, "flaky": 0}
    sections = []
    k = suite_k_of(results)
    keys = results.set_keys()
    for index, order in attention_first(results):  # what needs a look first, as the markdown
        key, eval_set = keys[index], results.eval_sets[index]
        cases = []
        for case in (eval_set.cases[j] for j in order):
            counts["all"] += 1
            counts["failing"] += case.status != "passed"
            counts["regressed"] += case.change == "regressed"
            counts["flaky"] += bool(case.flaky)
            cases.append(_case(eval_set, case, runs.get((key, case.eval_id), []), results.verdict_rule, k))
        criteria = esc(eval_set.config_path or "ADK's default criteria")
        sections.append(tag("section", tag("h2", esc(eval_set.eval_set_id)) + tag(
            "p", f"{esc(eval_set.path)} \u00b7 criteria: {criteria}", "note") + "".join(cases)))
    buttons = "".join(tag("button", f"{label} ({counts[name]})", type="button", data_filter=name,
                          aria_pressed="true" if name == "all" else "false") for name, label in FILTERS)
    filters = tag("div", buttons + tag("span", f" showing <span id=\"shown\">{counts['all']}</span> cases",
                                       "note"), "filters")
    footer = _footer(results, fail_on)
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{_csp()}\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<title>evalcheck report</title>"
            f"<style>{STYLE}</style></head><body>"
            + _summary(results, fail_on) + trend + filters + "".join(sections) + footer
            + f"<script>{SCRIPT}</script></body></html>\n")


def write_html(path: Path, results: Results, redactor: Redactor, runs: RunsByCase,
               files: OutputFiles, *, fail_on: str) -> None:
    """The HTML report, with every run's turns (redacted: agent output is outside text)."""
    from .trend import trend_html

    shown = {(key, case.eval_id): [redactor.model(r) for r in runs.get((key, case.eval_id), [])]
             for key, eval_set in zip(results.set_keys(), results.eval_sets, strict=False) for case in eval_set.cases}
    files.write(path, render_html(results, shown, fail_on=fail_on, trend=trend_html(results)),
                "HTML report")
