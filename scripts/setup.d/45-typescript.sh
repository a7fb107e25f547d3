#!/usr/bin/env bash
# The TypeScript ADKs for tests/typescript: @google/adk with @google/adk-devtools (adk
# api_server), @iqai/adk with langfuse (which it loads at start-up) and tsx, pinned by
# tests/typescript/package-lock.json, installed into tests/typescript/node_modules.
# Idempotent: reinstalled only when the lock file changed since the last install.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/node.sh
ensure_node 45-typescript
npm_ci_locked 45-typescript tests/typescript
