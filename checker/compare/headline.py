"""What the gate's decision says, in every report: one sentence, then short lines.

The sentence is what decides the gate under the chosen ``fail-on`` and nothing else: "Gate
failed: 2 cases regressed (lisbon_usd, rome_find_and_book)." or "Gate passed: no confirmed
regression." The rest - cases that looked worse and were not confirmed, failing cases main
failed too, carried cases, the overrides, the files of the pull request the gate read - are
short lines below it. A suite's mean drop is said where it gates (``fail-on: drop``); under
any other rule the reports say it as a plain line of their own, never in the headline: a
passing headline never lists drops (it would read as a failure).

The terminal's last line keeps its one form, "gate failed (fail-on: RULE): what decided it;
the rest" (``gate_message``), with the token gate when it failed the job. See gate.py for
the decision itself.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..models.results import CaseResult, Results
from ..safety.output import clean
from .failing import NAME_LIMIT, failing_parts, fresh_runs, sort_failing
from ..safety.text import plural
from .gate import COMPARING, accepted_keys, gate_failed, gating_cases, gating_drops, regression_cases
from .overrides import override_parts
from ..scoring.refusals import refused

NAMES_SHOWN = 3  # cases named in the sentence; "and N more" after them


@dataclass
class Headline:
    """The gate's decision: ``decided`` (what decided it, e.g. "2 cases regressed (a, b)"),
    the rest as ``lines``, the rule."""

    passed: bool
    decided: str
    rule: str
    lines: list[str] = field(default_factory=list)

    @property
    def sentence(self) -> str:
        """The reports' first line: "Gate failed: 2 cases regressed (a, b)."."""
        return f"Gate {'passed' if self.passed else 'failed'}: {self.decided}."

    @property
    def terminal(self) -> str:
        """The terminal's last line, "gate passed (fail-on: RULE): what decided it; the rest"."""
        return (f"gate {'passed' if self.passed else 'failed'} (fail-on: {self.rule}): "
                + "; ".join([self.decided, *self.lines]))


def _names(ids: list[str]) -> str:
    shown = ", ".join(clean(i, NAME_LIMIT) for i in ids[:NAMES_SHOWN])
    return shown + (f" and {len(ids) - NAMES_SHOWN} more" if len(ids) > NAMES_SHOWN else "")


def _joined(parts: list[str]) -> str:
    """"a", "a and b", "a, b and c": one sentence's clauses."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


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


def _claims(results: Results) -> list[str]:
    """What the pull request brought that the gate read: a baseline file it changed (the gate
    used the base commit's), its own recorded runs (checker/inputs/pr_files.py)."""
    return [f.said for f in results.pull_request_files or []]


def headline(results: Results, fail_on: str) -> Headline:
    """The gate's decision under ``fail_on`` and what decided it. Never "failed" over a gate
    that passed (the check would be green). The runs the model service kept refusing come
    first: what is left has no verdict, and that decides."""
    failed = gate_failed(results, fail_on)
    if fail_on not in COMPARING or results.comparison is None:
        found = _uncompared(results, fail_on, failed)
    else:
        found = _compared(results, fail_on, failed)
    gap = refused(results, gating_cases(results))
    if gap is not None:
        found.lines.insert(0, found.decided)
        found.decided = gap.sentence()
    stopped = results.interrupted
    if stopped is not None:  # what decides: the run did not end (never a pass)
        found.lines[:0] = [f"stopped by {stopped.signal}: the runs that finished are scored, the others "
                           "not evaluated", found.decided]
        found.decided = str(stopped)
    found.lines += _claims(results)
    return found


def _uncompared(results: Results, fail_on: str, failed: bool) -> Headline:
    s = results.summary
    not_passed = s.cases - s.passed
    if results.shard is not None and fail_on in COMPARING:
        return Headline(not failed, f"shard {results.shard.index}/{results.shard.count}, whose regressions "
                        "are decided when the shards are merged (evalcheck merge --baseline)", fail_on,
                        ["a shard fails only when a metric errored"])
    quarantined_only = not_passed and not failed and fail_on in ("failure", "regression", "drop") \
        and all(c.status == "passed" for c in gating_cases(results))
    what = (f"{not_passed} of {plural(s.cases, 'case')} did not pass"
            + (", each quarantined (not gating)" if quarantined_only else "") if not_passed
            else f"all {plural(s.cases, 'case')} passed" if s.cases
            else f"shard {results.shard.index}/{results.shard.count} holds no cases" if results.shard
            else "no eval cases")
    lines = []
    if fail_on == "error":  # what decides is the errors; the cases' count comes below
        lines.append(what)
        what = "; ".join(_errors(results) or ["no run or metric errored"])
    if s.carried:  # main's verdicts, not this run's (--changed-since)
        what += f" ({s.carried} carried from main, not re-run)"
    if fail_on in COMPARING:
        what += " (no baseline to compare with: gated on failure)"
    elif fail_on == "never":
        what += " (advisory)"
    return Headline(not failed, what, fail_on, lines + override_parts(results))


def _compared(results: Results, fail_on: str, failed: bool) -> Headline:
    assert results.comparison is not None
    found = regression_cases(results)
    decided = []
    if found:
        by_why: dict[str, list[str]] = {}
        for _, eval_id, why in found:
            by_why.setdefault(why, []).append(eval_id)
        counts = Counter(why for _, _, why in found)
        decided += [f"{plural(n, 'case')} {why} ({_names(by_why[why])})" for why, n in sorted(counts.items())]
    drops = gating_drops(results)
    if fail_on == "drop" and drops:  # only here does the suite's drop decide
        decided.append("the suite dropped: " + ", ".join(map(str, drops)))
    overrides = override_parts(results)
    if not decided and accepted_keys(results):  # what passed it: the label (its line comes first)
        decided.append(overrides.pop(0))
    elif not decided:
        confirmed = bool(results.comparison.familywise and results.comparison.familywise.get("confirmed"))
        quarantined = any(c.change == "regressed" and c.quarantined is not None
                          for es in results.eval_sets for c in es.cases)
        decided.append(("no confirmed regression" if confirmed else "no regression")
                       + (" outside the quarantined cases" if quarantined else ""))
    lines = []
    cases = gating_cases(results)
    quarantined_ids = {id(c) for es in results.eval_sets for c in es.cases if c.quarantined is not None}
    disagreeing = {id(c) for c in cases if c.screening_disagrees}  # a reason of its own above
    failing = sort_failing(results, quarantined_ids | disagreeing)
    # A failing case main passed is named with its own words below, not counted twice.
    unconfirmed = [c for c in cases if c.change != "regressed" and id(c) not in failing.cases()
                   and id(c) not in disagreeing and any(m.screened for m in c.metrics)]
    if unconfirmed:
        lines.append(_unconfirmed(unconfirmed))
    lines += failing_parts(results, quarantined_ids | disagreeing)
    if results.summary.carried:
        lines.append(f"{plural(results.summary.carried, 'case')} carried from main, not re-run")
    without = without_fresh_runs(results)
    if without:  # `compare` of a run's results it could not decide on again as they were
        lines.append(without)
    lines += overrides
    return Headline(not failed, _joined(decided), fail_on, lines)


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


def gate_headline(results: Results, fail_on: str) -> tuple[bool, str]:
    """(passed, the reports' one-sentence headline)."""
    found = headline(results, fail_on)
    return found.passed, found.sentence


def gate_message(results: Results, fail_on: str) -> str:
    """The terminal's last line: the gate's decision with its rule, in the one form every rule
    shares, "gate passed (fail-on: RULE): what decided it; the rest", and the token gate
    (--max-token-increase) when it failed the job. Every run, compare and merge ends with it."""
    from .tokens import token_gate_failed, token_gate_message

    found = headline(results, fail_on)
    line = found.terminal
    if token_gate_failed(results):  # fails the job whatever fail-on says
        line = line.replace("gate passed", "gate failed", 1) if found.passed else line
        line += "; " + token_gate_message(results)
    return line
