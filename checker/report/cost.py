"""Tokens into an estimated cost: a price table (model -> US dollars per million input and
output tokens), the default one for Gemini models (dated: prices change) or ``--prices FILE``.

A prices file is JSON, either ``{"gemini-2.5-flash": {"input": 0.30, "output": 2.50}, ...}``
or the same under ``"models"`` with an optional ``"date"``. Its entries come first, the
default table's after. A model is priced by its name, else by the longest name in the table
that it starts with (``gemini-2.0-flash-001`` is ``gemini-2.0-flash``), after dropping a
``models/`` prefix. ``"*"`` prices the tokens no model was named for (an agent whose usage
does not say its model). Tokens of a model without a price are counted, never costed: the
cost is then "at least" and names them (docs/cost.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..models.results import Results
from ..models.usage import Tokens, Usage

# Gemini API list prices, paid tier, text, prompts up to 200k tokens, US dollars per million
# tokens (output includes thinking tokens). https://ai.google.dev/gemini-api/docs/pricing
DEFAULT_PRICES_DATE = "2025-07"
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gemini-2.5-pro": (1.25, 10.00),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.5-flash-lite": (0.10, 0.40),
    "gemini-2.0-flash": (0.10, 0.40),
    "gemini-2.0-flash-lite": (0.075, 0.30),
    "gemini-1.5-pro": (1.25, 5.00),
    "gemini-1.5-flash": (0.075, 0.30),
}


@dataclass
class PriceTable:
    prices: dict[str, tuple[float, float]]
    source: str  # "Gemini list prices of 2025-07" or the file's name (and date)
    unpriced: set[str] = field(default_factory=set)

    def price(self, model: str) -> tuple[float, float] | None:
        name = model.strip()
        name = name[len("models/"):] if name.startswith("models/") else name
        if not name:
            return self.prices.get("*")
        if name in self.prices:
            return self.prices[name]
        starts = [k for k in self.prices if k != "*" and name.startswith(k)]
        return self.prices[max(starts, key=len)] if starts else None

    def cost(self, tokens: Tokens | None) -> float | None:
        """US dollars of ``tokens``: the priced models' (the others are remembered in
        ``unpriced``); None when no model of them has a price."""
        if tokens is None:
            return None
        total, priced = 0.0, False
        for model, counts in (tokens.models or {"": tokens}).items():
            price = self.price(model)
            if price is None:
                if counts.input or counts.output:
                    self.unpriced.add(model or "(model not reported)")
                continue
            priced = True
            total += counts.input * price[0] / 1e6 + counts.output * price[1] / 1e6
        return total if priced else None


def default_table() -> PriceTable:
    return PriceTable(dict(DEFAULT_PRICES), f"Gemini list prices of {DEFAULT_PRICES_DATE}")


def read_prices(path: Path) -> PriceTable:
    """``--prices FILE`` over the default table; InputError naming the entry at fault."""
    from ..inputs.validation import read_json

    data = read_json(path, str(path))
    entries, where = data, "$"
    date = None
    if isinstance(data, dict) and isinstance(data.get("models"), dict):
        entries, where, date = data["models"], "$.models", data.get("date")
    if not isinstance(entries, dict) or not entries:
        raise InputError("a prices file maps model names to {\"input\": USD, \"output\": USD} "
                         "per million tokens", file=str(path), path=where,
                         fix='e.g. {"gemini-2.5-flash": {"input": 0.30, "output": 2.50}}')
    prices = {}
    for name, entry in entries.items():
        values = [entry.get(k) if isinstance(entry, dict) else None for k in ("input", "output")]
        numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1e6]
        if len(numbers) != len(values):
            raise InputError(f"price of '{name}' must be {{\"input\": USD, \"output\": USD}} per "
                             "million tokens, numbers of 0 or more", file=str(path),
                             path=f"{where}[{name!r}]")
        prices[str(name)] = (float(numbers[0]), float(numbers[1]))
    source = path.name + (f" of {date}" if isinstance(date, str) and date else "")
    return PriceTable({**prices, **{k: v for k, v in DEFAULT_PRICES.items() if k not in prices}},
                      f"{source}, then Gemini list prices of {DEFAULT_PRICES_DATE}")


SIDES = ("agent", "judge", "simulator")


def _cost(table: PriceTable, usage: Usage) -> dict[str, Any] | None:
    costs = {side: table.cost(getattr(usage, side)) for side in SIDES}
    if all(c is None for c in costs.values()):
        return None
    out: dict[str, Any] = {"total": round(sum(c or 0 for c in costs.values()), 6)}
    out.update({side: round(c, 6) for side, c in costs.items() if c is not None})
    return out


def apply_prices(results: Results, table: PriceTable) -> None:
    """Each case's and the summary's estimated cost, in their ``usage.cost``; the summary's
    names the price table and the models it has no price for."""
    for eval_set in results.eval_sets:
        for case in eval_set.cases:
            if case.usage is not None:
                case.usage.cost = _cost(table, case.usage)
    usage = results.summary.usage
    if usage is None:
        return
    table.unpriced.clear()
    cost = _cost(table, usage)
    if cost is None and not table.unpriced:
        return
    usage.cost = {**(cost or {}), "prices": table.source}
    if table.unpriced:
        usage.cost["unpriced"] = sorted(table.unpriced)


def _side(name: str, tokens: Tokens | None) -> str:
    return "" if tokens is None else f"{name} {tokens.input:,} in + {tokens.output:,} out"


def fmt_usd(value: float) -> str:
    return f"${value:,.2f}" if value >= 1 else f"${value:.4f}".rstrip("0").rstrip(".") if value else "$0"


def usage_line(results: Results) -> str:
    """``tokens: agent 12,000 in + 800 out, judge 3,000 in + 600 out · est. cost $0.0123
    (Gemini list prices of 2025-07)``, or "" when nothing was counted."""
    usage = results.summary.usage
    if usage is None or usage.empty():
        return ""
    sides = [s for s in (_side(side, getattr(usage, side)) for side in SIDES) if s]
    line = "tokens: " + (", ".join(sides) or "none reported")
    cost = usage.cost or {}
    if isinstance(cost.get("total"), (int, float)):
        line += f" · est. cost {'at least ' if cost.get('unpriced') else ''}{fmt_usd(cost['total'])}"
        line += f" ({cost.get('prices')})" if cost.get("prices") else ""
    if cost.get("unpriced"):
        line += f"; no price for {', '.join(cost['unpriced'])}"
    if usage.vertex_instances:  # its answers tell no tokens: not in the cost (docs/cost.md)
        line += (f"; Vertex AI evaluation: {usage.vertex_instances:,} instance"
                 f"{'s' if usage.vertex_instances != 1 else ''}, tokens not reported")
    return line


def case_tokens(usage: Usage | None) -> str:
    """``agent 1,234 + judge 567 tokens`` for a table cell or the HTML report."""
    if usage is None or usage.empty():
        return ""
    parts = [f"{name} {t.total:,}" for name, t in ((side, getattr(usage, side)) for side in SIDES)
             if t is not None]
    return " + ".join(parts) + " tokens" if parts else ""


def budget_line(budget: dict[str, Any]) -> str:
    left = (f"{budget.get('refused', 0)} {budget.get('what', 'run')}"
            f"{'s' if budget.get('refused', 0) != 1 else ''} not started")
    shard = f" of shard {budget['shard']}" if budget.get("shard") else ""  # merged shards
    return (f"the {budget.get('side', '')} token budget ({budget.get('option')} "
            f"{budget.get('limit', 0):,}){shard} was spent ({budget.get('used', 0):,} tokens used): {left}, "
            f"{budget.get('cases', 0)} case{'s' if budget.get('cases', 0) != 1 else ''} not evaluated")
