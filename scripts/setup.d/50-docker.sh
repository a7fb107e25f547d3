#!/usr/bin/env bash
# Docker engine + a locally built base image for the container end-to-end test
# (tests/container). Images cannot be pulled here, so the base is bootstrapped from
# Debian packages: the Debian release the Dockerfile's default base is, slimmed as Debian's
# own -slim images are (minbase; no manuals, documentation or translations; no apt lists or
# caches), so that the image the tests build and measure is the one a runner builds on the
# real debian:SUITE-slim: no Python in the base, the Dockerfile installs it. Tagged as that
# default (debian:bookworm-slim) unless a pulled one exists, so that building the Dockerfile
# as the runner does (no build arguments) works offline. Idempotent: a second run only
# checks that dockerd is up and both names exist.
# Runs only as root and only in CI (CI=true) or when EVALCHECK_DOCKER_TESTS=1.
set -euo pipefail

cd "$(dirname "$0")/../.."
# The Dockerfile's default base, debian:SUITE-slim, and its Debian release SUITE.
DEFAULT_BASE=$(sed -n 's/^ARG BASE_IMAGE=//p' Dockerfile)
case "$DEFAULT_BASE" in
  debian:*-slim) SUITE=${DEFAULT_BASE#debian:}; SUITE=${SUITE%-slim} ;;
  *) echo "50-docker: the Dockerfile's default base '$DEFAULT_BASE' is not debian:SUITE-slim" >&2; exit 1 ;;
esac
# The tag names how the base is made: a machine that bootstrapped an older recipe makes this
# one (slim: since issue 25, the base had python3 and pip, 191 MB).
BASE_IMAGE=${EVALCHECK_BASE_IMAGE:-evalcheck-base:$SUITE-slim}

if [ "$(id -u)" != 0 ]; then
  echo "50-docker: not root; skipping docker setup"; exit 0
fi
if [ "${CI:-}" != true ] && [ "${EVALCHECK_DOCKER_TESTS:-}" != 1 ]; then
  echo "50-docker: set CI=true or EVALCHECK_DOCKER_TESTS=1 to set up docker"; exit 0
fi

docker_up() { [ -S /var/run/docker.sock ] && docker info >/dev/null 2>&1; }

has_image() { docker image inspect "$1" >/dev/null 2>&1; }

# A pulled image has a registry digest; one tagged here has none.
pulled() { [ "$(docker image inspect -f '{{len .RepoDigests}}' "$1" 2>/dev/null)" != 0 ]; }

tag_default_base() {
  if has_image "$DEFAULT_BASE" && pulled "$DEFAULT_BASE"; then
    echo "50-docker: $DEFAULT_BASE exists (the Dockerfile's default base)"
  elif [ "$(docker image inspect -f '{{.Id}}' "$DEFAULT_BASE" 2>/dev/null)" = \
         "$(docker image inspect -f '{{.Id}}' "$BASE_IMAGE")" ]; then
    echo "50-docker: $DEFAULT_BASE is $BASE_IMAGE (the Dockerfile's default base)"
  else
    docker tag "$BASE_IMAGE" "$DEFAULT_BASE"
    echo "50-docker: tagged $BASE_IMAGE as $DEFAULT_BASE (the Dockerfile's default base)"
  fi
}

if docker_up && has_image "$BASE_IMAGE"; then
  echo "50-docker: dockerd runs and $BASE_IMAGE exists"
  tag_default_base
  exit 0
fi

if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq docker.io debootstrap >/dev/null
fi

if ! docker_up; then
  # Started detached so that it outlives this script; log kept for diagnosis.
  nohup dockerd >/var/log/evalcheck-dockerd.log 2>&1 &
  for _ in $(seq 1 60); do docker_up && break; sleep 1; done
  docker_up || { echo "50-docker: dockerd did not start, see /var/log/evalcheck-dockerd.log" >&2; exit 1; }
fi

if ! has_image "$BASE_IMAGE"; then
  root=$(mktemp -d /var/tmp/evalcheck-base.XXXXXX)
  trap 'rm -rf "$root"' EXIT
  echo "50-docker: bootstrapping $BASE_IMAGE (debootstrap, a few minutes)"
  # ca-certificates (not in debian:SUITE-slim, 0.4 MB with openssl's 2 MB): its bundle
  # carries the proxy's CA below, and the Dockerfile's install of it must not rebuild that.
  debootstrap --variant=minbase --include=ca-certificates \
    "$SUITE" "$root" >/var/log/evalcheck-debootstrap.log 2>&1 \
    || { tail -20 /var/log/evalcheck-debootstrap.log >&2; exit 1; }
  # Registries are reached through a TLS proxy whose CA is only in the host's bundle.
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  # As Debian's -slim images (debuerreotype's slimify): dpkg skips manuals, documentation
  # (licences kept) and translations from now on, and what minbase installed of them goes.
  printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
    'path-exclude /usr/share/info/*' 'path-exclude /usr/share/linda/*' \
    'path-exclude /usr/share/lintian/overrides/*' 'path-exclude /usr/share/locale/*' \
    'path-exclude /usr/share/man/*' > "$root/etc/dpkg/dpkg.cfg.d/docker"
  find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$root"/usr/share/info/* "$root"/usr/share/linda/* "$root"/usr/share/lintian/overrides/* \
    "$root"/usr/share/locale/* "$root"/usr/share/man/*
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | docker import \
    -c 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
    - "$BASE_IMAGE" >/dev/null
  echo "50-docker: built $BASE_IMAGE"
fi
tag_default_base
