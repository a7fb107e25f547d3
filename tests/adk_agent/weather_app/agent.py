"""A small ADK weather app for the runner tests (its model is scripted: TEST ONLY)."""

from __future__ import annotations

from google.adk.agents import LlmAgent
from google.adk.tools.tool_context import ToolContext

from .scripted_model import ScriptedWeatherModel

_WEATHER = {"Paris": ("sunny", 21), "Rome": ("clear", 24), "Oslo": ("rainy", 9),
            "Tokyo": ("cloudy", 18), "Lima": ("foggy", 16)}


def get_weather(city: str, tool_context: ToolContext) -> dict:
    """Current weather of a city, in the user's units (session state 'units')."""
    condition, celsius = _WEATHER.get(city, ("unknown", 0))
    units = tool_context.state.get("units", "celsius")
    temperature = celsius if units == "celsius" else round(celsius * 9 / 5 + 32)
    tool_context.state["last_city"] = city
    return {"city": city, "condition": condition, "temperature": temperature, "units": units}


def get_forecast(city: str, days: int, tool_context: ToolContext) -> dict:
    """A forecast of the next days for a city."""
    condition, _ = _WEATHER.get(city, ("unknown", 0))
    cycle = [condition, "windy", "sunny", "rainy"]
    return {"city": city, "days": [cycle[i % len(cycle)] for i in range(days)]}


forecast_agent = LlmAgent(
    name="forecast_agent",
    model=ScriptedWeatherModel(),
    description="Gives multi-day weather forecasts.",
    instruction="You give forecasts. The user is {user_name}.",
    tools=[get_forecast],
)

root_agent = LlmAgent(
    name="weather_agent",
    model=ScriptedWeatherModel(),
    description="Answers questions about the weather.",
    instruction="You answer weather questions. The user is {user_name}; use {units}.",
    tools=[get_weather],
    sub_agents=[forecast_agent],
)
