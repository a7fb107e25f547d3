"""What the Actions runner gives a container step, rebuilt for tests: INPUT_* variables with
action.yml's defaults applied, GITHUB_* variables, file-command files and their parsing."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "weather"


def action_inputs() -> dict[str, dict[str, Any]]:
    return yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))["inputs"]


def input_env(token: str, **overrides: str) -> dict[str, str]:
    """Every declared input, as the runner sets it: defaults applied, name upper-cased with
    hyphens kept (runner Handler.AddInputsToEnvironment)."""
    env = {}
    for name, spec in action_inputs().items():
        value = str(spec.get("default", ""))
        if value == "${{ github.token }}":
            value = token
        env[f"INPUT_{name.replace(' ', '_').upper()}"] = value
    for key, value in overrides.items():
        env[f"INPUT_{key.replace('_', '-').upper()}"] = value
    return env


def parse_file_command(text: str) -> dict[str, str]:
    """The runner's parser for GITHUB_OUTPUT (``name=value`` and ``name<<DELIM`` blocks)."""
    out: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            continue
        m = re.fullmatch(r"([^=<]+)<<(.+)", line)
        if m:
            name, delim = m.groups()
            value = []
            while lines[i] != delim:
                value.append(lines[i])
                i += 1
            i += 1
            out[name] = "\n".join(value)
        else:
            name, _, value = line.partition("=")
            out[name] = value
    return out


@dataclass
class Runner:
    """Directories laid out as the runner mounts them into a container action."""

    root: Path
    workspace: Path
    home: Path
    workflow: Path
    file_commands: Path
    output_name: str
    summary_name: str

    @classmethod
    def create(cls, root: Path, event: dict[str, Any]) -> Runner:
        ws = root / "workspace"
        shutil.copytree(EXAMPLE, ws, ignore=shutil.ignore_patterns("evalcheck-report"))
        (ws / ".git").mkdir()  # a checkout: the repository root for relative paths
        for d in ("home", "workflow", "file_commands"):
            (root / d).mkdir()
        (root / "workflow" / "event.json").write_text(json.dumps(event), encoding="utf-8")
        out, summ = f"set_output_{uuid.uuid4()}", f"step_summary_{uuid.uuid4()}"
        (root / "file_commands" / out).touch()
        (root / "file_commands" / summ).touch()
        return cls(root, ws, root / "home", root / "workflow", root / "file_commands", out, summ)

    def github_env(self, api_url: str, *, in_container: bool, head_sha: str) -> dict[str, str]:
        def p(local: Path, container: str) -> str:
            return container if in_container else str(local)

        return {
            "CI": "true", "GITHUB_ACTIONS": "true",
            "HOME": p(self.home, "/github/home"),
            "GITHUB_WORKSPACE": p(self.workspace, "/github/workspace"),
            "GITHUB_EVENT_PATH": p(self.workflow / "event.json", "/github/workflow/event.json"),
            "GITHUB_OUTPUT": p(self.file_commands / self.output_name, f"/github/file_commands/{self.output_name}"),
            "GITHUB_STEP_SUMMARY": p(self.file_commands / self.summary_name,
                                     f"/github/file_commands/{self.summary_name}"),
            "GITHUB_EVENT_NAME": "pull_request", "GITHUB_REPOSITORY": "octo/agents",
            "GITHUB_REF": "refs/pull/7/merge", "GITHUB_SHA": "c" * 40,  # the merge commit
            "GITHUB_HEAD_REF": "feature", "GITHUB_BASE_REF": "main",
            "GITHUB_RUN_ID": "4242", "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_SERVER_URL": "https://github.com", "GITHUB_API_URL": api_url,
            "GITHUB_GRAPHQL_URL": api_url + "/graphql",
        }

    def outputs(self) -> dict[str, str]:
        return parse_file_command((self.file_commands / self.output_name).read_text(encoding="utf-8"))

    def summary(self) -> str:
        return (self.file_commands / self.summary_name).read_text(encoding="utf-8")


def as_checkout(runner: Runner) -> str:
    """The workspace as actions/checkout leaves it, a git repository, its files committed in
    one commit that the event names as the pull request's base (the pull request changed
    nothing yet); returns that commit's SHA. Files written afterwards are untracked, as a
    workflow step's (actions/cache) are."""
    ws = runner.workspace
    # (git init keeps what .git holds, e.g. a checkout token a test wrote into .git/config;
    # the workspace may already be the runner's user's)
    git = ["git", "-C", str(ws), "-c", "safe.directory=*", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "main"], check=True)
    sha = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    event_path = runner.workflow / "event.json"
    event = json.loads(event_path.read_text(encoding="utf-8"))
    event["pull_request"]["base"]["sha"] = sha
    event_path.write_text(json.dumps(event), encoding="utf-8")
    return sha


def run_in_workspace(runner: Runner, env: dict[str, str]) -> int:
    """The action's entrypoint in-process, in the workspace (the runner's --workdir)."""
    import os

    from checker.action import entry as action

    cwd = os.getcwd()
    os.chdir(runner.workspace)
    try:
        return action.main(env)
    finally:
        os.chdir(cwd)


def docker_problem(base_image: str) -> str | None:
    """Why the docker tests (tests/act, tests/container) cannot run here, or None."""
    if shutil.which("docker") is None:
        return "docker is not installed (scripts/setup.d/50-docker.sh installs it as root)"
    info = subprocess.run(["docker", "info"], capture_output=True, text=True)
    if info.returncode != 0:
        return f"docker daemon not reachable: {info.stderr.strip()[:200]}"
    base = subprocess.run(["docker", "image", "inspect", base_image], capture_output=True)
    if base.returncode != 0:
        return f"base image {base_image} missing (run EVALCHECK_DOCKER_TESTS=1 scripts/setup.d/50-docker.sh)"
    return None
