from . import agent  # noqa: F401  (ADK's loader looks for gemini_app.agent.root_agent)
