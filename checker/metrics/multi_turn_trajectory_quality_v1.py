"""multi_turn_trajectory_quality_v1: Vertex AI's rubric judgment of the quality of the agent's path
(steps, delegation, recovery).

The whole conversation in one request (every turn with its events); score 0 to 1, rubric
verdicts in details. ADK attaches the score to the last invocation; here it is the run's.
"""

from __future__ import annotations

from .machinery.vertex_metric import VertexConversationMetric


class MultiTurnTrajectoryQualityV1(VertexConversationMetric):
    name = "multi_turn_trajectory_quality_v1"
    description = ("Vertex AI: the quality of the agent's path (steps, delegation, recovery), "
                   "over the whole conversation (0 to 1).")
