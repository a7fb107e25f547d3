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
