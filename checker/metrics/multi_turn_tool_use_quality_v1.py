"""multi_turn_tool_use_quality_v1: Vertex AI's rubric verdict on how well the agent chose and called tools over the whole conversation.

One request per run with every turn and its events; score 0 to 1, rubric verdicts in
details. ADK attaches the score to the last invocation only; here it is the run's score.
"""

from __future__ import annotations

from ._vertex_metric import VertexConversationMetric


class MultiTurnToolUseQualityV1(VertexConversationMetric):
    name = "multi_turn_tool_use_quality_v1"
    description = "Vertex AI multi_turn_tool_use_quality_v1: how well the agent chose and called tools over the whole conversation (0 to 1)."
