"""rubric_based_final_response_quality_v1: an LLM judge checks the final answer against rubrics.

One yes/no verdict per rubric per invocation, each with a rationale and the evidence it rests
on; ``num_samples`` samples vote per rubric (a tie is no). Trusted evidence is the user's
request, the developer instructions, the outputs of the tool calls and grounding metadata,
never the agent's own claims. Which rubrics apply where, and the fixes of ADK's rubric bugs,
are described in checker/metrics/rubrics.py.
"""

from __future__ import annotations

from ..models.evalset import Rubric, content_text
from .machinery.judged import (DATA_NOTE, app_details_of, data_block, developer_instructions,
                      grounding_metadata, response_text, tool_declarations)
from .machinery.rubrics import RubricsCriterion, properties_json, score_rubrics, step_inputs
from .base import Metric, RunInput, RunScore, ScoringContext

RUBRIC_TYPE = "FINAL_RESPONSE_QUALITY"

PROMPT = """\
You review the final answer an AI agent gave to a user, one property at a time. Each property \
describes something a good final answer does. Judge only the properties listed, each on its own; \
do not invent others.

Verdicts:
- "yes": the final answer fulfils the property, or the property does not apply to this request.
- "no": the property applies and the final answer does not fulfil it, or fulfilling it depends on \
a claim that the trusted evidence does not back.

How to judge:
1. Gather the trusted evidence first. It comes only from the user's prompt, the developer \
instructions, the outputs of tool calls that were made properly (a suitable tool with sensible \
arguments) and grounding metadata. The agent's own final answer, reasoning or intermediate \
statements are never evidence.
2. Check the final answer against that evidence. When evidence a property needs is missing \
because a tool call was wrong or never made, that property is "no".
3. Be lenient about phrasing, formatting and sensible numeric rounding; be strict about facts.

{data_note}

{data}

Answer with a JSON object {{"verdicts": [...]}} holding exactly one entry per property, in the \
order given: "rubric_id" (copied exactly), "evidence" (the trusted evidence you relied on, or \
"none"), "rationale" (a short explanation) and "verdict" ("yes" or "no")."""


def build_prompt(run: RunInput, index: int, rubrics: list[Rubric],
                 include_intermediate: bool) -> str:
    invocation = run.actual[index]
    details = app_details_of(run, index)
    return PROMPT.format(data_note=DATA_NOTE, data=data_block({
        "developer_instructions": developer_instructions(details) or "None given.",
        "available_tools": tool_declarations(details) or "Agent has no tools.",
        "user_prompt": content_text(invocation.user_content),
        "tool_calls_and_responses": step_inputs(invocation),
        "grounding_metadata": grounding_metadata(invocation) or "None.",
        "final_answer": response_text(invocation, include_intermediate),
        "properties": properties_json(rubrics)}))


class RubricBasedFinalResponseQualityV1(Metric):
    name = "rubric_based_final_response_quality_v1"
    description = "An LLM judge checks the final response against rubrics, yes/no per rubric."
    criterion_model = RubricsCriterion
    needs_reference = False

    async def score(self, criterion: RubricsCriterion, run: RunInput,
                    context: ScoringContext) -> RunScore:
        include = criterion.include_intermediate_responses_in_final
        return await score_rubrics(
            criterion, run, context, RUBRIC_TYPE,
            lambda r, i, rubrics: build_prompt(r, i, rubrics, include), with_evidence=True)
