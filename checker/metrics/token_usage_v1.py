"""token_usage_v1: tokens per turn (informational), with ADK's breakdown.

Per model call: input = prompt + tool-use prompt tokens, output = candidates + thoughts
tokens (each n/a only when both parts are); summed over the turn with n/a kept distinct
from 0; total = input + output (the backend's total_token_count is not used). The case value
averages each field over *all* turns, as ADK does, so total stays input + output.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..models.evalset import Invocation, usage_metadata
from .machinery.efficiency import EfficiencyMetric, average_fields
from .base import InvocationScore

FIELDS = ("total_tokens", "input_tokens", "prompt_tokens", "cached_tokens", "tool_use_tokens",
          "output_tokens", "candidates_tokens", "reasoning_tokens")


def _get(usage: dict[str, Any], snake: str) -> int | float | None:
    parts = snake.split("_")
    camel = parts[0] + "".join(p.title() for p in parts[1:])
    value = usage.get(snake, usage.get(camel))
    if isinstance(value, str):  # "12": genai's pydantic model reads it as 12, so does ADK
        try:
            return TypeAdapter(int).validate_python(value)
        except ValidationError:
            return None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _add(total: float | None, count: float | None) -> float | None:
    return total if count is None else (total or 0) + count


def _either(a: float | None, b: float | None) -> float | None:
    return None if a is None and b is None else (a or 0) + (b or 0)


class TokenUsage(EfficiencyMetric):
    name = "token_usage_v1"
    description = "Tokens per turn, input + output (informational, lower is better)."
    unit = "tokens/turn"

    def value(self, invocation: Invocation) -> tuple[float | None, dict]:
        totals: dict[str, float | None] = dict.fromkeys(FIELDS)
        for usage in usage_metadata(invocation):
            prompt = _get(usage, "prompt_token_count")
            tool = _get(usage, "tool_use_prompt_token_count")
            candidates = _get(usage, "candidates_token_count")
            thoughts = _get(usage, "thoughts_token_count")
            totals["input_tokens"] = _add(totals["input_tokens"], _either(prompt, tool))
            totals["prompt_tokens"] = _add(totals["prompt_tokens"], prompt)
            totals["cached_tokens"] = _add(totals["cached_tokens"], _get(usage, "cached_content_token_count"))
            totals["tool_use_tokens"] = _add(totals["tool_use_tokens"], tool)
            totals["output_tokens"] = _add(totals["output_tokens"], _either(candidates, thoughts))
            totals["candidates_tokens"] = _add(totals["candidates_tokens"], candidates)
            totals["reasoning_tokens"] = _add(totals["reasoning_tokens"], thoughts)
        if totals["input_tokens"] is not None or totals["output_tokens"] is not None:
            totals["total_tokens"] = (totals["input_tokens"] or 0) + (totals["output_tokens"] or 0)
        return totals["total_tokens"], totals

    def overall(self, values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return sum(present) / len(values) if present else None

    def overall_details(self, per_invocation: list[InvocationScore]) -> dict[str, Any]:
        return average_fields(per_invocation, over_all=True)
