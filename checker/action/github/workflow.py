"""The runner side of GitHub Actions: inputs, environment files, workflow commands, event.

Follows the runner's real behaviour (shared/reference/gha-conventions.md sections 1-2):
inputs arrive as ``INPUT_<NAME upper-cased, hyphens kept>``; outputs and the job summary are
files named by ``GITHUB_OUTPUT`` / ``GITHUB_STEP_SUMMARY``; commands are lines on stdout.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...safety.output import Commands, escape_data, escape_property  # noqa: F401 (re-exported)

SUMMARY_LIMIT = 1024 * 1024  # bytes per step; above it the upload fails
DEFAULT_API_URL = "https://api.github.com"
DEFAULT_SERVER_URL = "https://github.com"


# --- inputs -----------------------------------------------------------------------------

def input_env_name(name: str) -> str:
    """The variable the runner sets for input ``name`` (runner Handler.AddInputsToEnvironment)."""
    return "INPUT_" + name.replace(" ", "_").upper()


@dataclass
class Inputs:
    """Typed access to the action's inputs; errors name the input and the fix."""

    env: Mapping[str, str]

    def text(self, name: str, default: str = "") -> str:
        return self.env.get(input_env_name(name), default).strip()

    def flag(self, name: str, default: bool) -> bool:
        raw = self.text(name).lower()
        if not raw:
            return default
        if raw in ("true", "yes", "on", "1"):
            return True
        if raw in ("false", "no", "off", "0"):
            return False
        raise InputError(f"input '{name}' must be true or false, got {raw!r}")

    def integer(self, name: str, default: int, minimum: int = 1) -> int:
        raw = self.text(name)
        if not raw:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise InputError(f"input '{name}' must be a whole number, got {raw!r}") from None
        if value < minimum:
            raise InputError(f"input '{name}' must be at least {minimum}, got {value}")
        return value

    def number(self, name: str, default: float) -> float:
        raw = self.text(name)
        if not raw:
            return default
        try:
            value = float(raw)
        except ValueError:
            raise InputError(f"input '{name}' must be a number of seconds, got {raw!r}") from None
        if not value > 0:
            raise InputError(f"input '{name}' must be more than 0, got {raw}")
        return value

    def choice(self, name: str, choices: tuple[str, ...], default: str) -> str:
        raw = self.text(name).lower() or default
        if raw not in choices:
            raise InputError(f"input '{name}' must be one of {', '.join(choices)}; got {raw!r}")
        return raw

    def lines(self, name: str) -> list[str]:
        """A multi-line or space-separated list (YAML ``|`` blocks are the usual way)."""
        return [p for line in self.text(name).splitlines() for p in line.split() if p]


# --- workflow commands: checker/safety/output.py (the one place that may write them) -----------

# --- environment files ------------------------------------------------------------------

def write_outputs(path: Path, outputs: Mapping[str, str]) -> None:
    """Append several outputs in one write: a full disk does not leave some of them.
    Multi-line values use a random delimiter (as @actions/core does)."""
    blocks = []
    for name, value in outputs.items():
        delimiter = f"ghadelimiter_{uuid.uuid4()}"
        if delimiter in name or delimiter in value:  # astronomically unlikely; never write a broken file
            raise ValueError("output value contains its delimiter")
        blocks.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    with path.open("a", encoding="utf-8") as fh:
        fh.write("".join(blocks))


def write_summary(path: Path, markdown: str) -> None:
    """Append to the job summary; the caller keeps it under SUMMARY_LIMIT bytes."""
    with path.open("a", encoding="utf-8") as fh:
        fh.write(markdown if markdown.endswith("\n") else markdown + "\n")


def summary_room(path: Path | None) -> int:
    """Bytes still allowed in this step's summary (an earlier write counts)."""
    used = path.stat().st_size if path is not None and path.exists() else 0
    return max(0, SUMMARY_LIMIT - used)


# --- the run's context ------------------------------------------------------------------

@dataclass
class RunContext:
    """What a step knows about its run, from GITHUB_* variables and the event payload."""

    api_url: str = DEFAULT_API_URL
    server_url: str = DEFAULT_SERVER_URL
    repository: str = ""
    run_id: str = ""
    event_name: str = ""
    sha: str = ""
    workspace: Path | None = None
    event: dict[str, Any] = field(default_factory=dict)
    output_path: Path | None = None
    summary_path: Path | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str], event_path: Path | None = None) -> RunContext:
        path = event_path or (Path(env["GITHUB_EVENT_PATH"]) if env.get("GITHUB_EVENT_PATH") else None)
        return cls(
            api_url=(env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/"),
            server_url=(env.get("GITHUB_SERVER_URL") or DEFAULT_SERVER_URL).rstrip("/"),
            repository=env.get("GITHUB_REPOSITORY", ""),
            run_id=env.get("GITHUB_RUN_ID", ""),
            event_name=env.get("GITHUB_EVENT_NAME", ""),
            sha=env.get("GITHUB_SHA", ""),
            workspace=Path(env["GITHUB_WORKSPACE"]) if env.get("GITHUB_WORKSPACE") else None,
            event=load_event(path) if path else {},
            output_path=Path(env["GITHUB_OUTPUT"]) if env.get("GITHUB_OUTPUT") else None,
            summary_path=Path(env["GITHUB_STEP_SUMMARY"]) if env.get("GITHUB_STEP_SUMMARY") else None,
        )

    @property
    def owner_repo(self) -> tuple[str, str]:
        owner, _, repo = self.repository.partition("/")
        return owner, repo

    @property
    def run_url(self) -> str | None:
        if not (self.repository and self.run_id):
            return None
        return f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}"

    @property
    def pull_request(self) -> dict[str, Any]:
        pr = self.event.get("pull_request")
        return pr if isinstance(pr, dict) else {}

    @property
    def pr_number(self) -> int | None:
        number = self.pull_request.get("number")
        if isinstance(number, int):
            return number
        # workflow_run: pull_requests is filled for same-repo PRs only (empty for forks).
        run = self.event.get("workflow_run")
        if isinstance(run, dict) and run.get("pull_requests"):
            first = run["pull_requests"][0]
            if isinstance(first, dict) and isinstance(first.get("number"), int):
                return first["number"]
        return None

    @property
    def head_sha(self) -> str:
        """The commit to attach checks to: the PR head, not the merge commit GITHUB_SHA names."""
        head = self.pull_request.get("head")
        if isinstance(head, dict) and isinstance(head.get("sha"), str) and head["sha"]:
            return head["sha"]
        run = self.event.get("workflow_run")
        if isinstance(run, dict) and isinstance(run.get("head_sha"), str) and run["head_sha"]:
            return run["head_sha"]
        return self.sha

    def blob_base(self, sha: str | None = None) -> str | None:
        sha = sha or self.head_sha
        if not (self.repository and sha):
            return None
        return f"{self.server_url}/{self.repository}/blob/{sha}"


def load_event(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("event file not found", file=str(path)) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"event file is not valid JSON: {exc}", file=str(path)) from None
    if not isinstance(data, dict):
        raise InputError("event file must hold a JSON object", file=str(path), path="$")
    return data
