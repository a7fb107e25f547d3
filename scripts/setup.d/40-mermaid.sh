#!/usr/bin/env bash
# mermaid for tests/core/test_trend_render.py: every chart the report can make, rendered by
# the real mermaid package in headless chromium (40-render.sh), as GitHub renders it.
# Pinned by tools/mermaid/package-lock.json, installed into tools/mermaid/node_modules.
# Idempotent: reinstalled only when the lock file changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/node.sh
ensure_node 40-mermaid
npm_ci_locked 40-mermaid tools/mermaid
