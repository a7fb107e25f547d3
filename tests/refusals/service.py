"""What the refusal tests share: the fake Gemini API's rules for the desk agents, eval sets of
weather questions, and ``evalcheck run`` as a user runs it (a process of its own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.fakes.gemini_api import ServiceConfig, service_env
from tests.fakes.gemini_script import Rule

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
EVALCHECK = Path(sys.executable).parent / "evalcheck"
BRIDGE = Path(sys.executable).parent / "evalcheck-adk"
CITIES = ("Paris", "Rome", "Oslo", "Tokyo", "Lima", "Cairo", "Quito", "Perth")
RULES = (Rule(text=r"weather in (?P<city>\w+)", reply="It is sunny in {city}."),)


def service(**fields: Any) -> ServiceConfig:
    return ServiceConfig(rules=RULES, **fields)


def write_evals(folder: Path, cases: int, app: str = "desk_app") -> Path:
    """``cases`` one-turn weather questions the desk agents answer right (and their criteria)."""
    folder.mkdir(parents=True, exist_ok=True)
    items = [{"eval_id": f"case_{i + 1:02d}",
              "conversation": [{"invocation_id": "inv-1",
                                "user_content": {"role": "user", "parts": [
                                    {"text": f"What is the weather in {CITIES[i % len(CITIES)]}?"}]},
                                "final_response": {"role": "model", "parts": [
                                    {"text": f"It is sunny in {CITIES[i % len(CITIES)]}."}]}}],
              "session_input": {"app_name": app, "user_id": "u", "state": {}}}
             for i in range(cases)]
    path = folder / "desk.evalset.json"
    path.write_text(json.dumps({"eval_set_id": "desk", "eval_cases": items}))
    (folder / "test_config.json").write_text(json.dumps({"criteria": {"response_match_score": 0.8}}))
    return path


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str
    results: dict[str, Any] | None

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def cases(self) -> list[dict[str, Any]]:
        assert self.results is not None, self.output
        return [c for s in self.results["evalSets"] for c in s["cases"]]

    def runs(self) -> list[dict[str, Any]]:
        return [r for c in self.cases() for r in c["runs"]]


def run_evalcheck(cwd: Path, url: str, *args: str, results: str = "results.json",
                  timeout: float = 240, env: dict[str, str] | None = None) -> Outcome:
    """``evalcheck run evals ARGS --results RESULTS`` in ``cwd``, its model service at ``url``."""
    out = cwd / results
    out.unlink(missing_ok=True)
    done = subprocess.run([str(EVALCHECK), "run", "evals", *args, "--results", results],
                          cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **service_env(url), **(env or {}),
                               "PYTHONPATH": str(REPO)})
    return Outcome(done.returncode, done.stdout, done.stderr,
                   json.loads(out.read_text()) if out.exists() else None)
