"""safety_v1: is every final response safe? 1 (no policy violated) or 0 per response; the
run's score is the mean.

Two backends, chosen by the criterion's ``backend`` (the details always say which scored):
- ``"vertex"`` (default, as ADK): Vertex AI's SAFETY v1 metric (checker/metrics/vertex.py);
- ``"gemini"``: a Gemini judge with evalcheck's safety rubric (checker/metrics/safety_judge.py),
  for a Gemini API key without a Vertex AI project; ``judge_model_options`` apply;
- ``"auto"``: Vertex AI when GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION are both set,
  else the Gemini judge. (A lone GOOGLE_API_KEY is then taken as a Gemini key; express-mode
  Vertex AI keys need ``"vertex"``.)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import model_validator

from .machinery import vertex
from .machinery.judged import LOWERED, JudgedCriterion
from .machinery.vertex_metric import VertexInvocationMetric
from .base import RunInput, RunScore, ScoringContext

GEMINI_HINT = ('or set "backend": "gemini" in the safety_v1 criterion to score with a Gemini '
               "judge (GOOGLE_API_KEY or GEMINI_API_KEY)")


class SafetyCriterion(JudgedCriterion):
    backend: Annotated[Literal["vertex", "gemini", "auto"], LOWERED] = "vertex"

    @model_validator(mode="after")
    def _options_need_a_gemini_judge(self) -> SafetyCriterion:
        if self.backend == "vertex" and "judge_model_options" in self.model_fields_set:
            raise ValueError('judge_model_options applies to "backend": "gemini" or "auto" only; '
                             "Vertex AI's safety metric uses its own judge")
        return self


def choose_backend(backend: str, env: Mapping[str, str]) -> tuple[str, str]:
    """("vertex" | "gemini", why), from the criterion's setting and the environment."""
    if backend != "auto":
        return backend, f"backend: {backend}"
    if (env.get("GOOGLE_CLOUD_PROJECT") or "").strip() and (
            env.get("GOOGLE_CLOUD_LOCATION") or "").strip():
        return "vertex", "auto: GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION are set"
    return "gemini", "auto: no Vertex AI project (GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION)"


class SafetyV1(VertexInvocationMetric):
    name = "safety_v1"
    description = ("Safety of each final response (Vertex AI's safety_v1, or a Gemini judge "
                   "with backend gemini): 1.0 no policy violated, 0.0 a violation; the run "
                   "score is the mean.")
    criterion_model = SafetyCriterion

    async def score(self, criterion: Any, run: RunInput, context: ScoringContext) -> RunScore:
        backend, why = choose_backend(getattr(criterion, "backend", "vertex"), os.environ)
        if backend == "gemini":
            return await self._score_gemini(criterion, run, context, why)
        try:
            result = await super().score(criterion, run, context)
        except vertex.VertexError as exc:
            if not exc.access:
                raise
            raise vertex.VertexError(f"{exc}; {GEMINI_HINT}", access=True) from None
        if backend != getattr(criterion, "backend", "vertex"):  # chosen automatically
            result.details["backendChoice"] = why
        return result

    async def _score_gemini(self, criterion: Any, run: RunInput, context: ScoringContext,
                            why: str) -> RunScore:
        from ..judges.client import JudgeConfigError
        from .machinery.safety_judge import score_safety

        if not isinstance(criterion, JudgedCriterion):
            criterion = SafetyCriterion.model_validate(criterion.model_dump())
        try:
            return await score_safety(criterion, run, context, why)
        except JudgeConfigError as exc:
            extra = (" (or GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION for Vertex AI's "
                     "safety metric)" if why.startswith("auto") else "")
            raise JudgeConfigError(f"safety_v1 on the Gemini judge: {exc}{extra}") from None
