"""``python -m checker.bridges.adk AGENT_DIR``: the ADK bridge under its first name.

An alias of ``evalcheck-adk AGENT_DIR`` (the ``evalcheck_adk_bridge`` module), kept so that
existing workflows go on working. Prefer ``evalcheck-adk``: a ``checker/`` folder of the
repository under test shadows this name, not that one.
"""

from __future__ import annotations

import sys

from evalcheck_adk_bridge import load_agent, main, make_runner, serve

__all__ = ["load_agent", "main", "make_runner", "serve"]

if __name__ == "__main__":
    sys.exit(main())
