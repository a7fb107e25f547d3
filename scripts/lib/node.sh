# Sourced by setup hooks that run node: make sure node and npm are installed (Debian's
# packages, as root), or say what to install. Debian bookworm's node is 20.
ensure_node() {
  if command -v node >/dev/null && command -v npm >/dev/null; then
    return 0
  fi
  if [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq nodejs npm >/dev/null
  else
    echo "$1: node and npm are needed (apt-get install nodejs npm)" >&2
    return 1
  fi
}

# npm_ci_locked HOOK PROJECT: install PROJECT's packages as its package-lock.json pins them,
# into PROJECT/node_modules; again only when the lock file changed since the last install.
npm_ci_locked() {
  local stamp="$2/node_modules/.evalcheck-lock.sha256" want
  want=$(sha256sum "$2/package-lock.json" | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "$1: installed"; return 0
  fi
  npm ci --prefix "$2" --no-audit --no-fund --loglevel=error
  echo "$want" > "$stamp"
  echo "$1: installed into $2/node_modules"
}
