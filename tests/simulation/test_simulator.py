"""The LLM-backed simulated user against the fake Gemini server (real google-genai client)."""

from __future__ import annotations

import pytest

from checker.simulation.personas import EXPERT, NOVICE
from checker.simulation.simulator import SimulatorError

from judges.fake_gemini import empty_reply, error_reply, json_reply, thought_reply
from .conftest import invocation, scenario, simulator, turns

PARIS = [invocation("What is the weather in Paris?", "It is sunny in Paris, 21 degrees Celsius.")]
OSLO = PARIS + [invocation("And in Oslo?", "It is rainy in Oslo, 9 degrees Celsius.")]


def test_first_turn_is_the_starting_prompt_without_a_model_call(env, fake):
    assert turns(simulator(env), [[]]) == ["What is the weather in Paris?"]
    assert fake.requests == []


def test_later_turns_ask_the_configured_model_with_the_default_template(env, fake):
    fake.on("# Conversation History", json_reply("And in Oslo?"))
    sim = simulator(env, model="gemini-test-model",
                    model_configuration={"temperature": 0.5})
    assert turns(sim, [[], PARIS]) == ["What is the weather in Paris?", "And in Oslo?"]
    (request,) = fake.requests
    assert request.model == "gemini-test-model"
    assert request.generation_config == {"temperature": 0.5}
    prompt = request.prompt
    assert prompt.startswith("You are a Simulated User whose job is to test an AI Agent.")
    assert "# Primary Operating Loop" in prompt and "**PROTOCOL: END**" in prompt
    assert "Output `</finished>` to signal" in prompt
    assert prompt.endswith(
        "# Conversation Plan\n\nAsk for the weather in Paris, then in Oslo.\n\n"
        "# Conversation History\n\nuser: What is the weather in Paris?\n\n"
        "agent: It is sunny in Paris, 21 degrees Celsius.")
    assert sim.model.stats.calls == 1 and sim.model.stats.total_tokens == 120


def test_default_model_configuration_is_adks(env, fake):
    fake.on("# Conversation History", json_reply("And in Oslo?"))
    assert turns(simulator(env), [[], PARIS])[1] == "And in Oslo?"
    (request,) = fake.requests
    assert request.model == "gemini-2.5-flash"
    # (google-genai sends nested config fields in snake_case; the API reads either case.)
    thinking = {k.replace("_", "").lower(): v
                for k, v in request.generation_config["thinkingConfig"].items()}
    assert thinking == {"includethoughts": True, "thinkingbudget": 10240}
    assert list(request.generation_config) == ["thinkingConfig"]


def test_the_stop_signal_ends_the_conversation_and_is_not_sent(env, fake):
    fake.on("agent: It is rainy in Oslo", json_reply("Thank you, that is all. </FINISHED>"))
    fake.on("# Conversation History", json_reply("And in Oslo?"))
    sim = simulator(env)
    assert turns(sim, [[], PARIS, OSLO]) == ["What is the weather in Paris?", "And in Oslo?", None]
    assert sim.stopped_by == "stop_signal" and len(fake.requests) == 2


def test_a_custom_stop_signal_is_the_only_one(env, fake):
    fake.on("agent: It is rainy in Oslo", json_reply("[[done]]"))
    fake.on("# Conversation History", json_reply("Oslo too </finished>"))
    sim = simulator(env, stop_signal="[[DONE]]")
    # ADK's hard-coded signal means nothing here; the configured one ends the conversation.
    assert turns(sim, [[], PARIS, OSLO]) == ["What is the weather in Paris?",
                                             "Oslo too </finished>", None]
    assert "Output `[[DONE]]` to signal" in fake.requests[0].prompt


def test_max_allowed_invocations_counts_the_starting_prompt(env, fake):
    fake.on("# Conversation History", json_reply("And in Oslo?"))
    sim = simulator(env, max_allowed_invocations=2)
    assert turns(sim, [[], PARIS, OSLO]) == ["What is the weather in Paris?", "And in Oslo?", None]
    assert sim.stopped_by == "turn_limit" and len(fake.requests) == 1
    one = simulator(env, max_allowed_invocations=1)
    assert turns(one, [[], PARIS]) == ["What is the weather in Paris?", None]
    assert len(fake.requests) == 1


def test_minus_one_means_no_turn_limit(env, fake):
    fake.on("# Conversation History", json_reply("One more, please."))
    sim = simulator(env, max_allowed_invocations=-1)
    out = turns(sim, [PARIS] * 25)
    assert out[0] == "What is the weather in Paris?" and out[1:] == ["One more, please."] * 24
    assert len(fake.requests) == 24


def test_an_empty_reply_is_asked_again(env, fake):
    fake.on("# Conversation History", thought_reply("Hmm."), empty_reply(), json_reply("And in Oslo?"))
    assert turns(simulator(env), [[], PARIS]) == ["What is the weather in Paris?", "And in Oslo?"]
    assert len(fake.requests) == 3


@pytest.mark.parametrize(("reply", "reason"), [
    (thought_reply("Hmm."), "finish reason STOP, only thoughts and no text"),
    (empty_reply(), "finish reason SAFETY (blocked or cut off)"),
    (json_reply("   "), "finish reason STOP, empty text"),
])
def test_three_empty_replies_error_the_run(env, fake, reply, reason):
    fake.on("# Conversation History", reply)
    out = turns(simulator(env), [[], PARIS])
    assert isinstance(out[1], SimulatorError)
    assert str(out[1]) == f"simulated user gave no reply after 3 attempts: {reason}"
    assert len(fake.requests) == 3


def test_a_failing_model_errors_with_the_reason(env, fake):
    fake.on("# Conversation History", error_reply(500, "boom"))
    out = turns(simulator(env), [[], PARIS])
    assert str(out[1]) == ("simulated user: model call failed after 3 attempt(s): "
                           "HTTP 500 INTERNAL: boom")
    fake.reset()
    fake.on("# Conversation History", error_reply(403, "no access"))
    out = turns(simulator(env), [[], PARIS])
    assert str(out[1]) == ("simulated user: model request rejected (HTTP 403 PERMISSION_DENIED: "
                           "no access): the Gemini API refused the model's key; check "
                           "GOOGLE_API_KEY (or GEMINI_API_KEY)")


def test_missing_credentials_name_the_variables(fake):
    sim = simulator({})
    with pytest.raises(SimulatorError) as caught:
        sim.model.check_credentials()
    assert str(caught.value) == (
        "no Gemini credentials for the simulated user: set GOOGLE_API_KEY (or GEMINI_API_KEY) "
        "for the Gemini API, or GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT and "
        "GOOGLE_CLOUD_LOCATION for Vertex AI")
    assert str(turns(sim, [[], PARIS])[1]) == str(caught.value)
    assert fake.requests == []


def test_a_built_in_persona_uses_the_persona_template(env, fake):
    fake.on("# Persona Description", json_reply("Oslo."))
    sim = simulator(env, scenario(persona="EXPERT"), stop_signal="<<bye>>")
    assert turns(sim, [[], PARIS])[1] == "Oslo."
    prompt = fake.requests[0].prompt
    assert "# Primary Operating Loop" not in prompt
    assert f"# Persona Description\n\n{EXPERT.description}\nThis persona behaves as follows:\n" in prompt
    for behavior in EXPERT.behaviors:
        assert f"## {behavior.name}\n" in prompt
    # Behaviour texts get the configured stop signal.
    assert "  * Output `<<bye>>` in your response to signal that the conversation" in prompt
    assert "{{" not in prompt


def test_a_custom_persona_from_the_scenario(env, fake):
    persona = {"id": "HURRIED", "description": "A user in a hurry.",
               "behaviors": [{"name": "Be brief", "description": "Short replies; say {{ stop_signal }} when done.",
                              "behavior_instructions": ["Use at most five words.", "Never greet."],
                              "violation_rubrics": ["The reply is long."]}]}
    fake.on("# Persona Description", json_reply("Oslo now."))
    assert turns(simulator(env, scenario(persona=persona)), [[], PARIS])[1] == "Oslo now."
    prompt = fake.requests[0].prompt
    assert ("# Persona Description\n\nA user in a hurry.\nThis persona behaves as follows:\n\n"
            "## Be brief\nShort replies; say </finished> when done.\n\nInstructions:\n"
            "  * Use at most five words.\n  * Never greet.\n\n# Conversation Plan") in prompt


def test_custom_instructions_are_rendered_with_every_value(env, fake):
    template = ("Plan: {{ conversation_plan }}\nSay {{ stop_signal }} at the end.\n"
                "{% for b in persona.behaviors %}[{{ b.name | render_string_filter }}]\n"
                "{{ b.get_behavior_instructions_str() | render_string_filter }}\n{% endfor %}"
                "History:\n{{ conversation_history }}")
    fake.on("History:", json_reply("Oslo please"))
    sim = simulator(env, scenario(persona="NOVICE"), custom_instructions=template)
    assert turns(sim, [[], PARIS])[1] == "Oslo please"
    prompt = fake.requests[0].prompt
    assert prompt.startswith("Plan: Ask for the weather in Paris, then in Oslo.\n"
                             "Say </finished> at the end.\n[" + NOVICE.behaviors[0].name + "]\n")
    assert prompt.endswith("History:\nuser: What is the weather in Paris?\n\n"
                           "agent: It is sunny in Paris, 21 degrees Celsius.")
    assert "{{" not in prompt


def test_custom_instructions_render_as_adk_renders_them():
    """A template written for ADK gives the same prompt here (same persona data)."""
    from google.adk.evaluation.simulation import llm_backed_user_simulator_prompts as adk
    from google.adk.evaluation.simulation.user_simulator_personas import UserPersona

    from checker.simulation.prompts import render

    # (Without render_string_filter: ADK's own template check rejects it, see prompts.py.)
    template = ("{{ persona.id }}: {{ persona.description }}\n{% for b in persona.behaviors %}"
                "## {{ b.name }}\n{{ b.description }}\n"
                "{{ b.get_behavior_instructions_str() }}\n"
                "{{ b.get_violation_rubrics_str() }}\n{% endfor %}"
                "Stop: {{ stop_signal }}\n# Plan\n{{ conversation_plan }}\n# History\n"
                "{{ conversation_history }}\n")
    ours = EXPERT
    theirs = UserPersona.model_validate(ours.model_dump(by_alias=False))
    values = {"conversation_plan": "Plan A", "conversation_history": "user: hi\n\nagent: hello",
              "stop_signal": "</finished>"}
    expected = adk.get_llm_backed_user_simulator_prompt(custom_instructions=template,
                                                         user_persona=theirs, **values)
    assert render(custom_template=template, persona=ours, **values) == expected
    # And without a persona.
    plain = "{{ stop_signal }} / {{ conversation_plan }} / {{ conversation_history }}"
    assert render(custom_template=plain, **values) == adk.get_llm_backed_user_simulator_prompt(
        custom_instructions=plain, **values)


def test_the_persona_template_has_adks_shape():
    """Our persona template differs from ADK's in wording only: same sections, same order,
    the behaviours rendered the same way."""
    from google.adk.evaluation.simulation import llm_backed_user_simulator_prompts as adk
    from google.adk.evaluation.simulation.user_simulator_personas import UserPersona

    from checker.simulation.prompts import render

    values = {"conversation_plan": "Plan A", "conversation_history": "user: hi",
              "stop_signal": "</finished>"}
    theirs = adk.get_llm_backed_user_simulator_prompt(
        user_persona=UserPersona.model_validate(NOVICE.model_dump(by_alias=False)), **values)
    ours = render(persona=NOVICE, **values)
    tail = theirs[theirs.index("# Persona Description"):]
    assert ours[ours.index("# Persona Description"):] == tail.replace(
        "This persona behaves in the following ways:", "This persona behaves as follows:")
