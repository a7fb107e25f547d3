#!/usr/bin/env bash
# mermaid for tests/core/test_trend_render.py: every chart the report can make, rendered by
# the real mermaid package in headless chromium (40-render.sh), as GitHub renders it.
# Pinned by tools/mermaid/package-lock.json, installed into tools/mermaid/node_modules.
# Idempotent: reinstalled only when the lock file changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/node.sh
ensure_node 40-mermaid
project=tools/mermaid
stamp=$project/node_modules/.evalcheck-lock.sha256
want=$(sha256sum "$project/package-lock.json" | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "40-mermaid: installed"; exit 0
fi
npm ci --prefix "$project" --no-audit --no-fund --loglevel=error
echo "$want" > "$stamp"
echo "40-mermaid: installed into $project/node_modules"
