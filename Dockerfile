# evalcheck GitHub Action image. The runner builds this file for `uses: owner/evalcheck@v1`
# and runs it as root with --workdir /github/workspace (no WORKDIR or USER here: both are
# overridden or break workspace access; see docs/github-action.md).
# BASE_IMAGE lets CI build offline on a locally bootstrapped Debian image.
ARG BASE_IMAGE=python:3.12-slim
# Judge metrics (google-genai) and Vertex AI metrics (google-cloud-aiplatform) ship in the
# image so that every criterion a test_config.json names works in the Action.
ARG EXTRAS=judges,vertex

FROM ${BASE_IMAGE} AS build
ARG EXTRAS
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# python3 -m venv works on both python:3.12-slim and Debian's python3 (no `python` there).
RUN python3 -m venv /opt/evalcheck
COPY pyproject.toml README.md /src/
COPY checker /src/checker
COPY evalcheck_adk_bridge /src/evalcheck_adk_bridge
# Non-editable, runtime dependencies only; then compile bytecode once so that every job
# starts fast, and drop what a runtime never reads.
RUN /opt/evalcheck/bin/pip install --no-compile "/src[${EXTRAS}]" \
 && /opt/evalcheck/bin/python -m compileall -q -j 0 /opt/evalcheck/lib \
 && /opt/evalcheck/bin/pip uninstall -y pip \
 && find /opt/evalcheck -type d -name tests -path '*/site-packages/*/tests' -prune -exec rm -rf {} +

FROM ${BASE_IMAGE}
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# git: setup-commands and agents often need it; the workspace belongs to another uid, so
# mark every directory safe (actions/runner-images#6775).
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends git \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* \
 && git config --system --add safe.directory '*'
# The agent under test is the pull request's code: setup-command, agent-command and
# agent-server-command run as this unprivileged user (checker/sandbox.py), which owns the
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
COPY evalcheck_adk_bridge /opt/evalcheck-bridge/evalcheck_adk_bridge
COPY checker/bridges /opt/evalcheck-bridge/checker/bridges
RUN /opt/agent/bin/python -c "import sysconfig, pathlib; pathlib.Path(sysconfig.get_paths()['purelib'], 'evalcheck-bridge.pth').write_text('/opt/evalcheck-bridge\n')" \
 && printf '#!/opt/agent/bin/python\nimport sys\nfrom evalcheck_adk_bridge import main\nsys.exit(main())\n' > /usr/local/bin/evalcheck-adk \
 && chmod 755 /usr/local/bin/evalcheck-adk
COPY --from=build /opt/evalcheck /opt/evalcheck
COPY entrypoint /entrypoint
ENTRYPOINT ["/entrypoint"]
