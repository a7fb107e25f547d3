"""``python -m evalcheck_adk_ts MODULE``: the same as ``evalcheck-adk-ts MODULE``."""

import sys

from . import main

sys.exit(main())
