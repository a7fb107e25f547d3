"""What the gate's headline says of the cases that fail here under a label that does not
explain it (``unchanged``, ``improved``, ``carried``): the reader must know whether main
failed them too or passed them and the comparison could not call the drop.

- main failed it too: "1 case fails, as on main";
- main passed it, the drop was screened and fresh runs did not confirm it: "1 case fails
  that passed 3/3 on main (shop/bye): the drop was not confirmed in 15 fresh runs";
- main passed it, no confirmation ran (replay, ``compare``, ``--confirm-runs 0``) and the
  drop would be evidence alone but not at the family-wise level: why, and what decides it
  (more results of main, or confirmation runs with an agent);
- main passed it and its runs are no worse than main's by the test: "within noise".

See docs/comparing.md.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from ..models.results import CaseResult, Results
from ..safety.output import clean
from .decision import family_words
from .verdict import baseline_pass_counts, case_pass_counts

NAME_LIMIT = 60  # an eval id is the PR's text: one headline holds at most one, cut


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


@dataclass
class FailingHere:
    """The failing cases no regressed/new/changed label explains, by what main said of them."""

    as_on_main: int = 0
    unknown: int = 0  # compared by an evalcheck that did not record main's verdict
    unconfirmed: list[tuple[str, CaseResult]] = field(default_factory=list)
    uncalled: list[tuple[str, CaseResult]] = field(default_factory=list)
    noise: list[tuple[str, CaseResult]] = field(default_factory=list)

    def cases(self) -> set[int]:
        """id() of every case that passed on main (the headline names them apart)."""
        return {id(c) for _, c in self.unconfirmed + self.uncalled + self.noise}


def _called_alone(case: CaseResult, familywise: dict[str, Any]) -> list[float]:
    """p-values of the case's failing metrics that would be evidence on their own (at
    alpha) but did not reach the family-wise level."""
    alpha = familywise.get("alpha")
    if not isinstance(alpha, (int, float)):
        return []
    return [m.p_value for m in case.metrics if m.status == "failed" and m.p_value is not None
            and m.p_value <= alpha]


def sort_failing(results: Results, skip: Collection[int] = frozenset()) -> FailingHere:
    """``skip``: id() of cases the headline explains otherwise."""
    comparison = results.comparison
    familywise = (comparison.familywise if comparison is not None else None) or {}
    confirmed = bool(familywise.get("confirmed"))
    found = FailingHere()
    for eval_set in results.eval_sets:
        for case in eval_set.cases:
            if case.status == "passed" or id(case) in skip \
                    or case.change not in ("unchanged", "improved", "carried") \
                    or any(r.unavailable is not None for r in case.runs):
                continue  # (no verdict on a case the model service kept refusing: said apart)
            main = case.status if case.change == "carried" else case.baseline_status
            named = f"{eval_set.eval_set_id}/{case.eval_id}"
            if main is None:
                found.unknown += 1
            elif main != "passed":
                found.as_on_main += 1
            elif any(m.confirm_runs for m in case.metrics):
                found.unconfirmed.append((named, case))
            elif not confirmed and _called_alone(case, familywise):
                found.uncalled.append((named, case))
            else:
                found.noise.append((named, case))
    return found


def _main_count(case: CaseResult) -> str:
    counts = baseline_pass_counts(case)
    return str(counts) if counts is not None and counts.runs else ""


def _first(cases: list[tuple[str, CaseResult]], what: str) -> str:
    """"1 case fails that passed 3/3 on main (shop/bye)" or "2 cases fail that passed on main
    (shop/bye 3/3, ...)"."""
    name, case = cases[0]
    shown = clean(name, NAME_LIMIT)
    main = _main_count(case)
    if len(cases) == 1:
        return f"1 case fails that passed {main + ' ' if main else ''}on main ({shown}{what})"
    return f"{len(cases)} cases fail that passed on main ({shown}{' ' + main if main else ''}{what}, ...)"


def fresh_runs(cases: list[CaseResult]) -> str:
    """"15 fresh runs (budget 60)", or for several cases "10 to 15 fresh runs each (budget 40
    to 60)": the confirmation runs each case took (its screened metric that ran longest)
    before it stopped, and the most it could have had; and the fresh runs that went on past
    them only to check that screening and confirmation agree ("(budget 40; 25 more checked
    that screening and confirmation agree)"), so that the counts add up to the terminal's."""
    took, budgets = set(), set()
    checking = 0  # fresh runs beyond the regression tests': for the screening check alone
    for case in cases:
        screened = [m for m in case.metrics if m.confirm_runs is not None] or case.metrics
        longest = max(screened, key=lambda m: len(m.confirm_runs or []))
        took.add(len(longest.confirm_runs or []))
        if longest.confirm_budget is not None:
            budgets.add(longest.confirm_budget)
        fresh = len(case.fresh_runs) if case.fresh_runs is not None else \
            max((len(m.disagreement_runs or []) for m in case.metrics), default=0)
        checking += max(0, fresh - len(longest.confirm_runs or []))

    def span(values: set[int]) -> str:
        return f"{min(values)}" if len(values) == 1 else f"{min(values)} to {max(values)}"

    more = (f"; {checking} more checked that screening and confirmation agree" if checking else "")
    return (f"{span(took)} fresh run{'' if took == {1} else 's'}{'' if len(cases) == 1 else ' each'}"
            + (f" (budget {span(budgets)}{more})" if budgets else f" ({more[2:]})" if more else ""))


def failing_parts(results: Results, skip: Collection[int] = frozenset()) -> list[str]:
    """The headline's phrases for the failing cases no label explains."""
    found = sort_failing(results, skip)
    familywise = (results.comparison.familywise if results.comparison is not None else None) or {}
    parts = []
    if found.unconfirmed:
        one = len(found.unconfirmed) == 1
        parts.append(_first(found.unconfirmed, "") + (
            f": the drop{'' if one else 's'} {'was' if one else 'were'} not confirmed in "
            + fresh_runs([c for _, c in found.unconfirmed])))
    if found.uncalled:
        _, case = found.uncalled[0]
        p = min(_called_alone(case, familywise))
        here = f", {case_pass_counts(case)} here, p of the pass rate {p:.3g}"
        level = familywise.get("level")
        why = (f"the family-wise level {level:.3g}, {family_words(familywise)}"
               if isinstance(level, (int, float)) else "the family-wise level")
        parts.append(_first(found.uncalled, here) + (
            f": too few runs to reach {why}; more results of main (--baseline given several "
            "times; the Action's baseline: auto) or confirmation runs with an agent decide it"))
    if found.noise:
        p_values = [m.p_value for _, c in found.noise for m in c.metrics
                    if m.status == "failed" and m.p_value is not None]
        noise = (f"p of the pass rate {p_values[0]:.2f}" if len(p_values) == 1 else
                 f"p of the pass rate >= {min(p_values):.2f}" if p_values else "")
        parts.append(_first(found.noise, "") + ", within noise" + (f" ({noise})" if noise else ""))
    if found.as_on_main:
        parts.append(f"{_plural(found.as_on_main, 'case fails', 'cases fail')}, as on main")
    if found.unknown:
        parts.append(f"{_plural(found.unknown, 'case fails', 'cases fail')} (main's verdict on "
                     f"{'it' if found.unknown == 1 else 'them'} is not recorded)")
    return parts
