"""rubric_based_tool_use_quality_v1: an LLM judge checks the agent's tool use against rubrics.

One yes/no verdict per rubric per invocation, with a rationale; ``num_samples`` samples vote
per rubric (a tie is no). The judge sees the available tools, the user's prompt and the tool
calls with their responses, not the final answer. Which rubrics apply where, and the fixes of
ADK's rubric bugs, are described in checker/metrics/rubrics.py.
"""

from __future__ import annotations

from ..models.evalset import Rubric, content_text
from .machinery.judged import DATA_NOTE, app_details_of, data_block, tool_declarations
from .machinery.rubrics import RubricsCriterion, properties_json, score_rubrics, step_inputs
from .base import Metric, RunInput, RunScore, ScoringContext

RUBRIC_TYPE = "TOOL_USE_QUALITY"

PROMPT = """\
You review how an AI agent used its tools while handling one user request, one property at a \
time. Each property describes something about the tool calls: which tools were chosen, their \
arguments, their order, how their results were used. Assess every property listed, each on its \
own, and drop none.

Verdicts:
- "yes": the tool use fulfils the property, or the property does not apply to this request.
- "no": the property applies and the tool use does not fulfil it.

For each property: restate to yourself what it requires, find the tool calls, arguments and \
results that matter for it, check them carefully against the user's request and the tool \
definitions, review your reasoning, and only then decide.

{data_note}

{data}

Answer with a JSON object {{"verdicts": [...]}} holding exactly one entry per property, in the \
order given: "rubric_id" (copied exactly), "rationale" (a short explanation) and "verdict" \
("yes" or "no")."""


def build_prompt(run: RunInput, index: int, rubrics: list[Rubric]) -> str:
    invocation = run.actual[index]
    return PROMPT.format(data_note=DATA_NOTE, data=data_block({
        "available_tools": tool_declarations(app_details_of(run, index)) or "Agent has no tools.",
        "user_prompt": content_text(invocation.user_content),
        "tool_calls_and_responses": step_inputs(invocation),
        "properties": properties_json(rubrics)}))


class RubricBasedToolUseQualityV1(Metric):
    name = "rubric_based_tool_use_quality_v1"
    description = "An LLM judge checks the tool calls against rubrics, yes/no per rubric."
    criterion_model = RubricsCriterion
    needs_reference = False

    async def score(self, criterion: RubricsCriterion, run: RunInput,
                    context: ScoringContext) -> RunScore:
        return await score_rubrics(criterion, run, context, RUBRIC_TYPE, build_prompt,
                                   with_evidence=False)
