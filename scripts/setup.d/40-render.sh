#!/usr/bin/env bash
# cmark-gfm (GitHub's cmark fork) and headless chromium, for tests/github/test_report_rendering.py:
# the PR comment laid out as a reader's browser shows it. Installed only as root in CI
# (CI=true); elsewhere the test is skipped when they are missing.
set -euo pipefail

if command -v cmark-gfm >/dev/null && { command -v chromium >/dev/null || command -v chromium-browser >/dev/null; }; then
  echo "40-render: cmark-gfm and chromium present"; exit 0
fi
if [ "$(id -u)" != 0 ] || [ "${CI:-}" != true ]; then
  echo "40-render: cmark-gfm/chromium missing; the rendering test will be skipped (CI installs them)"; exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends cmark-gfm chromium fonts-noto-color-emoji >/dev/null
echo "40-render: installed cmark-gfm and chromium"
