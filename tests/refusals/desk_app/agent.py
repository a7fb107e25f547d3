"""An ordinary ADK agent on Gemini (``model="gemini-2.5-flash"``) for the refusal tests: one
model call a turn, through google-genai's real client, against the fake Gemini API
(tests/fakes/gemini_api.py, rules in tests/refusals/service.py). Its own retry options are one
attempt, as an agent that leaves retrying to evalcheck sets them, so that the model service's
refusals reach the bridge at once; with ADK's defaults (EnsureRetryOptionsPlugin: 7 attempts
from 5 s) google-genai would retry inside the agent first."""

from __future__ import annotations

from google.adk.agents import LlmAgent
from google.genai import types

root_agent = LlmAgent(
    name="desk",
    model="gemini-2.5-flash",
    description="Answers weather questions in one sentence.",
    instruction="You answer weather questions in one sentence.",
    generate_content_config=types.GenerateContentConfig(http_options=types.HttpOptions(
        retry_options=types.HttpRetryOptions(attempts=1))),
)
