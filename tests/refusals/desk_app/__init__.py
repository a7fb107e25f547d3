from . import agent  # noqa: F401  (ADK's loader looks for desk_app.agent.root_agent)
