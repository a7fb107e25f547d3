"""The ADK eval data model (EvalSet, EvalCase, Invocation, ...), as ADK 2.x reads it.

Differences from ADK, on purpose: snake_case *and* camelCase at every level (ADK's EvalSet
accepts only snake_case at the top). Unknown keys are errors where ADK refuses them, and
where ADK ignores them (EvalSet, EvalCase, SessionInput, InvocationEvent: LenientModel) a
warning naming the key (checker/inputs/ignored.py), then dropped.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, PrivateAttr, field_validator, model_validator

from .base import LenientModel, StrictModel

# ---------------------------------------------------------------- genai shapes


class FunctionCall(StrictModel):
    id: str | None = None
    name: str
    args: dict[str, Any] | None = None
    # Newer genai fields, kept so that recorded events round-trip.
    partial_args: Any = None
    will_continue: bool | None = None


class FunctionResponse(StrictModel):
    id: str | None = None
    name: str
    response: dict[str, Any] | None = None
    will_continue: bool | None = None
    scheduling: Any = None
    parts: Any = None


class Blob(StrictModel):
    mime_type: str | None = None
    data: str | None = None
    display_name: str | None = None


class Part(StrictModel):
    text: str | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None
    inline_data: Blob | None = None
    file_data: dict[str, Any] | None = None
    executable_code: dict[str, Any] | None = None
    code_execution_result: dict[str, Any] | None = None
    thought: bool | None = None
    thought_signature: str | None = None
    video_metadata: dict[str, Any] | None = None
    media_resolution: Any = None
    part_metadata: dict[str, Any] | None = None
    tool_call: Any = None
    tool_response: Any = None
    # In google-genai 2.x; ADK 2.13 writes them (as null) when it dumps every field.
    audio_transcription: Any = None
    media_processing: Any = None
    speech_metadata: Any = None


class Content(StrictModel):
    role: str | None = None
    parts: list[Part] = Field(default_factory=list)


def content_text(content: Content | None) -> str:
    """ADK's get_text_from_content: the truthy text parts joined by newlines."""
    if content is None:
        return ""
    return "\n".join(p.text for p in content.parts if p.text)


def text_content(text: str, role: str) -> Content:
    return Content(role=role, parts=[Part(text=text)])


# ---------------------------------------------------------------- invocations


class IntermediateData(StrictModel):
    tool_uses: list[FunctionCall] = Field(default_factory=list)
    tool_responses: list[FunctionResponse] = Field(default_factory=list)
    # JSON: [["sub_agent", [{"text": "..."}]], ...]
    intermediate_responses: list[tuple[str, list[Part]]] = Field(default_factory=list)


class InvocationEvent(LenientModel):
    author: str
    content: Content | None = None
    grounding_metadata: dict[str, Any] | None = None
    usage_metadata: dict[str, Any] | None = None
    model_version: str | None = None


class InvocationEvents(StrictModel):
    invocation_events: list[InvocationEvent] = Field(default_factory=list)


class RubricContent(StrictModel):
    text_property: str | None = None


class Rubric(StrictModel):
    rubric_id: str
    rubric_content: RubricContent
    description: str | None = None
    type: str | None = None


class AgentDetails(StrictModel):
    name: str
    instructions: str = ""
    tool_declarations: list[Any] = Field(default_factory=list)


class AppDetails(StrictModel):
    agent_details: dict[str, AgentDetails] = Field(default_factory=dict)


class Invocation(StrictModel):
    invocation_id: str = ""
    user_content: Content
    final_response: Content | None = None
    intermediate_data: IntermediateData | InvocationEvents | None = None
    creation_timestamp: float = 0.0
    duration: float | None = None
    model_duration: float | None = None
    tool_duration: float | None = None
    rubrics: list[Rubric] | None = None
    app_details: AppDetails | None = None

    @field_validator("intermediate_data", mode="wrap")
    @classmethod
    def _pick_intermediate_shape(cls, value: Any, handler: Any) -> Any:
        # A payload with invocation_events is InvocationEvents, anything else IntermediateData
        # (ADK's smart union); choosing explicitly keeps error paths exact.
        if isinstance(value, dict):
            if "invocation_events" in value or "invocationEvents" in value:
                return InvocationEvents.model_validate(value)
            return IntermediateData.model_validate(value)
        return handler(value)


def tool_calls(invocation: Invocation) -> list[FunctionCall]:
    """ADK's get_all_tool_calls: tool_uses, or every function_call part of every event."""
    data = invocation.intermediate_data
    if data is None:
        return []
    if isinstance(data, IntermediateData):
        return list(data.tool_uses)
    return [p.function_call for e in data.invocation_events if e.content
            for p in e.content.parts if p.function_call is not None]


def tool_responses(invocation: Invocation) -> list[FunctionResponse]:
    data = invocation.intermediate_data
    if data is None:
        return []
    if isinstance(data, IntermediateData):
        return list(data.tool_responses)
    return [p.function_response for e in data.invocation_events if e.content
            for p in e.content.parts if p.function_response is not None]


def intermediate_texts(invocation: Invocation) -> list[tuple[str, str]]:
    """(author, text) of every intermediate natural-language response, in order."""
    data = invocation.intermediate_data
    out: list[tuple[str, str]] = []
    if isinstance(data, IntermediateData):
        for author, parts in data.intermediate_responses:
            text = "\n".join(p.text for p in parts if p.text)
            if text:
                out.append((author, text))
    elif isinstance(data, InvocationEvents):
        for event in data.invocation_events:
            text = content_text(event.content)
            if text:
                out.append((event.author, text))
    return out


def usage_metadata(invocation: Invocation) -> list[dict[str, Any]]:
    data = invocation.intermediate_data
    if not isinstance(data, InvocationEvents):
        return []
    return [e.usage_metadata for e in data.invocation_events if e.usage_metadata]


# ---------------------------------------------------------------- cases and sets


class SessionInput(LenientModel):
    app_name: str
    user_id: str
    session_id: str | None = None
    state: dict[str, Any] = Field(default_factory=dict)


class UserBehavior(StrictModel):
    name: str
    description: str
    behavior_instructions: list[str] = Field(default_factory=list)
    violation_rubrics: list[str] = Field(default_factory=list)


class UserPersona(StrictModel):
    id: str
    description: str
    behaviors: list[UserBehavior] = Field(default_factory=list)


# ADK 2.13's built-in user personas, by id (their texts: simulation/personas.py, which a
# test keeps in step with these ids). Here so that the data layer imports no stage.
BUILT_IN_PERSONA_IDS = ("EXPERT", "NOVICE", "EVALUATOR")


class ConversationScenario(StrictModel):
    starting_prompt: str
    conversation_plan: str
    user_persona: UserPersona | str | None = None

    @field_validator("user_persona")
    @classmethod
    def _known_persona(cls, value: UserPersona | str | None) -> UserPersona | str | None:
        # As ADK: a string names a built-in persona, and an unknown one is bad input.
        if isinstance(value, str) and value not in BUILT_IN_PERSONA_IDS:
            raise ValueError(f"unknown persona '{value}': the built-in personas are "
                             + ", ".join(BUILT_IN_PERSONA_IDS) + "; or give a persona object "
                             "with id, description and behaviors")
        return value


class EvalCase(LenientModel):
    eval_id: str
    conversation: list[Invocation] | None = None
    conversation_scenario: ConversationScenario | None = None
    session_input: SessionInput | None = None
    creation_timestamp: float = 0.0
    rubrics: list[Rubric] | None = None
    final_session_state: dict[str, Any] | None = None
    # An agents-cli case as written (prompt, reference, context, ...): what its custom_function
    # metrics read. Private: never read from an eval file, never written out.
    _agents_cli_case: dict[str, Any] | None = PrivateAttr(default=None)

    @property
    def agents_cli_case(self) -> dict[str, Any] | None:
        return self._agents_cli_case

    def keep_agents_cli_case(self, raw: dict[str, Any]) -> None:
        """Keep the agents-cli case this one was read from (inputs/agents_cli.py)."""
        self._agents_cli_case = raw

    @model_validator(mode="after")
    def _one_of_conversation_or_scenario(self) -> EvalCase:
        if (self.conversation is None) == (self.conversation_scenario is None):
            raise ValueError(
                "exactly one of 'conversation' and 'conversation_scenario' must be given")
        return self

    @field_validator("eval_id")
    @classmethod
    def _non_empty_id(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("eval_id must not be empty")
        return value


class EvalSet(LenientModel):
    eval_set_id: str
    name: str | None = None
    description: str | None = None
    eval_cases: list[EvalCase]
    creation_timestamp: float = 0.0

    @field_validator("eval_set_id")
    @classmethod
    def _non_empty_set_id(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("eval_set_id must not be empty")
        return value
