"""final_response_match_v2: an LLM judge decides whether the agent's final answer is a valid
answer, given the reference answer (semantic equivalence, tolerant of format).

Per invocation ``num_samples`` judge samples vote valid/invalid (a tie is invalid, as in ADK);
the invocation scores 1 or 0 and the run's score is valid / evaluated. Differences from ADK,
on purpose: the user prompt shown is the *actual* invocation's (ADK shows the expected one),
inputs are JSON-encoded rather than pasted raw, the verdict comes back as schema-checked JSON
instead of being fished out with a case-sensitive regex, and a failed sample does not void the
invocation when the others decide it (see checker/judges/voting.py).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict

from ..models.evalset import content_text
from .machinery.judged import (DATA_NOTE, LOWERED, JudgedCriterion, ask_samples, build_request, clip,
                      data_block, failure_reason, gather_all, judge_details, object_schema,
                      read_json_reply, response_text, sample_failures, string_schema, vote_on)
from .base import InvocationScore, Metric, RunInput, RunScore, ScoringContext
from .base import pair_invocations, reference_problem


class FinalResponseMatchV2Criterion(JudgedCriterion):
    pass


class _Verdict(BaseModel):
    model_config = ConfigDict(extra="ignore")

    reasoning: str = ""
    verdict: Annotated[Literal["valid", "invalid"], LOWERED]


SCHEMA = object_schema({
    "reasoning": string_schema("Short explanation of the decision."),
    "verdict": string_schema("Whether the agent response is a valid answer.", ["valid", "invalid"]),
})

PROMPT = """\
You grade answers given by an AI agent. The agent may have used tools (API calls) or answered \
in plain language. Your only question: is the agent's answer a valid, correct answer to the \
user's request, judged against a reference answer that a careful human wrote?

How to decide:
- Compare meaning, not wording or layout. Abbreviations, a list where the reference has a \
sentence, "1000000" against "1,000,000", a table against prose: all acceptable when the same key \
facts are there. For tables, compare the key entities and values.
- Extra information in the agent's answer is acceptable unless it contradicts the reference or \
the request.
- When the reference found an answer, an agent answer claiming the information is unavailable \
or cannot be found is invalid.
- Trust the reference for values read from data (tables, CSV files) and for computed results \
(arithmetic, dates).
- Units must agree: 100 miles is not 100 kilometres.
- Rounding: a value that rounds to the reference at the reference's precision is acceptable \
(0.798 for 0.80); a value that does not is invalid (0.7 for 0.80).

{data_note}

{data}

Answer with a JSON object: "reasoning", a short explanation, then "verdict", exactly "valid" or \
"invalid". Be decisive."""


def build_prompt(user_prompt: str, agent_response: str, reference: str) -> str:
    return PROMPT.format(data_note=DATA_NOTE, data=data_block({
        "user_prompt": user_prompt, "agent_response": agent_response,
        "reference_response": reference}))


def parse(text: str) -> _Verdict:
    return read_json_reply(text, _Verdict)


class FinalResponseMatchV2(Metric):
    name = "final_response_match_v2"
    description = "An LLM judge decides whether the final response is a valid answer given the reference."
    criterion_model = FinalResponseMatchV2Criterion

    async def score(self, criterion: FinalResponseMatchV2Criterion, run: RunInput,
                    context: ScoringContext) -> RunScore:
        problem = reference_problem(run)
        if problem:
            return problem
        samples_per_item = criterion.judge_model_options.num_samples
        per_invocation: list[InvocationScore] = []
        undecided: list[str] = []
        requests = []
        for actual, expected in pair_invocations(run):
            response = response_text(actual, criterion.include_intermediate_responses_in_final)
            reference = content_text(expected.final_response)
            prompt = build_prompt(content_text(actual.user_content), response, reference)
            requests.append((response, reference, build_request(criterion, prompt, SCHEMA)))
        all_samples = await gather_all(*(ask_samples(context, req, samples_per_item, parse)
                                             for _, _, req in requests))
        for n, ((response, reference, _), samples) in enumerate(zip(requests, all_samples, strict=False), 1):
            vote, backing = vote_on(samples, lambda answer: answer.verdict == "valid")
            decision = vote.decision
            details = {"verdict": None if decision is None else ("valid" if decision else "invalid"),
                       "agreement": vote.agreement, "votes": vote.to_json(),
                       "rationale": backing[0].reasoning if backing else None,
                       # the keys response_match_score uses, so reports show both texts
                       "actual": clip(response), "expected": clip(reference)}
            failures = sample_failures(samples)
            if failures:
                details["failedSamples"] = failures
            if decision is None:
                undecided.append(f"invocation {n}: {vote.agreement} ({failure_reason(failures[0])})")
            per_invocation.append(InvocationScore(
                score=None if decision is None else float(decision), details=details))
        decided = [i.score for i in per_invocation if i.score is not None]
        details = {**judge_details(criterion), "valid": int(sum(decided)), "evaluated": len(decided)}
        if undecided:
            return RunScore(error="judge failed: " + "; ".join(undecided),
                            invocations=per_invocation, details=details)
        return RunScore(score=sum(decided) / len(decided) if decided else None,
                        invocations=per_invocation, details=details,
                        not_evaluated_reason=None if decided else "no invocation to judge")
