"""inference_call_count_v1: model calls per turn (informational).

As ADK: the events that carry usage metadata or a model version; n/a for hand-written
``intermediate_data`` (tool_uses lists), which records no model calls.
"""

from __future__ import annotations

from ..models.evalset import Invocation, InvocationEvents
from .machinery.efficiency import EfficiencyMetric


class InferenceCallCount(EfficiencyMetric):
    name = "inference_call_count_v1"
    description = "Model calls per turn (informational, lower is better)."
    unit = "calls/turn"

    def value(self, invocation: Invocation) -> tuple[float | None, dict]:
        data = invocation.intermediate_data
        if not isinstance(data, InvocationEvents):
            return None, {}
        calls = [e for e in data.invocation_events
                 if e.usage_metadata is not None or e.model_version is not None]
        return float(len(calls)), {}
