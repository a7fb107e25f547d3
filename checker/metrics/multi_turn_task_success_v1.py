"""multi_turn_task_success_v1: Vertex AI's rubric verdict on whether the agent accomplished the user's goal over the whole conversation.

One request per run with every turn and its events; score 0 to 1, rubric verdicts in
details. ADK attaches the score to the last invocation only; here it is the run's score.
"""

from __future__ import annotations

from ._vertex_metric import VertexConversationMetric


class MultiTurnTaskSuccessV1(VertexConversationMetric):
    name = "multi_turn_task_success_v1"
    description = "Vertex AI multi_turn_task_success_v1: whether the agent accomplished the user's goal over the whole conversation (0 to 1)."
