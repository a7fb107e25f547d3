"""Bridges: run an agent framework's agent as it is, speaking the evalcheck stdio protocol."""
