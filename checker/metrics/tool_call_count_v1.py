"""tool_call_count_v1: tool calls per turn (informational)."""

from __future__ import annotations

from ..models.evalset import Invocation, tool_calls
from .machinery.efficiency import EfficiencyMetric


class ToolCallCount(EfficiencyMetric):
    name = "tool_call_count_v1"
    description = "Tool calls per turn (informational, lower is better)."
    unit = "calls/turn"

    def value(self, invocation: Invocation) -> tuple[float | None, dict]:
        return float(len(tool_calls(invocation))), {}
