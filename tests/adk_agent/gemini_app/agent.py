"""An ordinary ADK app whose model is Gemini (``model="gemini-2.5-flash"``), for the tests
and the benchmark against the fake Gemini API (tests/fakes/gemini_api.py, with its rules for
this app in tests/fakes/weather_service.py): a travel desk that hands weather questions to a
weather desk, which calls a tool. Three model calls a turn, through google-genai's real
client; with GOOGLE_GEMINI_BASE_URL at the fake service it never leaves the machine."""

from __future__ import annotations

from google.adk.agents import LlmAgent
from google.adk.tools.tool_context import ToolContext

WEATHER = {"Paris": ("sunny", 21), "Rome": ("clear", 24), "Oslo": ("rainy", 9),
           "Tokyo": ("cloudy", 18), "Lima": ("foggy", 16), "Cairo": ("hot", 35),
           "Quito": ("mild", 19), "Perth": ("windy", 23), "Turin": ("hazy", 20),
           "Dakar": ("humid", 29)}


def get_weather(city: str, tool_context: ToolContext) -> dict:
    """The current weather of a city."""
    condition, celsius = WEATHER.get(city, ("unknown", 0))
    tool_context.state["last_city"] = city
    return {"city": city, "condition": condition, "temperature": celsius}


weather_desk = LlmAgent(
    name="weather_desk",
    model="gemini-2.5-flash",
    description="Answers questions about the weather of a city.",
    instruction="You answer weather questions with the get_weather tool, in one sentence.",
    tools=[get_weather],
)

root_agent = LlmAgent(
    name="travel_desk",
    model="gemini-2.5-flash",
    description="A travel desk: greets travellers and hands weather questions on.",
    instruction="You help travellers. Hand weather questions to weather_desk.",
    sub_agents=[weather_desk],
)
