"""The gate: whether a results file fails the job, per ``fail-on`` (CLI and Action alike).

- ``failure``: any case did not pass (a metric failed, a run or metric errored, nothing
  could be scored).
- ``regression``: a case regressed against the baseline (decided for the whole suite at the
  family-wise alpha, docs/comparing.md), its fresh confirmation runs contradict a drop every
  screening run showed (compare/disagreement.py), a new or changed case does not pass, or a
  metric could not be computed (a judge or custom metric errored: nothing can be said). A run of
  the agent that errored (after its retries) is a failing run in the comparison, not a
  gate failure by itself. Without a comparison it is ``failure`` (and says so); a shard's
  results, compared only once merged (``merge --baseline``), fail it only when a metric
  errored.
- ``drop``: ``regression``, and also when a gating metric's suite mean-delta interval lies
  wholly below 0 (many cases each within noise, together worse for sure).
- ``error``: a run or metric errored, or nothing could be scored.
- ``never``: advisory, never fails.

Overrides (compare/overrides.py, docs/quarantine.md): a case the base branch's quarantine
file quarantines never gates, under any rule; a regression (and a suite drop) accepted by
the pull request's accept label does not fail ``regression`` or ``drop``.
"""

from __future__ import annotations

from collections import Counter

from ..models.results import CaseResult, Results
from ..safety.text import plural
from ..safety.output import clean
from .comparison import SuiteShift, suite_drops
from .failing import fresh_runs, failing_parts, sort_failing
from .overrides import override_parts
from ..scoring.refusals import refused, refused_case

FAIL_ON = ("failure", "regression", "drop", "error", "never")
SCREENING_DISAGREES = "whose screening and confirmation disagree"
COMPARING = ("regression", "drop")


def gating_cases(results: Results) -> list[CaseResult]:
    """Every case but the quarantined ones (they run and are reported, and never gate)."""
    return [c for es in results.eval_sets for c in es.cases if c.quarantined is None]


def accepted_keys(results: Results) -> set[tuple[str, str]]:
    """(eval set id, eval id) of the regressions the accept label accepted."""
    accepted = results.comparison.accepted if results.comparison is not None else None
    return {(ref.eval_set_id, ref.eval_id) for ref in (accepted.cases if accepted else [])}


def _accepted_drops(results: Results) -> set[str]:
    accepted = results.comparison.accepted if results.comparison is not None else None
    return set(accepted.suite_drops or []) if accepted is not None else set()


def gating_drops(results: Results) -> list[SuiteShift]:
    """The suite's drops the accept label did not accept."""
    return [d for d in suite_drops(results.comparison) if d.metric not in _accepted_drops(results)]


def _only_quarantined_fail(results: Results) -> bool:
    """Every case that did not pass is quarantined (and nothing else failed the run)."""
    return (results.summary.cases > 0 and not results.file_errors and not results.budgets
            and all(c.status == "passed" for c in gating_cases(results)))


def _errored(results: Results) -> bool:
    # A failed case can hide an errored run (its failing metric decides its status), or a
    # gating metric that nothing could score (which fails its case, as in AgentEvaluator).
    return any(c.status in ("error", "not_evaluated") or any(r.status == "error" for r in c.runs)
               or any(m.status == "not_evaluated" for m in c.metrics)
               for c in gating_cases(results))


def _metric_errored(case: CaseResult) -> bool:
    return any(m.status == "error" for m in case.metrics)


def regression_cases(results: Results) -> list[tuple[str, str, str]]:
    """(eval set id, eval id, why) of every case that fails ``fail-on: regression``."""
    found = []
    accepted = accepted_keys(results)
    for eval_set in results.eval_sets:
        for case in eval_set.cases:
            if case.quarantined is not None or refused_case(case):
                continue  # (a case the model service kept refusing has no verdict)
            if case.change == "regressed" and (eval_set.eval_set_id, case.eval_id) in accepted:
                continue
            if case.change == "regressed":
                why = "regressed"
            elif case.screening_disagrees:  # never "within noise": the fresh runs contradict it
                why = SCREENING_DISAGREES
            elif case.change in ("new", "changed") and case.status != "passed":
                why = f"{case.change} and {case.status}"
            elif _metric_errored(case):
                why = "a metric errored"
            else:
                continue
            found.append((eval_set.eval_set_id, case.eval_id, why))
    return found


def gate_failed(results: Results, fail_on: str) -> bool:
    """Whether the job fails under ``fail_on`` (one of FAIL_ON)."""
    if fail_on not in FAIL_ON:
        raise ValueError(f"fail-on must be one of {', '.join(FAIL_ON)}, got {fail_on!r}")
    if fail_on == "never":
        return False
    if refused(results, gating_cases(results)) is not None:
        return True  # no verdict on some cases: never passed (exit 2, report/finish.py)
    if fail_on in COMPARING and results.comparison is not None:
        return bool(regression_cases(results)) or (
            fail_on == "drop" and bool(gating_drops(results)))
    if fail_on in COMPARING and results.shard is not None:
        return any(_metric_errored(c) for s in results.eval_sets for c in s.cases)
    if results.passed or _only_quarantined_fail(results):
        return False
    if fail_on == "error":
        return _errored(results)
    return True


def gate_message(results: Results, fail_on: str) -> str:
    """The terminal's last line: the gate's decision with its rule, in the one form every rule
    shares, "gate passed (fail-on: RULE): what decided it" (the report's headline), and the
    token gate (--max-token-increase) when it failed the job. Every run, compare and merge
    ends with it."""
    from .tokens import token_gate_failed, token_gate_message

    passed, headline = gate_headline(results, fail_on)
    line = "gate" + headline.removeprefix("Gate")
    if token_gate_failed(results):  # fails the job whatever fail-on says
        line = line.replace("gate passed", "gate failed", 1) if passed else line
        line += "; " + token_gate_message(results)
    return line


def _errors(results: Results) -> list[str]:
    """What fails ``fail-on: error``, counted: errored runs, metrics, cases not evaluated."""
    cases = gating_cases(results)  # a quarantined case's errors fail nothing
    runs = sum(r.status == "error" for c in cases for r in c.runs)
    metrics = sum(m.status == "error" for c in cases for m in c.metrics)
    not_evaluated = sum(c.status == "not_evaluated" for c in cases)
    # A gating metric nothing could score, in a case it fails (as in AgentEvaluator).
    unscored = sum(m.status == "not_evaluated" for c in cases if c.status != "not_evaluated"
                   for m in c.metrics)
    said = [f"{plural(runs, 'run')} errored" if runs else "",
            f"{plural(metrics, 'metric')} errored" if metrics else "",
            f"{plural(unscored, 'metric')} not evaluated" if unscored else "",
            f"{plural(not_evaluated, 'case')} not evaluated" if not_evaluated else ""]
    return [x for x in said if x] or (["a case errored"] if any(c.status == "error" for c in cases) else [])


def _unconfirmed(cases: list[CaseResult]) -> str:
    one = len(cases) == 1
    return (f"{plural(len(cases), 'case')} looked worse and {'was' if one else 'were'} not "
            f"confirmed in {fresh_runs(cases)}")


def gate_headline(results: Results, fail_on: str) -> tuple[bool, str]:
    """(passed, the report's first line): the gate's decision and why (``decided_headline``),
    then what the pull request brought that the gate read: a baseline file it changed (the
    gate used the base commit's), its own recorded runs (checker/inputs/pr_files.py)."""
    passed, line = decided_headline(results, fail_on)
    return passed, "; ".join([line, *(f.said for f in results.pull_request_files or [])])


def decided_headline(results: Results, fail_on: str) -> tuple[bool, str]:
    """(passed, the report's first line): the gate's decision, its rule and what decided it,
    e.g. "Gate passed (fail-on: regression): no confirmed regression; 3 cases fail, as on
    main". Never "failed" over a gate that passed (the check would be green). The runs the
    model service kept refusing come first: what is left has no verdict."""
    passed, line = _decided_headline(results, fail_on)
    gap = refused(results, gating_cases(results))
    if gap is None:
        return passed, line
    lead, _, rest = line.partition("): ")
    return passed, f"{lead}): {gap.sentence()}" + (f"; {rest}" if rest else "")


def _decided_headline(results: Results, fail_on: str) -> tuple[bool, str]:
    failed = gate_failed(results, fail_on)
    lead = f"Gate {'failed' if failed else 'passed'} (fail-on: {fail_on})"
    s = results.summary
    not_passed = s.cases - s.passed
    if fail_on not in COMPARING or results.comparison is None:
        if results.shard is not None and fail_on in COMPARING:
            return not failed, f"{lead}: shard {results.shard.index}/{results.shard.count}; " \
                "regressions are decided when the shards are merged (evalcheck merge --baseline); " \
                "a shard fails only when a metric errored"
        what = (f"{not_passed} of {plural(s.cases, 'case')} did not pass" if not_passed
                else f"all {plural(s.cases, 'case')} passed" if s.cases
                else f"shard {results.shard.index}/{results.shard.count} holds no cases" if results.shard
                else "no eval cases")
        if fail_on == "error":
            what = "; ".join(_errors(results) or ["no run or metric errored"]) + f"; {what}"
        if s.carried:  # main's verdicts, not this run's (--changed-since)
            what += f" ({s.carried} carried from main, not re-run)"
        if fail_on in COMPARING:
            what += " (no baseline to compare with: gated on failure)"
        elif fail_on == "never":
            what += " (advisory)"
        return not failed, f"{lead}: " + "; ".join([what, *override_parts(results)])
    found = regression_cases(results)
    parts = []
    if found:
        counts = Counter(why for _, _, why in found)
        parts += [f"{plural(n, 'case')} {why}" for why, n in sorted(counts.items())]
    elif not accepted_keys(results):  # accepted ones are said below, with the label
        parts.append(("no confirmed regression" if results.comparison.familywise and
                      results.comparison.familywise.get("confirmed") else "no regression")
                     + (" outside the quarantined cases" if any(
                         c.change == "regressed" and c.quarantined is not None
                         for es in results.eval_sets for c in es.cases) else ""))
    drops = gating_drops(results)
    if drops:
        parts.append("the suite dropped: " + ", ".join(map(str, drops)))
    cases = gating_cases(results)
    quarantined = {id(c) for es in results.eval_sets for c in es.cases if c.quarantined is not None}
    disagreeing = {id(c) for c in cases if c.screening_disagrees}  # a reason of its own above
    failing = sort_failing(results, quarantined | disagreeing)
    # A failing case main passed is named with its own words below, not counted twice.
    unconfirmed = [c for c in cases if c.change != "regressed" and id(c) not in failing.cases()
                   and id(c) not in disagreeing and any(m.screened for m in c.metrics)]
    if unconfirmed:
        parts.append(_unconfirmed(unconfirmed))
    parts += failing_parts(results, quarantined | disagreeing)
    if s.carried:
        parts.append(f"{plural(s.carried, 'case')} carried from main, not re-run")
    without = without_fresh_runs(results)
    if without:  # `compare` of a run's results it could not decide on again as they were
        parts.append(without)
    parts += override_parts(results)
    return not failed, f"{lead}: " + "; ".join(parts)


def without_fresh_runs(results: Results) -> str:
    """"re-decided without the 30 fresh confirmation runs the results file holds (why)", or ""
    (read defensively: from a file)."""
    familywise = (results.comparison.familywise if results.comparison is not None else None) or {}
    without = familywise.get("withoutFreshRuns")
    if not isinstance(without, dict) or not isinstance(without.get("runs"), int):
        return ""
    why = without.get("why")
    return (f"re-decided without the {plural(without['runs'], 'fresh confirmation run')} the results "
            "file holds" + (f" ({clean(why, 200)})" if isinstance(why, str) and why else ""))
