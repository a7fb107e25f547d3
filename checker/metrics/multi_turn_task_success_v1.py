"""multi_turn_task_success_v1: Vertex AI's rubric judgment of whether the agent reached the user's goal.

The whole conversation in one request (every turn with its events); score 0 to 1, rubric
verdicts in details. ADK attaches the score to the last invocation; here it is the run's.
"""

from __future__ import annotations

from .machinery.vertex_metric import VertexConversationMetric


class MultiTurnTaskSuccessV1(VertexConversationMetric):
    name = "multi_turn_task_success_v1"
    description = "Vertex AI: whether the agent reached the user's goal, over the whole conversation (0 to 1)."
