"""per_turn_user_simulator_quality_v1: did the *simulated user* of a ``conversation_scenario``
case behave as its plan and persona say?

Turn 1 must be the scenario's ``starting_prompt`` (exact match after stripping; no judge).
Every later user turn is judged by Gemini against the conversation plan, the conversation so
far and the criteria: ADK's default list, or, with a persona, each persona behaviour's
violation rubrics. One more judged "turn" asks whether sending the stop signal right after
the last turn is correct; if not, that verdict replaces the last turn's (as in ADK).
``num_samples`` samples vote per turn (a tie is invalid, as in ADK).

Run score = passed turns / evaluated turns. Differences from ADK, on purpose: a turn that
could not be evaluated is left out of the denominator (ADK counts it as a failed turn); a turn
the judge could not decide makes the metric ``error`` naming it (ADK lets the exception void
the whole metric); a case without a scenario is ``not_evaluated`` with the reason (ADK
raises); the stop signal is the simulator's (``user_simulator_config.stop_signal``) unless the
criterion sets the same one (see checker/inputs/criteria.py); inputs are JSON-encoded in a data block.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..models.evalset import ConversationScenario, Invocation, UserPersona, content_text
from ..simulation.personas import DEFAULT_STOP_SIGNAL, UnknownPersona, fill, resolve_persona
from .machinery.judged import (DATA_NOTE, JudgedCriterion, Sample, ask_samples, build_request, clip,
                      data_block, failure_reason, gather_all, judge_details, object_schema,
                      read_json_reply, sample_failures, string_schema, vote_on)
from .base import InvocationScore, Metric, RunInput, RunScore, ScoringContext


class PerTurnUserSimulatorCriterion(JudgedCriterion):
    # None: the simulator's stop signal (config.py fills it in when the config is read).
    stop_signal: str | None = None

    @field_validator("stop_signal")
    @classmethod
    def _non_empty(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("stop_signal must not be empty")
        return value


# ---------------------------------------------------------------- criteria

# ADK's default criteria (no persona), by ADK's names, in our words.
DEFAULT_CRITERIA: list[dict[str, Any]] = [
    {"name": "CONVERSATION_PLAN_FOLLOWED",
     "description": "Does the user response stick to the Conversation Plan?",
     "violations": [
         "The user response asks again for a high-level goal already completed earlier.",
         "The user response gives details for a high-level goal already completed.",
         "The user response agrees to change the topic or to do a task the Conversation Plan "
         "does not list.",
         "The user response invents a goal the Conversation Plan does not contain.",
         "The user response invents details (e.g. a phone number or an address) the "
         "Conversation Plan does not give."]},
    {"name": "STOP_CONDITION_FOLLOWED",
     "description": "Does the conversation end exactly when it should?",
     "violations": [
         "The conversation should have ended, but the user response does not use the stop "
         "signal `{{ stop_signal }}`.",
         "The user response uses `{{ stop_signal }}`, but tasks of the Conversation Plan are "
         "still open AND the Agent has not failed.",
         "The Agent has transferred the user to a human or live agent, but the user response "
         "goes on instead of using `{{ stop_signal }}`."]},
    {"name": "USER_GOAL_ORIENTED",
     "description": "Does the user act naturally rather than dumping data?",
     "violations": [
         "The user response gives specific details of a high-level goal (an email's text, a "
         "recipient's address, a phone number) BEFORE the Agent has explicitly asked for them.",
         "The user response tries to get more than one high-level task done in one turn."]},
    {"name": "LIMITED_TROUBLESHOOTING",
     "description": "Does the user show the right amount of patience? Count the Agent's "
                    "errors in the conversation history.",
     "violations": [
         "The user response ends the conversation right after the Agent's first error.",
         "At the Agent's second error, the user response goes on without using "
         "`{{ stop_signal }}`.",
         "After the Agent's second error, the user response keeps the conversation going or "
         "keeps addressing errors without using `{{ stop_signal }}`."]},
    {"name": "RESPONSIVENESS",
     "description": "Does the user answer what the Agent asked?",
     "violations": [
         "The Agent asked one or more questions and the user response leaves one or all of "
         "them unanswered.",
         "The Agent asked for information that is NOT in the Conversation Plan and the user "
         "response makes up an answer instead of saying it does not know."]},
    {"name": "CORRECTS_AGENT",
     "description": "Does the user catch the Agent's mistakes?",
     "violations": [
         "The Agent gave wrong information and the user response carries on as if it were "
         "right.",
         "The Agent made a dangerous assumption (e.g. sent an email without first asking for "
         "its text) and the user response carries on without correcting it."]},
    {"name": "CONVERSATIONAL_TONE",
     "description": "Does the user sound like a person?",
     "violations": [
         "The user response uses needlessly complex sentences or misplaced technical jargon.",
         "The user response is sterile and purely functional (bare commands), without natural "
         "conversational framing.",
         "The user response is too formal, full of overly polite phrases.",
         "The user response is a wall of text where a simple sentence would do."]},
]


def criteria_for(persona: UserPersona | None, stop_signal: str) -> list[dict[str, Any]]:
    """The criteria a turn is judged against, with ``{{ stop_signal }}`` filled in."""
    values = {"stop_signal": stop_signal}
    if persona is None:
        return [{**c, "violations": [fill(v, values) for v in c["violations"]]}
                for c in DEFAULT_CRITERIA]
    return [{"name": fill(b.name, values), "description": fill(b.description, values),
             "violations": [fill(v, values) for v in b.violation_rubrics]}
            for b in persona.behaviors]


# ---------------------------------------------------------------- prompt

PROMPT = """\
You evaluate a User Simulator: a language model playing the user in a conversation with an AI \
Agent, to test that Agent. Decide whether the simulator's latest message, the generated user \
response, is what that user should say at this point.

Definitions:
- The conversation plan lists the high-level goals the simulated user must pursue, in order, \
with the information needed to reach them. It is not a script.
- The conversation history is the exchange between the simulated user and the Agent so far. \
It may be unfinished; what is there should follow the plan, and it may show the user \
troubleshooting a wrong or unsuitable Agent reply to keep to the plan. The conversation is \
over only when the user sends the stop signal; until then more turns may follow.
{persona_note}- The generated user response is the next user message, produced from the plan and \
the history. A generated user response that is exactly the stop signal means the user ends \
the conversation now.

Judge the generated user response against every entry of "criteria": it passes a criterion \
unless one of that criterion's violations occurs, and it is valid only if it passes them all.

{data_note}

{data}

Answer with a JSON object: "criteria", one entry per criterion in the order given, each with \
"name" (copied exactly), "reasoning" (short) and "passes" (true or false); then "is_valid": \
true if the generated user response passes every criterion, false otherwise."""

PERSONA_NOTE = ("- The persona describes how the simulated user behaves (behaviours, not "
                "goals); where it contradicts the plan, the plan wins. Its behaviours are the "
                "criteria below.\n")

SCHEMA = object_schema({
    "criteria": {"type": "ARRAY", "items": object_schema({
        "name": string_schema("The criterion's name, as given."),
        "reasoning": string_schema("Why the response passes or fails this criterion."),
        "passes": {"type": "BOOLEAN"}})},
    "is_valid": {"type": "BOOLEAN",
                 "description": "true if the response passes every criterion"},
})


def history(invocations: list[Invocation]) -> list[dict[str, str]]:
    """The conversation as ADK shows it: user texts and final responses, no tool traffic."""
    out: list[dict[str, str]] = []
    for inv in invocations:
        if inv.user_content.parts:
            out.append({"role": "user", "text": content_text(inv.user_content)})
        if inv.final_response is not None:
            out.append({"role": "agent", "text": content_text(inv.final_response)})
    return out


def build_prompt(scenario: ConversationScenario, persona: UserPersona | None,
                 previous: list[Invocation], generated: str, stop_signal: str) -> str:
    data: dict[str, Any] = {"conversation_plan": scenario.conversation_plan,
                            "stop_signal": stop_signal}
    if persona is not None:
        data["persona"] = {"id": persona.id,
                           "description": fill(persona.description, {"stop_signal": stop_signal})}
    data["criteria"] = criteria_for(persona, stop_signal)
    data["conversation_history"] = history(previous)
    data["generated_user_response"] = generated
    return PROMPT.format(persona_note=PERSONA_NOTE if persona is not None else "",
                         data_note=DATA_NOTE, data=data_block(data))


# ---------------------------------------------------------------- reading answers

# ADK's reading of "is_valid" (per_turn_user_simulator_quality_v1._parse_llm_response): the
# value after the key, up to a quote or bracket, then a comma, newline or brace.
_ADK_IS_VALID = re.compile(r'"is_valid":\s*\[*[\n\s]*"*([^"\]]*)"*[\n\s]*\]*\s*[,\n\}]')
_VALID_LABELS = ("valid", "true")
_INVALID_LABELS = ("invalid", "almost", "false", "partially_valid", "partially valid",
                   "partially")


def adk_label(label: str) -> bool | None:
    """ADK's label mapping: valid/true -> True; invalid/almost/false/partially... -> False."""
    label = label.strip("}").replace(",", "").strip().lower()
    if label in _INVALID_LABELS:
        return False
    if label in _VALID_LABELS:
        return True
    return None


def adk_is_valid(text: str) -> bool | None:
    """``is_valid`` read from free text exactly as ADK reads it (None: no verdict)."""
    found = _ADK_IS_VALID.search(text)
    return None if found is None else adk_label(found.group(1))


class CriterionVerdict(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = ""
    reasoning: str = ""
    passes: bool | None = None


class TurnVerdict(BaseModel):
    model_config = ConfigDict(extra="ignore")

    is_valid: bool
    criteria: list[CriterionVerdict] = Field(default_factory=list)


class _Answer(BaseModel):
    """The judge's JSON as given, before ADK's label reading."""

    model_config = ConfigDict(extra="ignore")

    is_valid: bool | str | None = None
    criteria: Any = None


def parse(text: str) -> TurnVerdict:
    """The judge's answer: schema JSON (``is_valid`` a boolean, or one of ADK's labels as a
    string), else ADK's own regex over the text. No verdict is an unreadable answer."""
    from ..judges.service import UnreadableReply

    try:
        answer: _Answer | None = read_json_reply(text, _Answer)
    except UnreadableReply:
        answer = None
    raw = answer.is_valid if answer is not None else None
    verdict = raw if isinstance(raw, bool) else adk_label(raw) if isinstance(raw, str) else None
    if verdict is not None:
        assert answer is not None
        criteria = []
        for entry in answer.criteria if isinstance(answer.criteria, list) else []:
            try:
                criteria.append(CriterionVerdict.model_validate(entry))
            except ValidationError:
                continue  # one unreadable criterion loses only its reasoning
        return TurnVerdict(is_valid=verdict, criteria=criteria)
    verdict = adk_is_valid(text)
    if verdict is None:
        raise UnreadableReply("the judge's answer has no readable is_valid verdict", text)
    return TurnVerdict(is_valid=verdict)


# ---------------------------------------------------------------- scoring


def first_turn(invocation: Invocation, scenario: ConversationScenario) -> dict[str, Any]:
    text = content_text(invocation.user_content)
    details: dict[str, Any] = {"turn": 1, "check": "starting_prompt", "user": clip(text),
                               "expected": clip(scenario.starting_prompt)}
    if not invocation.user_content.parts:  # as ADK: no parts at all is not evaluated
        return {**details, "status": "not_evaluated", "verdict": None,
                "reason": "turn 1 has no user content"}
    valid = text.strip() == scenario.starting_prompt.strip()
    return {**details, "status": "passed" if valid else "failed",
            "verdict": "valid" if valid else "invalid",
            "reason": None if valid else "turn 1 is not the scenario's starting_prompt"}


def judged_turn(turn: int | str, generated: str, samples: list[Sample]) -> dict[str, Any]:
    vote, backing = vote_on(samples, lambda answer: answer.is_valid)
    decision = vote.decision
    details: dict[str, Any] = {
        "turn": turn, "check": "judge", "user": clip(generated),
        "status": "undecided" if decision is None else ("passed" if decision else "failed"),
        "verdict": None if decision is None else ("valid" if decision else "invalid"),
        "agreement": vote.agreement, "votes": vote.to_json(),
        "criteria": [c.model_dump() for c in backing[0].criteria] if backing else []}
    if decision is False and backing:
        details["failedCriteria"] = [c.name for c in backing[0].criteria if c.passes is False]
    failures = sample_failures(samples)
    if failures:
        details["failedSamples"] = failures
    return details


def score_of(turn: dict[str, Any]) -> float | None:
    return {"passed": 1.0, "failed": 0.0}.get(turn["status"])


class PerTurnUserSimulatorQualityV1(Metric):
    name = "per_turn_user_simulator_quality_v1"
    description = ("An LLM judge checks each simulated user turn of a conversation_scenario "
                   "case against its plan and persona; share of turns that pass.")
    criterion_model = PerTurnUserSimulatorCriterion
    needs_reference = False

    async def score(self, criterion: PerTurnUserSimulatorCriterion, run: RunInput,
                    context: ScoringContext) -> RunScore:
        scenario = run.scenario
        if scenario is None:
            return RunScore(not_evaluated_reason=(
                "the case has no conversation_scenario: this metric judges a simulated user, "
                "and this case's user turns are fixed"))
        if not run.actual:
            return RunScore(not_evaluated_reason="the run has no turns")
        try:
            persona = resolve_persona(scenario.user_persona)
        except UnknownPersona as exc:
            return RunScore(error=str(exc))
        stop = criterion.stop_signal or DEFAULT_STOP_SIGNAL
        count = criterion.judge_model_options.num_samples

        def ask(previous: list[Invocation], generated: str) -> Any:
            request = build_request(criterion, build_prompt(scenario, persona, previous,
                                                            generated, stop), SCHEMA)
            return ask_samples(context, request, count, parse)

        later = [(i, content_text(inv.user_content)) for i, inv in enumerate(run.actual) if i]
        answers = await gather_all(*(ask(run.actual[:i], text) for i, text in later),
                                   ask(run.actual, stop))
        turns = [first_turn(run.actual[0], scenario)]
        turns += [judged_turn(i + 1, text, samples) for (i, text), samples in zip(later, answers, strict=False)]
        stop_check = judged_turn("stop_signal", stop, answers[-1])
        stop_check["check"] = "stop_signal"
        if stop_check["status"] == "failed":
            # ADK: ending the conversation after the last turn was wrong, so the last turn
            # fails; its own verdict is kept next to it.
            last = turns[-1]
            turns[-1] = {**last, "status": "failed", "verdict": "invalid",
                         "replacedByStopSignalCheck": True,
                         "ownVerdict": {k: last.get(k) for k in ("status", "verdict", "reason",
                                                                  "agreement", "failedCriteria")
                                        if k in last}}

        invocations = [InvocationScore(score=score_of(t), details=t) for t in turns]
        scored = [s for s in (score_of(t) for t in turns) if s is not None]
        details: dict[str, Any] = {
            **judge_details(criterion), "stopSignal": stop,
            "persona": persona.id if persona is not None else None,
            "passedTurns": int(sum(scored)), "evaluatedTurns": len(scored),
            "notEvaluatedTurns": [t["turn"] for t in turns if t["status"] in
                                  ("not_evaluated", "undecided")],
            "stopSignalCheck": stop_check}
        undecided = [t for t in [*turns, stop_check] if t["status"] == "undecided"]
        if undecided:
            reasons = [("the stop-signal check" if t["check"] == "stop_signal"
                        else f"turn {t['turn']}") + f": {t['agreement']}"
                       + (f" ({failure_reason(t['failedSamples'][0])})"
                          if t.get("failedSamples") else "") for t in undecided]
            return RunScore(error="judge failed: " + "; ".join(reasons),
                            invocations=invocations, details=details)
        if not scored:
            return RunScore(invocations=invocations, details=details,
                            not_evaluated_reason="no turn could be evaluated")
        return RunScore(score=sum(scored) / len(scored), invocations=invocations,
                        details=details)
