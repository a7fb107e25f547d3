"""An agents-cli ``custom_metrics`` entry with a ``prompt_template``: an LLM judge, asked
through evalcheck's judge service (cache, retries, budget) with the template filled as
agents-cli fills it (``{prompt}``, ``{response}``, ``{reference}``, ``{agent_data}``), read as the
``{"score": ..., "explanation": ...}`` the template asks for.

Not in the metric registry (its name is the user's): checker/inputs/agents_cli.py configures
it. One judgment per run, on the whole conversation; the score is the judge's, on the
template's own scale (e.g. 1 to 5).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from ...models.evalset import Invocation, content_text, tool_calls, tool_responses
from ..base import JudgeCriterion, Metric, RunInput, RunScore, ScoringContext
from .judged import (ask_samples, build_request, clip, failure_reason, judge_details, object_schema,
                     read_json_reply, sample_failures, string_schema)

VARIABLES = ("prompt", "response", "reference", "agent_data")
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
SCHEMA = object_schema({"score": {"type": "NUMBER", "description": "The score."},
                        "explanation": string_schema("Why.")})


class AgentsCliJudgeCriterion(JudgeCriterion):
    """``threshold`` None: informational (agents-cli has no thresholds)."""

    threshold: float | None = None  # type: ignore[assignment]
    prompt_template: str


class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    score: float
    explanation: str = ""


def fill(template: str, values: dict[str, str]) -> str:
    """The template with each known ``{variable}`` replaced; other braces (a JSON example
    in the template) are left as written."""
    return PLACEHOLDER.sub(lambda m: values[m.group(1)] if m.group(1) in values else m.group(0),
                           template)


def agent_data(invocations: list[Invocation]) -> str:
    """The run as agents-cli's ``agent_data`` (turns of events), JSON."""
    return json.dumps(agent_data_dict(invocations), ensure_ascii=False)


def agent_data_dict(invocations: list[Invocation]) -> dict[str, Any]:
    """The run as agents-cli's ``agent_data``: ``{"turns": [{"turn_index", "events"}]}``."""
    turns = []
    for n, inv in enumerate(invocations):
        events: list[dict[str, Any]] = [{"author": "user", "content": _content(inv.user_content)}]
        calls, responses = tool_calls(inv), tool_responses(inv)
        if calls:
            events.append({"author": "agent", "content": {"role": "model", "parts": [
                {"function_call": c.model_dump(mode="json", by_alias=False, exclude_none=True)} for c in calls]}})
        if responses:
            events.append({"author": "agent", "content": {"role": "user", "parts": [
                {"function_response": r.model_dump(mode="json", by_alias=False, exclude_none=True)}
                for r in responses]}})
        if inv.final_response is not None:
            events.append({"author": "agent", "content": _content(inv.final_response)})
        turns.append({"turn_index": n, "events": events})
    return {"turns": turns}


def _content(content: Any) -> dict[str, Any]:
    return content.model_dump(mode="json", by_alias=False, exclude_none=True)


class AgentsCliJudge(Metric):
    name = ""  # the user's metric name; never registered
    description = "An agents-cli LLM metric: your prompt_template, answered by a Gemini judge."
    criterion_model = AgentsCliJudgeCriterion

    async def score(self, criterion: AgentsCliJudgeCriterion, run: RunInput,
                    context: ScoringContext) -> RunScore:
        if not run.actual:
            return RunScore(not_evaluated_reason="the agent gave no turn to judge")
        prompt = "\n".join(content_text(i.user_content) for i in run.actual)
        response = content_text(run.actual[-1].final_response)
        reference = content_text(run.expected[-1].final_response) if run.expected else ""
        filled = fill(criterion.prompt_template, {
            "prompt": prompt, "response": response, "reference": reference,
            "agent_data": agent_data(run.actual)})
        request = build_request(criterion, filled, SCHEMA)
        samples = await ask_samples(context, request, criterion.judge_model_options.num_samples,
                                    lambda text: read_json_reply(text, _Answer))
        scores = [s.value.score for s in samples if s.error is None]
        details = {**judge_details(criterion), "response": clip(response)}
        failures = sample_failures(samples)
        if failures:
            details["failedSamples"] = failures
        if not scores:
            return RunScore(error="judge failed: " + failure_reason(failures[0]), details=details)
        explained = [s.value.explanation for s in samples if s.error is None and s.value.explanation]
        if explained:
            details["explanation"] = clip(explained[0])
        return RunScore(score=sum(scores) / len(scores), details=details)
