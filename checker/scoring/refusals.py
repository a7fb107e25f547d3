"""The runs the model service kept refusing, over a results file: what the gate, the terminal
and the reports say of them.

A run the model service refused past ``--max-service-wait`` is ``not_evaluated`` with its
``unavailable`` refusal (never a failing run), and its case has no verdict
(scoring/case.py): the run fails with exit status 2, naming the refusals, never 1 and never
"regressed" (compare/gate.py, report/finish.py). Read from the runs themselves, so that a
merge of shards or a ``compare`` of a results file says the same. Pure.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..models.results import CaseResult, Results


@dataclass(frozen=True)
class Refused:
    runs: int  # runs left unavailable
    of: int  # runs in all
    cases: int  # cases without a verdict for it
    codes: tuple[tuple[str, int], ...]  # ("429 RESOURCE_EXHAUSTED", n), most first
    retried: int  # runs refused at least once (also those that got through after a wait)
    fresh: int = 0  # fresh confirmation runs left unavailable (not among the cases' runs)

    def sentence(self) -> str:
        """"the model service refused 312 of 600 runs (429 RESOURCE_EXHAUSTED) past
        --max-service-wait; no verdict on 14 cases"."""
        codes = ", ".join(code if len(self.codes) == 1 else f"{code}: {n}" for code, n in self.codes)
        cases = f"{self.cases} case{'s' if self.cases != 1 else ''}"
        said = (f"{self.runs} of {self.of} run{'s' if self.of != 1 else ''}" if self.runs else "")
        if self.fresh:
            said += (" and " if said else "") + (f"{self.fresh} fresh confirmation "
                                                  f"run{'s' if self.fresh != 1 else ''}")
        return f"the model service refused {said} ({codes}) past --max-service-wait; no verdict on {cases}"


def refused_case(case: CaseResult) -> bool:
    return any(r.unavailable is not None for r in case.runs)


def no_verdict(case: CaseResult) -> str | None:
    """Why a case has no verdict when the model service kept refusing runs of it: "the model
    service refused runs 2 and 3 (503 UNAVAILABLE): no verdict"; None otherwise."""
    left = [r for r in case.runs if r.unavailable is not None]
    if not left:
        return None
    numbers = [str(r.run) for r in left]
    which = (f"run {numbers[0]}" if len(numbers) == 1
             else f"runs {', '.join(numbers[:-1])} and {numbers[-1]}")
    codes = ", ".join(sorted({r.unavailable.code for r in left if r.unavailable is not None}))
    return f"the model service refused {which} ({codes}) past --max-service-wait: no verdict"


def refused(results: Results, cases: list[CaseResult] | None = None) -> Refused | None:
    """The unresolved refusals among ``cases`` (default: every case); None when none."""
    chosen = cases if cases is not None else [c for es in results.eval_sets for c in es.cases]
    codes: Counter[str] = Counter()
    runs = total = retried = without = 0
    for case in chosen:
        total += len(case.runs)
        retried += sum(1 for r in case.runs if r.refusals or r.unavailable is not None)
        left = [r for r in case.runs if r.unavailable is not None]
        if left:
            without += 1
            runs += len(left)
            codes.update(r.unavailable.code for r in left if r.unavailable is not None)
    # Fresh confirmation runs are kept apart from the cases' runs: what the run's metadata
    # counts beyond the cases' own is theirs (their cases' confirmation was cut short).
    meta = results.metadata.get("modelService") if isinstance(results.metadata, dict) else None
    fresh = 0
    if isinstance(meta, dict) and meta.get("gaveUp"):
        counted = meta.get("unavailableRuns")
        fresh = max(0, counted - runs) if isinstance(counted, int) else 0
        cases_counted = meta.get("unavailableCases")
        if fresh and isinstance(cases_counted, int):
            without = max(without, cases_counted)
        if fresh and not codes:
            codes[str(meta["gaveUp"])] += fresh
    if not runs and not fresh:
        return None
    return Refused(runs=runs, of=total, cases=without, codes=tuple(codes.most_common()),
                   retried=retried, fresh=fresh)


def service_note(results: Results) -> str | None:
    """What the reports say of refusals the waits resolved: "The model service refused 48
    calls (429 RESOURCE_EXHAUSTED) of 16 runs; each was run again after the delay it asked
    for (12 s waited in all): only the runs that got through count." None when it refused
    nothing (or only runs left without a verdict, said apart)."""
    meta = results.metadata.get("modelService") if isinstance(results.metadata, dict) else None
    runs = [r for es in results.eval_sets for c in es.cases for r in c.runs
            if r.refusals and r.unavailable is None]
    if not runs:
        return None
    refusals = sum(r.refusals or 0 for r in runs)
    codes = meta.get("byCode") if isinstance(meta, dict) else None
    named = (" (" + ", ".join(str(code) for code in codes) + ")"
             if isinstance(codes, dict) and codes else "")
    waited = meta.get("waitedSeconds") if isinstance(meta, dict) else None
    wait = (f" ({waited:.0f} s waited in all)" if isinstance(waited, (int, float))
            and not isinstance(waited, bool) else "")
    return (f"The model service refused {refusals} attempt{'s' if refusals != 1 else ''}{named} of "
            f"{len(runs)} run{'s' if len(runs) != 1 else ''}; each was run again after the delay "
            f"the service asked for{wait}: only the attempts that got through count, a refusal "
            "is never a failing run.")
