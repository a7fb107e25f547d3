"""rubric_based_multi_turn_trajectory_quality_v1: an LLM judge checks the whole conversation's
trajectory (reasoning, tool calls, delegation, replies across turns) against rubrics.

One judge request per run covers every turn; ``num_samples`` samples vote yes/no per rubric (a
tie is no); the run's score is the share of yes. Rubrics: the criterion's, the eval case's
(of type ``TRAJECTORY_QUALITY`` or untyped), and those of type ``TRAJECTORY_QUALITY`` on any
expected or recorded turn. Differences from ADK, on purpose: turn-level trajectory rubrics of
every turn count (ADK uses the last turn's only), tool declarations loaded from JSON work (ADK
crashes on them), and recorded ``tool_uses``/``tool_responses`` are part of the transcript.
"""

from __future__ import annotations

from typing import Any

from ..models.evalset import (Invocation, InvocationEvents, Rubric, content_text,
                              intermediate_texts)
from .machinery.judged import (DATA_NOTE, ask_samples, build_request, data_block, developer_instructions,
                      judge_details, tool_declarations, tool_steps)
from .machinery.rubrics import (RubricProblem, RubricsCriterion, answer_schema, first_failure,
                       merge_rubrics, parser, properties_json, verdict_details, verdicts_score,
                       vote_rubrics)
from .base import InvocationScore, Metric, RunInput, RunScore, ScoringContext

RUBRIC_TYPE = "TRAJECTORY_QUALITY"

PROMPT = """\
You review a whole conversation between a user and an AI agent (possibly several cooperating \
agents), judging the agent's trajectory: how it reasoned, which tools it called and with what \
arguments, how it used their results, how it handed work between agents, and what it replied, \
turn after turn. Assess every property listed, each on its own; do not invent others.

Verdicts:
- "yes": the trajectory fulfils the property, or the property does not apply to this \
conversation.
- "no": the property applies and the trajectory does not fulfil it.

For each property: work out what it requires, find the turns, steps and tool calls that matter \
for it, check them against the user's requests, the agents' instructions and the tool \
definitions, and only then decide.

{data_note}

{data}

Answer with a JSON object {{"verdicts": [...]}} holding exactly one entry per property, in the \
order given: "rubric_id" (copied exactly), "rationale" (a short explanation naming the turns \
that decided it) and "verdict" ("yes" or "no")."""


def _typed(rubrics: list[Rubric] | None) -> list[Rubric]:
    return [r for r in rubrics or [] if r.type and r.type.strip().upper() == RUBRIC_TYPE]


def conversation_rubrics(criterion: RubricsCriterion, run: RunInput) -> list[Rubric]:
    sources: list[tuple[str, list[Rubric]]] = [
        ("the criterion", list(criterion.rubrics)),
        ("the eval case", [r for r in run.case.rubrics or []
                           if r.type is None or r.type.strip().upper() == RUBRIC_TYPE])]
    for n, inv in enumerate(run.expected or [], 1):
        sources.append((f"expected invocation {n}", _typed(inv.rubrics)))
    for n, inv in enumerate(run.actual, 1):
        sources.append((f"invocation {n} of the run", _typed(inv.rubrics)))
    return merge_rubrics(sources)


def transcript_turn(n: int, invocation: Invocation) -> dict[str, Any]:
    turn: dict[str, Any] = {"turn": n, "user": content_text(invocation.user_content)}
    data = invocation.intermediate_data
    if isinstance(data, InvocationEvents):
        steps: list[dict[str, Any]] = []
        for event in data.invocation_events:
            for part in event.content.parts if event.content else []:
                if part.text and not part.thought:
                    steps.append({"author": event.author, "text": part.text})
                if part.function_call is not None:
                    steps.append({"author": event.author, "tool_call": part.function_call.model_dump(
                        mode="json", exclude_none=True)})
                if part.function_response is not None:
                    steps.append({"author": event.author,
                                  "tool_output": part.function_response.model_dump(
                                      mode="json", exclude_none=True)})
        turn["steps"] = steps
    else:  # IntermediateData records no order between texts and tool calls
        turn["tool_calls_and_responses"] = tool_steps(invocation)
        turn["intermediate_responses"] = [{"author": a, "text": t}
                                          for a, t in intermediate_texts(invocation)]
    turn["final_response"] = content_text(invocation.final_response)
    return turn


def build_prompt(run: RunInput, rubrics: list[Rubric]) -> str:
    instructions: dict[str, str] = {}
    tools: dict[str, Any] = {}
    for inv in run.actual:
        instructions.update(developer_instructions(inv.app_details))
        tools.update(tool_declarations(inv.app_details))
    return PROMPT.format(data_note=DATA_NOTE, data=data_block({
        "agent_instructions": instructions or "None given.",
        "agent_tools": tools or "The agents have no tools.",
        "conversation": [transcript_turn(n, inv) for n, inv in enumerate(run.actual, 1)],
        "properties": properties_json(rubrics)}))


class RubricBasedMultiTurnTrajectoryQualityV1(Metric):
    name = "rubric_based_multi_turn_trajectory_quality_v1"
    description = "An LLM judge checks the whole conversation's trajectory against rubrics, yes/no per rubric."
    criterion_model = RubricsCriterion
    needs_reference = False

    async def score(self, criterion: RubricsCriterion, run: RunInput,
                    context: ScoringContext) -> RunScore:
        try:
            rubrics = conversation_rubrics(criterion, run)
        except RubricProblem as exc:
            return RunScore(error=str(exc))
        if not rubrics:
            return RunScore(not_evaluated_reason="no rubrics apply: add rubrics to the criterion, "
                                                 f"or rubrics of type {RUBRIC_TYPE} to the eval case")
        if not run.actual:
            return RunScore(not_evaluated_reason="the run has no conversation to judge")
        request = build_request(criterion, build_prompt(run, rubrics), answer_schema(False))
        samples = await ask_samples(context, request, criterion.judge_model_options.num_samples,
                                    parser(rubrics))
        verdicts = vote_rubrics(rubrics, samples, with_evidence=False)
        details = verdict_details(verdicts, samples)
        note = {"note": "judged with the whole conversation, at the last turn"}
        invocations = [InvocationScore(details=note) for _ in run.actual[:-1]]
        invocations.append(InvocationScore(score=verdicts_score(verdicts), details=details))
        run_details = {**judge_details(criterion),
                       "rubricScores": {v["rubricId"]: v["score"] for v in verdicts}}
        undecided = [f"rubric '{v['rubricId']}': {v['agreement']}" for v in verdicts
                     if v["score"] is None]
        if undecided:
            return RunScore(error="judge failed: " + "; ".join(undecided) + first_failure(details),
                            invocations=invocations, details=run_details)
        return RunScore(score=verdicts_score(verdicts), invocations=invocations,
                        details=run_details)
