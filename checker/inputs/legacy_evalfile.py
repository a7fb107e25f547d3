"""ADK's legacy eval file formats, converted to an EvalSet.

The formats, as ADK reads them:
- the ``.test.json`` query list: ``[{"query", "reference", "expected_tool_use": [{"tool_name",
  "tool_input"}], "expected_intermediate_agent_responses": [{"author", "text"}]}]``; the whole
  file is one multi-turn eval case (ADK-TS, ``@iqai/adk``, makes a case of each item: the
  file says so in a note);
- the old eval-set list: ``[{"name", "data": [<query turn>...], "initial_session": {...}}]``.
ADK-TS also reads a single query object (not in a list) as a one-turn case, and expected
tool uses written as its FunctionCalls (``{"name", "args"}``); google-adk reads neither, so
they are read as ADK-TS reads them.
A legacy file picks up ``initial-session.json`` or ``initial.session.json`` beside it (ADK's
``initial_session_file``; see initial_session.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, model_validator

from ..safety.confine import confined
from ..errors import InputError
from .initial_session import InitialSession, LoadedSession, find_beside, load_initial_session
from ..models.base import LenientModel
from ..models.evalset import (
    Content,
    EvalCase,
    EvalSet,
    FunctionCall,
    IntermediateData,
    Invocation,
    Part,
    SessionInput,
)
from .ignored import merge_notes
from .validation import describe_validation_error, validate


class LegacyToolUse(LenientModel):
    tool_name: str
    tool_input: dict[str, Any] = Field(default_factory=dict)
    mock_tool_output: Any = None

    @model_validator(mode="before")
    @classmethod
    def _function_call(cls, data: Any) -> Any:
        """ADK-TS's spelling, a FunctionCall ``{"name", "args"}`` (google-adk has no reading
        of it: a KeyError), as the same tool use."""
        if isinstance(data, dict) and not {"tool_name", "toolName"} & data.keys() and "name" in data:
            data = {("tool_name" if k == "name" else "tool_input" if k == "args" else k): v
                    for k, v in data.items()}
        return data


class LegacyAgentResponse(LenientModel):
    author: str
    text: str


class LegacyTurn(LenientModel):
    query: str
    reference: str = ""
    expected_tool_use: list[LegacyToolUse] = Field(default_factory=list)
    expected_intermediate_agent_responses: list[LegacyAgentResponse] = Field(default_factory=list)


class LegacyCase(LenientModel):
    name: str
    data: list[LegacyTurn]
    initial_session: InitialSession | None = None
    # Not read by ADK (it drops it silently): read here as the initial session's state.
    initial_state: dict[str, Any] | None = None


def _turn_to_invocation(turn: LegacyTurn, index: int) -> Invocation:
    return Invocation(
        invocation_id=f"turn-{index + 1}",
        user_content=Content(role="user", parts=[Part(text=turn.query)]),
        final_response=Content(role="model", parts=[Part(text=turn.reference)]),
        intermediate_data=IntermediateData(
            tool_uses=[FunctionCall(name=t.tool_name, args=t.tool_input)
                       for t in turn.expected_tool_use],
            intermediate_responses=[(r.author, [Part(text=r.text)])
                                    for r in turn.expected_intermediate_agent_responses],
        ),
    )


def _session_input(initial: InitialSession | None) -> SessionInput | None:
    if initial is None or not (initial.state or initial.app_name or initial.user_id):
        return None
    return SessionInput(app_name=initial.app_name, user_id=initial.user_id, state=initial.state)


def _legacy_stem(path: Path) -> str:
    name = path.name
    for suffix in (".test.json", ".evalset.json", "_evalset.json", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def _with_initial_state(legacy: LegacyCase, initial: InitialSession | None, display: str,
                        i: int, notes: list[str]) -> InitialSession | None:
    """A case's ``initial_state`` (which ADK drops) as its initial session's state."""
    session = legacy.initial_session or initial
    if legacy.initial_state is None:
        return session
    if session is not None and session.state and session.state != legacy.initial_state:
        raise InputError("both initial_state and initial_session.state are given", file=display,
                         path=f"$[{i}].initial_state", fix="keep one of them")
    notes.append(f"{display}: $[{i}].initial_state: read as the case's initial session state "
                 "(adk eval drops this key and starts with an empty state)")
    base = session or InitialSession()
    return base.model_copy(update={"state": legacy.initial_state})


def query_list_note(display: str, turns: int, case_id: str) -> list[str]:
    """What a query list of several turns is read as, where ADK-TS reads it otherwise."""
    if turns < 2:
        return []
    return [f"{display}: a list of {turns} query turns: read as google-adk reads it, one eval "
            f"case '{case_id}' of {turns} turns in one session; ADK-TS's AgentEvaluator "
            "(@iqai/adk) reads each item as a case of its own (to evaluate them apart, write "
            "an eval set with a case each)"]


def convert_legacy(data: list[Any] | dict[str, Any], path: Path, display: str,
                   initial: InitialSession | None, notes: list[str] | None = None) -> EvalSet:
    """Convert either legacy list format into an EvalSet (ADK's migrate_eval_data_to_new_schema);
    ``data`` a single query object (ADK-TS's one-turn file) reads as a list of it.

    Unlike ADK, ids are deterministic: the eval set id and (for a query list) the eval id are
    the file's name without its extension, instead of a random uuid and the full path.
    """
    stem = _legacy_stem(path)
    notes = notes if notes is not None else []
    if isinstance(data, dict):
        said: list[str] = []
        turn = validate(LegacyTurn, data, display, notes=said)
        notes.extend(merge_notes(said))
        case = EvalCase(eval_id=stem, conversation=[_turn_to_invocation(turn, 0)],
                        session_input=_session_input(initial))
        return EvalSet(eval_set_id=stem, name=stem, eval_cases=[case])
    if not data:
        raise InputError("the eval file holds an empty list: no eval cases", file=display,
                         path="$", fix="add at least one query turn")
    if all(isinstance(item, dict) and "data" in item for item in data):
        cases = []
        said = []
        seen: dict[str, int] = {}
        for i, item in enumerate(data):
            legacy = validate(LegacyCase, item, display, prefix=(i,), notes=said)
            if legacy.name in seen:  # the name becomes the eval id: one case per id
                raise InputError(f"duplicate name '{legacy.name}' (also at $[{seen[legacy.name]}].name)",
                                 file=display, path=f"$[{i}].name", fix="give each case its own name")
            seen[legacy.name] = i
            session = _session_input(_with_initial_state(legacy, initial, display, i, said))
            try:
                cases.append(EvalCase(
                    eval_id=legacy.name,
                    conversation=[_turn_to_invocation(t, k) for k, t in enumerate(legacy.data)],
                    session_input=session))
            except ValidationError as exc:  # e.g. an empty name: not a usable eval id
                where, message, fix = describe_validation_error(exc, EvalCase)
                raise InputError(f"name {legacy.name!r}: {message}", file=display,
                                 path=f"$[{i}].name", fix=fix or "give the case a name") from None
        notes.extend(merge_notes(said))
        return EvalSet(eval_set_id=stem, name=stem, eval_cases=cases)
    said = []
    turns = [validate(LegacyTurn, item, display, prefix=(i,), notes=said)
             for i, item in enumerate(data)]
    notes.extend([*merge_notes(said), *query_list_note(display, len(turns), stem)])
    case = EvalCase(eval_id=stem, conversation=[_turn_to_invocation(t, k) for k, t in enumerate(turns)],
                    session_input=_session_input(initial))
    return EvalSet(eval_set_id=stem, name=stem, eval_cases=[case])


def legacy_session(eval_file: Path, display: str, initial_session_file: Path | None,
                   confine: Path | None = None) -> LoadedSession | None:
    """The initial session a legacy file runs with: the file given, else one beside it."""
    if initial_session_file is not None:
        return load_initial_session(initial_session_file)
    beside = find_beside(eval_file, display)
    if beside:
        confined(beside[0], confine, "this initial session file")
    return load_initial_session(*beside) if beside else None
