"""response_evaluation_score: Vertex AI coherence (1 to 5) of every final response.

Coherence judges the response against the user's prompt only, so no reference is needed;
ADK demands expected invocations anyway and skips scenario cases, we do not. The prompt
is the pointwise COHERENCE template that ships in google-cloud-aiplatform
(``MetricPromptTemplateExamples``): ADK's ``PrebuiltMetric.COHERENCE`` downloads its
prompt from a Cloud Storage bucket at run time, which needs storage credentials and does
not work with an express-mode key.
"""

from __future__ import annotations

import asyncio

from .machinery import vertex
from .machinery.vertex_metric import VertexInvocationMetric


def _coherence_template() -> str:
    from vertexai.evaluation.metrics.metric_prompt_template_examples import (
        MetricPromptTemplateExamples)

    return MetricPromptTemplateExamples.get_prompt_template("coherence")


class ResponseEvaluationScore(VertexInvocationMetric):
    name = "response_evaluation_score"
    description = ("Vertex AI coherence of each final response, 1 (incoherent) to 5 "
                   "(completely coherent); the run score is the mean.")
    min_value = 1.0
    max_value = 5.0

    async def spec(self) -> vertex.MetricSpec:
        # The import is slow the first time; keep it off the event loop.
        template = await asyncio.to_thread(_coherence_template)
        return vertex.MetricSpec("coherence", prompt_template=template)
