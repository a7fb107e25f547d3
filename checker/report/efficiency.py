"""The efficiency metrics' token breakdown, in one line for the report footer.

``token_usage_v1`` (informational, never gating) gives per turn: total = input + output,
input = prompt + tool-use prompt tokens (cached tokens are part of the prompt), output =
candidates + reasoning (thoughts) tokens. A count the model did not report is n/a, never 0:
a case without it is left out of that count's mean, and a count no case has shows "n/a".
"""

from __future__ import annotations

from typing import Any

from ..models.results import Results

TOKEN_FIELDS = ("total_tokens", "input_tokens", "prompt_tokens", "cached_tokens",
                "tool_use_tokens", "output_tokens", "candidates_tokens", "reasoning_tokens")


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def token_breakdown(results: Results) -> tuple[dict[str, float | None], int] | None:
    """Each token count per turn, averaged over the cases that report it, and how many cases
    had token_usage_v1 at all; None when no case reported any token count."""
    per_field: dict[str, list[float]] = {f: [] for f in TOKEN_FIELDS}
    cases = 0
    for eval_set in results.eval_sets:
        for case in eval_set.cases:
            metric = next((m for m in case.metrics if m.name == "token_usage_v1"), None)
            if metric is None or not isinstance(metric.details, dict):
                continue
            cases += 1
            for name in TOKEN_FIELDS:
                value = _number(metric.details.get(name))
                if value is not None:
                    per_field[name].append(value)
    if not any(per_field.values()):
        return None
    return {f: (sum(v) / len(v) if v else None) for f, v in per_field.items()}, cases


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.0f}"


def token_line(results: Results) -> str:
    """``tokens per turn: 1,234 = input 1,000 (prompt 900, of which cached 200; tool use
    100) + output 234 (candidates 200, reasoning 34)``, or "" without token counts."""
    found = token_breakdown(results)
    if found is None:
        return ""
    t, cases = found
    return (f"tokens per turn: {_fmt(t['total_tokens'])} = input {_fmt(t['input_tokens'])} "
            f"(prompt {_fmt(t['prompt_tokens'])}, of which cached {_fmt(t['cached_tokens'])}; "
            f"tool use {_fmt(t['tool_use_tokens'])}) + output {_fmt(t['output_tokens'])} "
            f"(candidates {_fmt(t['candidates_tokens'])}, reasoning {_fmt(t['reasoning_tokens'])})"
            + (f", mean over {cases} cases" if cases > 1 else ""))
