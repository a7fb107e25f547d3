"""multi_turn_tool_use_quality_v1: Vertex AI's rubric judgment of how well the agent chose and called its tools.

The whole conversation in one request (every turn with its events); score 0 to 1, rubric
verdicts in details. ADK attaches the score to the last invocation; here it is the run's.
"""

from __future__ import annotations

from .machinery.vertex_metric import VertexConversationMetric


class MultiTurnToolUseQualityV1(VertexConversationMetric):
    name = "multi_turn_tool_use_quality_v1"
    description = "Vertex AI: how well the agent chose and called its tools, over the whole conversation (0 to 1)."
