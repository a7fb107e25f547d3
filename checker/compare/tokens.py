"""Tokens against the baseline: each case's agent tokens per run, here and on main, and the
opt-in token gate (``--max-token-increase PCT``).

Beside the comparison, not part of it: the labels, the statistics and the gate of
checker/compare/ are unchanged. A case's baseline is the runs pooled for it (the newest
main result that evaluated the same case, and the older ones pooled with it); its tokens per
run are the mean over the runs that reported usage. A case without usage on either side has
no token change, and the gate never fails on it.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..models.results import CaseResult, Results
from .pooling import BaselinePool


def agent_per_run(runs: Iterable[object]) -> list[int]:
    """The agent's tokens (input + output) of each run that reported any."""
    out = []
    for run in runs:
        usage = getattr(run, "usage", None)
        if usage is not None and usage.agent is not None:
            out.append(usage.agent.total)
    return out


def _mean(values: list[int]) -> float | None:
    return sum(values) / len(values) if values else None


def add_token_changes(baselines: list[Results], results: Results) -> Results:
    """``results`` with each compared case's ``token_change``: ``{baseline, here, percent}``
    (agent tokens per run; percent null when main's were 0)."""
    if not baselines:
        return results
    pool = BaselinePool(baselines, ambiguous=results.ambiguous_ids())
    ambiguous = pool.ambiguous | results.ambiguous_ids()
    for key, eval_set in zip(results.set_keys(ambiguous), results.eval_sets, strict=False):
        for case in eval_set.cases:
            change = _change(pool, (key, case.eval_id), case)
            if change is not None:
                case.token_change = change
    return results


def _change(pool: BaselinePool, key: tuple[str, str], case: CaseResult) -> dict[str, float | None] | None:
    here = _mean(agent_per_run(case.runs))
    if here is None or case.change in (None, "new", "changed", "carried"):
        return None
    pooled = pool.pooled(key, case)
    if pooled is None:
        return None
    runs = [tokens for found in pool.compared_cases(key, pooled) for tokens in agent_per_run(found.runs)]
    base = _mean(runs)
    if base is None:
        return None
    percent = round((here - base) / base * 100, 1) if base > 0 else None
    return {"baseline": round(base, 1), "here": round(here, 1), "percent": percent}


def token_gate(results: Results, max_increase: float) -> list[tuple[str, str, float]]:
    """(eval set id, eval id, percent) of every case whose agent tokens per run grew by more
    than ``max_increase`` percent against the baseline."""
    found = []
    for eval_set in results.eval_sets:
        for case in eval_set.cases:
            change = case.token_change or {}
            percent = change.get("percent")
            if isinstance(percent, (int, float)) and percent > max_increase:
                found.append((eval_set.eval_set_id, case.eval_id, float(percent)))
    return found


def record_token_gate(results: Results, max_increase: float | None) -> None:
    """The gate's verdict in ``comparison.tokenGate``: the limit and the cases over it."""
    if max_increase is None or results.comparison is None:
        return
    over = token_gate(results, max_increase)
    results.comparison.token_gate = {
        "maxIncrease": max_increase, "passed": not over,
        "exceeded": [{"evalSetId": s, "evalId": c, "percent": p} for s, c, p in over]}


def token_gate_failed(results: Results) -> bool:
    gate = results.comparison.token_gate if results.comparison is not None else None
    return bool(gate) and gate is not None and not gate.get("passed", True)


def token_gate_message(results: Results) -> str:
    gate = (results.comparison.token_gate if results.comparison is not None else None) or {}
    if not gate:
        return ""
    over = gate.get("exceeded") or []
    limit = gate.get("maxIncrease")
    if not over:
        return f"token gate passed: no case's agent tokens per run grew by more than {limit:g}%"
    names = ", ".join(f"{o['evalSetId']}/{o['evalId']} (+{o['percent']:g}%)" for o in over[:10])
    more = f" and {len(over) - 10} more" if len(over) > 10 else ""
    return (f"token gate failed: {len(over)} case{'s' if len(over) != 1 else ''} used more than "
            f"{limit:g}% more agent tokens per run than on main: {names}{more}")
