from . import agent  # noqa: F401  (ADK's loader looks for weather_app.agent.root_agent)
