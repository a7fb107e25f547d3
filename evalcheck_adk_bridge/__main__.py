"""``python -m evalcheck_adk_bridge AGENT_DIR``: the same as ``evalcheck-adk AGENT_DIR``."""

import sys

from . import main

sys.exit(main())
