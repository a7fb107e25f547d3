"""Helpers for the checker-core tests: building eval files and running the real CLI."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from checker.cli import main as cli_main


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def invocation(query: str = "hi", response: str | None = "ok", tools: list[dict] | None = None,
               invocation_id: str = "inv-1") -> dict[str, Any]:
    inv: dict[str, Any] = {"invocation_id": invocation_id,
                           "user_content": {"role": "user", "parts": [{"text": query}]}}
    if response is not None:
        inv["final_response"] = {"role": "model", "parts": [{"text": response}]}
    if tools is not None:
        inv["intermediate_data"] = {"tool_uses": tools}
    return inv


def case(eval_id: str, *invocations: dict[str, Any]) -> dict[str, Any]:
    return {"eval_id": eval_id, "conversation": list(invocations) or [invocation()]}


def evalset(set_id: str, *cases: dict[str, Any]) -> dict[str, Any]:
    return {"eval_set_id": set_id, "eval_cases": list(cases) or [case("c1")]}


def write_json(path: Path, data: Any, indent: int | None = 2) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=indent, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def replay(*runs: tuple[str, str, int, list[dict] | None] | dict[str, Any]) -> dict[str, Any]:
    """Replay file; a run is (eval_set_id, eval_id, run, invocations) or a full dict."""
    out = []
    for r in runs:
        if isinstance(r, dict):
            out.append(r)
            continue
        set_id, eval_id, n, invs = r
        out.append({"evalSetId": set_id, "evalId": eval_id, "run": n,
                    "invocations": invs or [], "error": None})
    return {"version": 1, "runs": out}


@dataclass
class CliOutcome:
    code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def run_cli(args: list[str], cwd: Path) -> CliOutcome:
    """Run ``evalcheck ARGS`` in-process in ``cwd``; an unexpected exception propagates."""
    old = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(cli_main, args, catch_exceptions=False)
    finally:
        os.chdir(old)
    return CliOutcome(result.exit_code, result.stdout, result.stderr)


# Keys that are field names of the schema (everything else - args, responses, state - is
# user data and keeps its spelling).
USER_DATA_KEYS = {"args", "response", "state", "final_session_state", "tool_declarations"}


def camelize(value: Any) -> Any:
    """The same document with every schema key in camelCase."""
    if isinstance(value, list):
        return [camelize(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        head, *rest = key.split("_")
        new_key = head + "".join(p[:1].upper() + p[1:] for p in rest)
        out[new_key] = item if key in USER_DATA_KEYS else camelize(item)
    return out
