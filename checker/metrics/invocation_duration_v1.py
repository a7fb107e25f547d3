"""invocation_duration_v1: seconds per turn (informational), split into model/tool/framework.

The checker measures each turn's wall-clock duration itself; model and tool seconds are
known only when the agent reports them. framework = max(total - model - tool, 0), n/a when
either part is n/a. A run's values average over the turns that report them, rounded to ms,
as ADK's evaluator does; over runs, the metric's score is the unrounded mean of every turn
(scoring/aggregation.py, as AgentEvaluator).
"""

from __future__ import annotations

from typing import Any

from ..models.evalset import Invocation
from .machinery.efficiency import EfficiencyMetric, average_fields
from .base import InvocationScore


class InvocationDuration(EfficiencyMetric):
    name = "invocation_duration_v1"
    description = "Seconds per turn (informational, lower is better)."
    unit = "s/turn"

    def value(self, invocation: Invocation) -> tuple[float | None, dict]:
        if invocation.duration is None:
            return None, dict.fromkeys(("total_seconds", "model_seconds", "tool_seconds",
                                        "framework_seconds"))
        model, tool = invocation.model_duration, invocation.tool_duration
        framework = None
        if model is not None and tool is not None:
            framework = round(max(invocation.duration - model - tool, 0.0), 3)
        return invocation.duration, {"total_seconds": invocation.duration, "model_seconds": model,
                                     "tool_seconds": tool, "framework_seconds": framework}

    def overall(self, values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return round(sum(present) / len(present), 3) if present else None

    def overall_details(self, per_invocation: list[InvocationScore]) -> dict[str, Any]:
        return average_fields(per_invocation, over_all=False, rounding=lambda x: round(x, 3))
