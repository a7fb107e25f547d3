"""An ADK agent folder, evaluated as it is through the bridge:

    evalcheck run examples/weather \\
      --agent-command "evalcheck-adk examples/agents/adk_weather"

It needs google-adk beside evalcheck (README: "Run your own ADK agent") and a Gemini key (GOOGLE_API_KEY),
exactly as ``adk run`` / ``adk web`` would. Nothing in it is evalcheck-specific.
"""

from google.adk.agents import LlmAgent

_WEATHER = {"Paris": ("sunny", 21), "Rome": ("sunny", 24), "Oslo": ("rainy", 9)}


def get_weather(city: str) -> dict:
    """Returns the current weather of a city: condition and temperature in Celsius."""
    condition, temp_c = _WEATHER.get(city, ("unknown", 0))
    return {"condition": condition, "temp_c": temp_c}


root_agent = LlmAgent(
    name="weather_agent",
    model="gemini-2.5-flash",
    description="Answers questions about the current weather.",
    instruction=(
        "Answer weather questions in one sentence. Call get_weather once per city "
        "mentioned, in the order the user names them, then answer with the "
        "temperature in degrees Celsius."
    ),
    tools=[get_weather],
)
