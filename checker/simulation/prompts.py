"""The simulated user's instructions: ADK's two templates and the user's own (Jinja).

The default and the persona template have the structure and rules of ADK 2.13's
(``llm_backed_user_simulator_prompts.py``), in our words. A custom template
(``user_simulator_config.custom_instructions``) is rendered as ADK renders it: a sandboxed
Jinja template given ``stop_signal``, ``conversation_plan``, ``conversation_history`` and,
with a persona, ``persona`` (with ADK's ``get_behavior_instructions_str()`` /
``get_violation_rubrics_str()`` helpers and the ``render_string_filter`` filter), so a
template written for ADK works here unchanged. jinja2 is imported lazily.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..models.evalset import UserBehavior, UserPersona
from .personas import fill

REQUIRED = ("stop_signal", "conversation_plan", "conversation_history")

DEFAULT_TEMPLATE = """\
You are a Simulated User whose job is to test an AI Agent.

Above all, react logically to the Agent's last message.
The Conversation Plan grounds you but is not a script: what you say MUST follow from what the Agent just said.

# Primary Operating Loop

While thinking, you MUST go through these three steps:

Step 1: Analyse what the Agent just said or did. Is it asking you a question, reporting an operation that succeeded or failed, or saying something wrong or unexpected?

Step 2: Based on that, choose one action:
* ANSWER the questions the Agent asked.
* ADVANCE to the next request of the Conversation Plan when the Agent has fulfilled your current request.
* INTERVENE when the Agent has not yet completed your current request and the Conversation Plan tells you to change it.
* CORRECT the Agent when it makes a mistake or fails.
* END the conversation when one of these stop conditions holds:
  - The Agent has completed every request of your Conversation Plan.
  - The Agent has failed to fulfil a request *more than once*.
  - The Agent has done a wrong operation and tells you it cannot undo it.
  - The Agent ends the conversation itself by transferring you to a *human/live agent* (NOT another AI Agent).

Step 3: Write your reply following the chosen action's protocol below, and output it.

# Action Protocols

**PROTOCOL: ANSWER**
* Answer the Agent's questions only with information from the Conversation Plan.
* Do NOT give information the Agent did not explicitly ask for.
* When you do not have the information the Agent asks for, tell the Agent so. Do NOT make up information that is not in the Conversation Plan.
* Do NOT advance to the next request of the Conversation Plan.

**PROTOCOL: ADVANCE**
* Make the next request of the Conversation Plan.
* Skip requests the Agent has already fulfilled.

**PROTOCOL: INTERVENE**
* Change your current request as the Conversation Plan says, in natural words.

**PROTOCOL: CORRECT**
* Challenge statements of the Agent that are illogical or wrong.
* When the Agent did a wrong operation, ask it to fix it.
* When this is the FIRST time the Agent failed your request, ask it to try again.

**PROTOCOL: END**
* End the conversation only when a stop condition holds; do NOT end early.
* Output `{{ stop_signal }}` to signal that the conversation with the AI Agent is over.

# Conversation Plan

{{ conversation_plan }}

# Conversation History

{{ conversation_history }}
"""

PERSONA_TEMPLATE = """\
You are a Simulated User whose job is to test an AI Agent.

Above all, react logically to the Agent's last message while playing the Persona below.
The Conversation Plan grounds you but is not a script: what you say MUST follow from what the Agent just said.

# Persona Description

{{ persona.description }}
This persona behaves as follows:
{% for b in persona.behaviors %}
## {{ b.name | render_string_filter }}
{{ b.description | render_string_filter }}

Instructions:
{{ b.get_behavior_instructions_str() | render_string_filter }}
{% endfor %}
# Conversation Plan

{{ conversation_plan }}

# Conversation History

{{ conversation_history }}"""


TEMPLATE_FIX = ("the template must use {{ stop_signal }}, {{ conversation_plan }} and "
                "{{ conversation_history }}, and {{ persona }} when a case has a user_persona")


class TemplateProblem(ValueError):
    """A custom template that cannot be used; the message says why."""


def required_names(with_persona: bool) -> tuple[str, ...]:
    return (*REQUIRED, "persona") if with_persona else REQUIRED


def check_template(template: str, *, with_persona: bool) -> None:
    """Raise TemplateProblem unless ``template`` parses and uses every required name (ADK's
    check: jinja2.meta's undeclared variables)."""
    from jinja2 import TemplateSyntaxError, meta

    try:
        parsed = _environment({}).parse(template)
        used = meta.find_undeclared_variables(parsed)  # compiles: an unknown filter fails here
    except TemplateSyntaxError as exc:
        raise TemplateProblem(f"custom_instructions is not a valid Jinja template: "
                              f"{exc.message} (template line {exc.lineno})") from None
    missing = [name for name in required_names(with_persona) if name not in used]
    if missing:
        raise TemplateProblem("custom_instructions does not use "
                              + ", ".join("{{ " + n + " }}" for n in missing))


@dataclass(frozen=True)
class _Behavior:
    """A persona behaviour as templates see it (ADK's UserBehavior and its helpers)."""

    name: str
    description: str
    behavior_instructions: list[str]
    violation_rubrics: list[str]

    def get_behavior_instructions_str(self) -> str:
        return "\n".join(f"  * {i}" for i in self.behavior_instructions)

    def get_violation_rubrics_str(self) -> str:
        return "\n".join(f"  * {v}" for v in self.violation_rubrics)


@dataclass(frozen=True)
class _Persona:
    id: str
    description: str
    behaviors: list[_Behavior]


def _view(persona: UserPersona) -> _Persona:
    def behavior(b: UserBehavior) -> _Behavior:
        return _Behavior(b.name, b.description, list(b.behavior_instructions),
                         list(b.violation_rubrics))
    return _Persona(persona.id, persona.description, [behavior(b) for b in persona.behaviors])


def render(*, conversation_plan: str, conversation_history: str, stop_signal: str,
           persona: UserPersona | None = None, custom_template: str | None = None) -> str:
    """The instructions for the next simulated user turn."""
    if custom_template is not None:
        check_template(custom_template, with_persona=persona is not None)
        template = custom_template
    else:
        template = PERSONA_TEMPLATE if persona is not None else DEFAULT_TEMPLATE
    values: dict[str, Any] = {"stop_signal": stop_signal, "conversation_plan": conversation_plan,
                              "conversation_history": conversation_history}
    # Persona texts may hold {{ stop_signal }} etc.: ADK renders them as templates; we fill
    # the known names and keep any other text as written (see personas.fill).
    env = _environment(dict(values))
    if persona is not None:
        values["persona"] = _view(persona)
    return env.from_string(template).render(values)


def _environment(known: Mapping[str, str]) -> Any:
    """A sandboxed Jinja environment with ADK's ``render_string_filter`` (which ADK's own
    template check does not know, so ADK rejects custom templates that use it; we accept them)."""
    from jinja2.sandbox import SandboxedEnvironment

    env = SandboxedEnvironment()
    env.filters["render_string_filter"] = lambda text: fill(str(text), known) if text else ""
    return env
