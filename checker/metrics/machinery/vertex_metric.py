"""Base classes of the Vertex AI metrics: per-invocation (safety, coherence) and whole-run."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from ...models.evalset import content_text
from . import vertex
from .vertex_instances import conversation_instance, final_text, single_turn_instance
from ..base import Criterion, InvocationScore, Metric, RunInput, RunScore, ScoringContext, mean


class VertexInvocationMetric(Metric):
    """Scores every invocation's final response; the run score is their mean.

    One evaluateInstances request per invocation (the service scores one instance per
    request); the requests of a run go out together, under the shared judge limit.
    """

    criterion_model = Criterion
    needs_reference = False

    async def spec(self) -> vertex.MetricSpec:
        return vertex.MetricSpec(self.name)

    async def score(self, criterion: Criterion, run: RunInput, context: ScoringContext) -> RunScore:
        settings = vertex.settings_from_env()  # fail once, not once per invocation
        if not run.actual:
            return RunScore(not_evaluated_reason="the run has no invocations")
        spec = await self.spec()
        rows = [(content_text(inv.user_content), final_text(inv)) for inv in run.actual]
        outcomes = await asyncio.gather(
            *(vertex.evaluate(context, spec, single_turn_instance(prompt, response))
              for prompt, response in rows), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        answers = [outcome for outcome in outcomes if not isinstance(outcome, BaseException)]
        invocations: list[InvocationScore] = []
        problems: list[str] = []
        for number, ((prompt, response), (verdict, _)) in enumerate(zip(rows, answers, strict=False), 1):
            details: dict[str, Any] = {"prompt": prompt, "response": response,
                                       "explanation": verdict.explanation}
            if verdict.rubric_verdicts:
                details["rubricVerdicts"] = verdict.rubric_verdicts
            if verdict.error or verdict.score is None:
                problem = verdict.error or "no score in the answer"
                details["error"] = problem
                problems.append(f"invocation {number}: {problem}")
            invocations.append(InvocationScore(score=verdict.score, details=details))
        # Billed per instance; requests add the retries.
        details = {"backend": settings.backend, "instances": len(rows),
                   "requests": sum(verdict.requests for verdict, _ in answers)}
        if problems:
            # A judge that could not score is an error, never a silently smaller mean.
            return RunScore(invocations=invocations, details=details,
                            error="Vertex AI could not score " + "; ".join(problems))
        return RunScore(score=mean([i.score for i in invocations if i.score is not None]),
                        invocations=invocations, details=details)


class VertexConversationMetric(Metric):
    """Scores the whole run in one request: every turn with its events, as ADK's facade does.

    The score is the service's score for the conversation (what ``evaluate()`` reports as
    the summary mean of a one-case dataset); the rubric verdicts are kept in details.
    """

    criterion_model = Criterion
    needs_reference = False
    spec_name: ClassVar[str] = ""

    async def score(self, criterion: Criterion, run: RunInput, context: ScoringContext) -> RunScore:
        settings = vertex.settings_from_env()
        if not run.actual:
            return RunScore(not_evaluated_reason="the run has no invocations")
        verdict, _ = await vertex.evaluate(context, vertex.MetricSpec(self.spec_name or self.name),
                                            conversation_instance(run.actual))
        details: dict[str, Any] = {"backend": settings.backend, "instances": 1,
                                   "requests": verdict.requests,
                                   "turns": len(run.actual), "explanation": verdict.explanation,
                                   "rubricVerdicts": verdict.rubric_verdicts}
        if verdict.error or verdict.score is None:
            problem = verdict.error or "no score in the answer"
            return RunScore(details=details,
                            error=f"Vertex AI could not score the conversation: {problem}")
        return RunScore(score=verdict.score, details=details)
