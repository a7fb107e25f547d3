from . import agent  # noqa: F401  (ADK's loader looks for shop_app.agent.root_agent)
