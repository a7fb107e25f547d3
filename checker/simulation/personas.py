"""User personas: ADK's built-in EXPERT, NOVICE and EVALUATOR, and custom ones.

One definition for both sides: the user simulator follows a persona's behaviours
(``behavior_instructions``), and ``per_turn_user_simulator_quality_v1`` judges each
simulated turn against the same behaviours' ``violation_rubrics``.

The built-in personas have ADK 2.13's ids, behaviours (names, order, one rubric per ADK
rubric) and meaning, written in our own words. Behaviour texts may contain
``{{ stop_signal }}`` (and, in custom personas, other ``{{ name }}`` placeholders of the
prompt); :func:`fill` replaces the known names and leaves anything else as written, where
ADK renders the text as a Jinja template (and fails on stray braces).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..models.evalset import UserBehavior, UserPersona

DEFAULT_STOP_SIGNAL = "</finished>"

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


class UnknownPersona(ValueError):
    """A scenario names a persona id that is not built in."""


def fill(text: str, values: Mapping[str, str]) -> str:
    """``text`` with each ``{{ name }}`` of ``values`` replaced; other text kept as is."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def _behavior(name: str, description: str, instructions: list[str],
              rubrics: list[str]) -> UserBehavior:
    return UserBehavior(name=name, description=description, behavior_instructions=instructions,
                        violation_rubrics=rubrics)


_REPEATS_DONE_GOAL = "The user response asks again for a high-level goal already completed earlier."
_DETAILS_FOR_DONE_GOAL = "The user response gives details for a high-level goal already completed."
_ONE_TASK_PER_TURN = "The user response tries to get more than one high-level task done in one turn."
_STOP = "{{ stop_signal }}"

ADVANCE_DETAIL_ORIENTED = _behavior(
    "Advance when the Agent succeeds",
    "The user response follows the Conversation Plan. When it starts a new request it gives "
    "everything needed to achieve that high-level goal.",
    ["When the Agent succeeds, make the next request of the Conversation Plan.",
     "Skip requests the Agent has already fulfilled.",
     "When making a new request, state the high-level goal to achieve next together with "
     "every detail needed to achieve it."],
    [_REPEATS_DONE_GOAL, _DETAILS_FOR_DONE_GOAL,
     "The user response agrees to change the topic or to do a task the Conversation Plan "
     "does not list.",
     "The user response invents a goal the Conversation Plan does not contain.",
     "The user response invents details (e.g. a phone number or an address) the Conversation "
     "Plan does not give.",
     "The user response states only the high-level goal, so the Agent has to ask for the "
     "details.",
     _ONE_TASK_PER_TURN])

ADVANCE_GOAL_ORIENTED = _behavior(
    "Advance when the Agent succeeds, goal first",
    "The user response follows the Conversation Plan as far as possible and may deviate when "
    "the Agent asks for something. The user starts with high-level goals and expects the "
    "Agent to ask for the details.",
    ["When the Agent succeeds, make the next request of the Conversation Plan.",
     "Skip requests the Agent has already fulfilled.",
     "When making a request, state only the high-level goal to achieve next.",
     "Do not volunteer details of the goal: the Agent must ask for them."],
    [_REPEATS_DONE_GOAL, _DETAILS_FOR_DONE_GOAL,
     "The user response invents a goal found neither in the Conversation Plan nor in the "
     "Agent's messages.",
     "The user response invents details (e.g. a phone number or an address) found neither in "
     "the Conversation Plan nor in the Agent's messages.",
     "The user response gives specific details of a high-level goal (an email's text, a "
     "recipient's address, a phone number) BEFORE the Agent has asked for them.",
     _ONE_TASK_PER_TURN])

ANSWER_RELEVANT_ONLY = _behavior(
    "Answer only relevant questions",
    "The user does not answer questions unrelated to the high-level goals of the Conversation "
    "Plan (e.g. \"How is your day going?\"). When none of the Agent's questions is relevant, "
    "the user steers back to the plan (e.g. \"Please stick to writing the email.\").",
    ["Answer the Agent's questions only with information from the Conversation Plan.",
     "Do not give information the Agent did not explicitly ask for.",
     "When you lack the information the Agent asks for, say so; never make up information "
     "that is not in the Conversation Plan.",
     "Do not answer questions unrelated to the high-level goals of the Conversation Plan."],
    ["The Agent asked a question unrelated to the high-level goal and the user response "
     "answers it."])

ANSWER_ALL = _behavior(
    "Answer all questions",
    "The user addresses EVERY question the Agent asked; e.g. to \"How is your day going?\" "
    "the user replies.",
    ["Answer the Agent's questions only with information from the Conversation Plan.",
     "Do not give information the Agent did not explicitly ask for.",
     "When you lack the information the Agent asks for, say so and do not make it up: admit "
     "you do not know."],
    ["The Agent asked one or more questions and the user response leaves one or all of them "
     "unanswered.",
     "The Agent asked for information that is NOT in the Conversation Plan and the user "
     "response makes up an answer instead of saying it does not know (e.g. \"I don't have "
     "that info.\")."])

CORRECT_AGENT = _behavior(
    "Correct the Agent when it makes a mistake",
    "The user notices the Agent's mistakes and corrects them.",
    ["Challenge statements of the Agent that are illogical or wrong.",
     "When the Agent performed a wrong operation, ask it to fix it."],
    ["The Agent gave wrong information and the user response carries on as if it were right.",
     "The Agent made a dangerous assumption (e.g. sent an email without first asking for its "
     "text) and the user response carries on without correcting it."])

DO_NOT_CORRECT_AGENT = _behavior(
    "Do not correct the Agent",
    "The user ends the conversation when the Agent says something illogical or wrong.",
    [f"When the Agent says something illogical or wrong, end the conversation with `{_STOP}`."],
    ["The Agent makes a mistake or an assumption and the user response corrects it."])

TROUBLESHOOT_ONCE = _behavior(
    "Troubleshoot once (if needed)",
    "The user troubleshoots the Agent at most ONCE. Troubleshooting means helping the Agent "
    "after it failed to carry out an action (e.g. called a function wrongly) or failed to give "
    "a response the Conversation Plan expects; answering a clarifying question of the Agent is "
    "not troubleshooting. Count the Agent's failures in the conversation history.",
    ["The first time the Agent fails a request, troubleshoot the failure.",
     "Troubleshoot only ONCE per conversation: do NOT troubleshoot again when the conversation "
     "history shows you already troubleshot a request."],
    ["The user response ends the conversation right after the Agent's first failure.",
     f"At the Agent's second failure, the user response goes on without using `{_STOP}`.",
     "After the Agent's second failure, the user response keeps the conversation going or "
     f"keeps addressing failures without using `{_STOP}`."])

_STOP_CONDITIONS = (
    "- the Agent has confirmed that every high-level goal of the Conversation Plan is done;\n"
    "- the Agent has transferred the user to a human or live agent;\n")
_FAILURE = ("The Agent fails when it cannot carry out an action (e.g. calls a function "
            "wrongly) or does not give a response the Conversation Plan expects; asking a "
            "clarifying question is not a failure.")
_END_INSTRUCTIONS = [
    "When ending because the Agent has completed every high-level goal, wait until the Agent "
    "has confirmed that all of them are done.",
    f"Output `{_STOP}` in your response to signal that the conversation with the Agent is over."]
_END_RUBRICS = [
    f"The conversation meets a stop condition above, but the user response does not use `{_STOP}`.",
    f"The user response uses `{_STOP}` but the conversation meets none of the stop conditions above."]

END_LIMITED_TROUBLESHOOTING = _behavior(
    "End the conversation at the right time",
    "The conversation is complete when ANY of these stop conditions holds:\n" + _STOP_CONDITIONS
    + "- the Agent has failed more than once.\n" + _FAILURE,
    ["End the conversation only when a stop condition holds; never end early.",
     *_END_INSTRUCTIONS,
     "Count the Agent's failures in the conversation history: a second failure ends the "
     "conversation."],
    list(_END_RUBRICS))

END_NO_TROUBLESHOOTING = _behavior(
    "End the conversation at the right time",
    "The conversation is complete when ANY of these stop conditions holds:\n" + _STOP_CONDITIONS
    + "- the Agent has failed.\n" + _FAILURE,
    ["End the conversation when a stop condition holds; never end early.",
     *_END_INSTRUCTIONS,
     "Look at the Agent's last message in the conversation history: if it shows a failure, "
     "end the conversation."],
    [*_END_RUBRICS,
     f"At the Agent's first failure, the user response goes on without using `{_STOP}`.",
     "After the Agent's first failure, the user response keeps the conversation going without "
     f"using `{_STOP}`."])

_TONE_CONSISTENT = ("The tone of the user response does not match the user's earlier turns "
                    "(if any).")

TONE_PROFESSIONAL = _behavior(
    "Professional tone",
    f"The user uses clear, precise language. Note: `{_STOP}` is appropriate language.",
    ["Use clear, precise, technical language.",
     "Avoid slang, frequent abbreviations, emojis, and social filler or personal asides."],
    ["The user response contains slang (e.g. \"gimme\", \"kinda\", \"lol\"), frequent "
     "abbreviations (e.g. \"info\", \"btw\") or emojis.",
     "The user response contains much social filler or personal asides (e.g. \"Hi there! I "
     "hope you're having a good day.\").",
     "The user response is a wall of text where one direct sentence would do.",
     _TONE_CONSISTENT])

TONE_CONVERSATIONAL = _behavior(
    "Conversational tone",
    f"The user sounds informal. Note: `{_STOP}` is appropriate language.",
    ["Sound like a person in a casual conversation.",
     "Avoid answers that are too formal or full of overly polite phrases.",
     "Avoid sterile, purely functional answers without natural conversational framing."],
    ["The user response is sterile and purely functional (bare commands), without natural "
     "conversational framing.",
     "The user response is too formal, full of overly polite phrases.",
     "The user response is a wall of text where a simple sentence would do.",
     _TONE_CONSISTENT])

EXPERT = UserPersona(
    id="EXPERT",
    description="An Expert knows exactly what they want and uses the Agent as a tool to get "
                "it done as efficiently as possible, with little patience for chit-chat or "
                "needless questions.",
    behaviors=[ADVANCE_DETAIL_ORIENTED, ANSWER_RELEVANT_ONLY, CORRECT_AGENT, TROUBLESHOOT_ONCE,
               END_LIMITED_TROUBLESHOOTING, TONE_PROFESSIONAL])

NOVICE = UserPersona(
    id="NOVICE",
    description="A Novice tries to solve a problem they do not fully understand and relies on "
                "the Agent for guidance: patient with the Agent's questions, but unable to "
                "troubleshoot or correct the Agent's mistakes.",
    behaviors=[ADVANCE_GOAL_ORIENTED, DO_NOT_CORRECT_AGENT, ANSWER_ALL, END_NO_TROUBLESHOOTING,
               TONE_CONVERSATIONAL])

EVALUATOR = UserPersona(
    id="EVALUATOR",
    description="An Evaluator checks whether the Agent can help accomplish the goals of the "
                "Conversation Plan.",
    behaviors=[ADVANCE_DETAIL_ORIENTED, ANSWER_RELEVANT_ONLY, END_NO_TROUBLESHOOTING,
               DO_NOT_CORRECT_AGENT, TONE_CONVERSATIONAL])

BUILT_IN: dict[str, UserPersona] = {p.id: p for p in (EXPERT, NOVICE, EVALUATOR)}


def resolve_persona(value: UserPersona | str | None) -> UserPersona | None:
    """The persona of a scenario: a custom one as given, a built-in one by id (as ADK, the id
    is case-sensitive), None without one. Raises UnknownPersona for an unknown id."""
    if value is None or isinstance(value, UserPersona):
        return value
    found = BUILT_IN.get(value)
    if found is None:
        raise UnknownPersona(f"unknown user_persona '{value}': the built-in personas are "
                             + ", ".join(BUILT_IN) + "; or give a persona object "
                             '{"id", "description", "behaviors": [...]}')
    return found
