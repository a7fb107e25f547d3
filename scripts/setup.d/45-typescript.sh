#!/usr/bin/env bash
# The TypeScript ADKs for tests/typescript: @google/adk with @google/adk-devtools (adk
# api_server), @iqai/adk with langfuse (which it loads at start-up) and tsx, pinned by
# tests/typescript/package-lock.json, installed into tests/typescript/node_modules.
# Idempotent: reinstalled only when the lock file changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/node.sh
ensure_node 45-typescript
project=tests/typescript
stamp=$project/node_modules/.evalcheck-lock.sha256
want=$(sha256sum "$project/package-lock.json" | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "45-typescript: installed"; exit 0
fi
npm ci --prefix "$project" --no-audit --no-fund --loglevel=error
echo "$want" > "$stamp"
echo "45-typescript: installed into $project/node_modules"
