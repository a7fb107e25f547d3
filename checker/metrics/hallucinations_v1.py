"""hallucinations_v1: is what the agent says backed by what it was given?

For each response text to check (the final response, plus every intermediate natural-language
response when ``evaluate_intermediate_nl_responses``), one judge call splits it into sentences,
then ``num_samples`` judge calls label every sentence against the context: the developer
instructions, the user prompt, the tool definitions, grounding metadata and the tool calls
and outputs made before that text. Labels: supported, unsupported, contradictory, disputed,
not_applicable (opinions, plans, greetings, questions, arithmetic). Each sentence's label is a
majority vote, good (supported / not_applicable) against bad, a tie counting as bad.

Invocation score = good sentences / all sentences of the invocation; run score = mean over the
invocations that had text. Differences from ADK, on purpose: ``num_samples`` is honoured (ADK
makes one sample), sentences are weighted equally (ADK averages per text), the agent's own
earlier statements are not context (in ADK an unsupported claim can "support" a later one),
and recorded ``intermediate_data`` (tool_uses / tool_responses) counts as context (ADK sees no
tool calls there).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from ..judges.voting import majority
from ..models.evalset import (Invocation, InvocationEvents, content_text, intermediate_texts,
                              tool_calls, tool_responses)
from .machinery.judged import (DATA_NOTE, JudgedCriterion, Sample, app_details_of, ask_samples,
                      failure_reason, gather_all,
                      build_request, clip, data_block, developer_instructions, grounding_metadata,
                      judge_details, object_schema, pair_tool_steps, read_json_reply,
                      sample_failures, string_schema, tool_declarations)
from .base import InvocationScore, Metric, RunInput, RunScore, ScoringContext

GOOD = ("supported", "not_applicable")
BAD = ("unsupported", "contradictory", "disputed")
# The label shown for a sentence is the commonest on the winning side; ties go to the first here.
_SHOWN_FIRST = ("contradictory", "disputed", "unsupported", "supported", "not_applicable")
Label = Literal["supported", "unsupported", "contradictory", "disputed", "not_applicable"]


class HallucinationsCriterion(JudgedCriterion):
    evaluate_intermediate_nl_responses: bool = False


# ---------------------------------------------------------------- prompts and answers

SEGMENT_PROMPT = """\
Split the text of an AI agent's response into sentences, so that each sentence can be \
fact-checked on its own.

Rules:
- Copy every sentence exactly as written; do not fix, shorten or reword anything.
- Each bullet point or numbered item, and each nested item, is a sentence of its own.
- A table stays together as one sentence.
- Leave out pieces made only of symbols or markup (separators, lone emoji, bullets).

{data_note}

{data}

Answer with a JSON object {{"sentences": [...]}}, the sentences in their original order."""

LABEL_PROMPT = """\
You check whether each sentence of an AI agent's response is backed by the context the agent \
had: developer instructions, the user's prompt, tool definitions, grounding metadata, and the \
tool calls it made with their outputs. Label every sentence with one of:

- "supported": an excerpt of the context fully entails the sentence.
- "unsupported": the context neither entails nor contradicts it (the claim came from nowhere).
- "contradictory": the context contradicts it.
- "disputed": the context holds evidence both for and against it.
- "not_applicable": it makes no factual claim to check: an opinion, a plan of what the agent \
will do, a greeting, a question, a disclaimer, or plain arithmetic.

Be strict. Use no outside knowledge beyond the trivially obvious. A tool output counts as \
evidence only if the call that produced it is a sensible call for the request. Text the \
grounding metadata attributes to a source counts as supported. The whole response is given \
for reference so that each sentence can be read in its place; label only the numbered \
sentences.

{data_note}

{data}

Answer with a JSON object {{"labels": [...]}} holding one entry per sentence: "index" (the \
sentence's number), "label", "rationale" (short), "supporting_excerpt" and \
"contradicting_excerpt" (quoted from the context, or "" when there is none)."""

SEGMENT_SCHEMA = object_schema({"sentences": {"type": "ARRAY", "items": string_schema()}})
LABEL_SCHEMA = object_schema({"labels": {"type": "ARRAY", "items": object_schema({
    "index": {"type": "INTEGER"},
    "label": string_schema(None, GOOD[:1] + BAD + GOOD[1:]),
    "rationale": string_schema(),
    "supporting_excerpt": string_schema(),
    "contradicting_excerpt": string_schema(),
})}})


class _Sentences(BaseModel):
    model_config = ConfigDict(extra="ignore")
    sentences: list[str]


class _SentenceLabel(BaseModel):
    model_config = ConfigDict(extra="ignore")
    index: int
    label: Label
    rationale: str = ""
    supporting_excerpt: str | None = ""
    contradicting_excerpt: str | None = ""

    @field_validator("label", mode="before")
    @classmethod
    def _normalise(cls, value: object) -> object:
        if isinstance(value, str):
            return value.strip().lower().replace(" ", "_").replace("-", "_")
        return value


class _Labels(BaseModel):
    model_config = ConfigDict(extra="ignore")
    labels: list[dict[str, Any]]


def parse_sentences(text: str) -> list[str]:
    return [s.strip() for s in read_json_reply(text, _Sentences).sentences if s.strip()]


def parse_labels(text: str) -> dict[int, _SentenceLabel]:
    """{sentence number: label}. An entry that cannot be read only loses its own sentence."""
    found: dict[int, _SentenceLabel] = {}
    for raw in read_json_reply(text, _Labels).labels:
        try:
            entry = _SentenceLabel.model_validate(raw)
        except ValidationError:
            continue
        found.setdefault(entry.index, entry)
    if not found:
        from ..judges.service import UnreadableReply

        raise UnreadableReply("the judge's answer has no readable sentence label", text)
    return found


# ---------------------------------------------------------------- what is checked, against what


def _base_context(run: RunInput, index: int) -> dict[str, Any]:
    details = app_details_of(run, index)
    invocation = run.actual[index]
    return {"developer_instructions": developer_instructions(details) or "None given.",
            "user_prompt": content_text(invocation.user_content),
            "tool_definitions": tool_declarations(details) or "Agent has no tools.",
            "grounding_metadata": grounding_metadata(invocation) or "None."}


def texts_to_check(invocation: Invocation, intermediate: bool) -> list[dict[str, Any]]:
    """Each text to check with the tool steps made before it: {kind, author, text, steps}."""
    out: list[dict[str, Any]] = []
    data = invocation.intermediate_data
    if intermediate and isinstance(data, InvocationEvents):
        calls: list[Any] = []
        responses: list[Any] = []
        for event in data.invocation_events:
            text = content_text(event.content)
            if text and event.author != "user":
                out.append({"kind": "intermediate", "author": event.author, "text": text,
                            "steps": pair_tool_steps(calls, responses)})
            for part in event.content.parts if event.content else []:
                if part.function_call is not None:
                    calls.append(part.function_call)
                if part.function_response is not None:
                    responses.append(part.function_response)
    elif intermediate:  # IntermediateData does not record the order of texts and tool calls
        steps = pair_tool_steps(tool_calls(invocation), tool_responses(invocation))
        out += [{"kind": "intermediate", "author": author, "text": text, "steps": steps}
                for author, text in intermediate_texts(invocation)]
    final = content_text(invocation.final_response)
    if final.strip():
        out.append({"kind": "final", "author": None, "text": final,
                    "steps": pair_tool_steps(tool_calls(invocation), tool_responses(invocation))})
    return out


# ---------------------------------------------------------------- scoring


class _Step:
    def __init__(self, item: dict[str, Any]):
        self.item = item
        self.sentences: list[str] | None = None
        self.segment_error: Sample | None = None
        self.samples: list[Sample] = []


class HallucinationsV1(Metric):
    name = "hallucinations_v1"
    description = "An LLM judge labels each sentence of the response as supported by the context or not."
    criterion_model = HallucinationsCriterion
    needs_reference = False

    async def _check(self, criterion: HallucinationsCriterion, run: RunInput, index: int,
                     step: _Step, context: ScoringContext) -> None:
        base = _base_context(run, index)
        seg = build_request(criterion, SEGMENT_PROMPT.format(
            data_note=DATA_NOTE, data=data_block({"response": step.item["text"]})), SEGMENT_SCHEMA)
        [segmented] = await ask_samples(context, seg, 1, parse_sentences)
        if segmented.error is not None:
            step.segment_error = segmented
            return
        step.sentences = segmented.value
        if not step.sentences:
            return
        label = build_request(criterion, LABEL_PROMPT.format(data_note=DATA_NOTE, data=data_block({
            **base, "tool_calls_and_outputs": step.item["steps"] or "No tool was called.",
            "response": step.item["text"],
            "sentences": [{"index": i, "sentence": s} for i, s in enumerate(step.sentences, 1)],
        })), LABEL_SCHEMA)
        step.samples = await ask_samples(context, label, criterion.judge_model_options.num_samples,
                                         parse_labels)

    async def score(self, criterion: HallucinationsCriterion, run: RunInput,
                    context: ScoringContext) -> RunScore:
        plan = [[_Step(item) for item in texts_to_check(
                    inv, criterion.evaluate_intermediate_nl_responses)] for inv in run.actual]
        await gather_all(*(self._check(criterion, run, i, step, context)
                               for i, steps in enumerate(plan) for step in steps))
        per_invocation: list[InvocationScore] = []
        undecided: list[str] = []
        for n, steps in enumerate(plan, 1):
            good = total = 0
            shown_steps, unsupported = [], []
            for step in steps:
                shown: dict[str, Any] = {"kind": step.item["kind"], "text": clip(step.item["text"])}
                if step.item["author"]:
                    shown["author"] = step.item["author"]
                if step.segment_error is not None:
                    shown["segmentationFailed"] = step.segment_error.failure_json()
                    undecided.append(f"invocation {n}: splitting the {step.item['kind']} response "
                                     f"failed ({failure_reason(shown['segmentationFailed'])})")
                    shown_steps.append(shown)
                    continue
                sentences = []
                for i, sentence in enumerate(step.sentences or [], 1):
                    answers = [None if s.error else s.value.get(i) for s in step.samples]
                    vote = majority([None if a is None else a.label in GOOD for a in answers])
                    decision = vote.decision
                    backing = [a for a in answers if a is not None and decision is not None
                               and (a.label in GOOD) == decision]
                    counts = Counter(a.label for a in backing)
                    label = min(counts, key=lambda x: (-counts[x], _SHOWN_FIRST.index(x))) if counts else None
                    first = next((a for a in backing if a.label == label), None)
                    entry = {"sentence": clip(sentence, 500), "label": label,
                             "agreement": vote.agreement, "votes": vote.to_json(),
                             "rationale": first.rationale if first else None}
                    if first is not None and (first.supporting_excerpt or first.contradicting_excerpt):
                        entry["excerpt"] = clip(first.contradicting_excerpt or first.supporting_excerpt
                                                or "", 500)
                    sentences.append(entry)
                    if decision is None:
                        undecided.append(f"invocation {n}, sentence {i}: {vote.agreement}")
                        continue
                    total += 1
                    good += int(decision)
                    if not decision:
                        unsupported.append({"sentence": clip(sentence, 500), "label": label})
                shown["sentences"] = sentences
                failures = sample_failures(step.samples)
                if failures:
                    shown["failedSamples"] = failures
                shown_steps.append(shown)
            per_invocation.append(InvocationScore(
                score=good / total if total else None,
                details={"supported": good, "sentences": total, "unsupported": unsupported,
                         "steps": shown_steps}))
        scored = [i.score for i in per_invocation if i.score is not None]
        details = {**judge_details(criterion),
                   "sentences": sum(i.details["sentences"] for i in per_invocation),
                   "unsupportedSentences": sum(len(i.details["unsupported"]) for i in per_invocation)}
        if undecided:
            reasons = [failure_reason(f) for inv in per_invocation for st in inv.details["steps"]
                       for f in st.get("failedSamples", [])]
            return RunScore(error="judge failed: " + "; ".join(undecided[:5])
                            + (f" (+{len(undecided) - 5} more)" if len(undecided) > 5 else "")
                            + (f" ({reasons[0]})" if reasons else ""),
                            invocations=per_invocation, details=details)
        if not scored:
            return RunScore(invocations=per_invocation, details=details,
                            not_evaluated_reason="the agent's responses contain no sentence to check")
        return RunScore(score=sum(scored) / len(scored), invocations=per_invocation, details=details)
