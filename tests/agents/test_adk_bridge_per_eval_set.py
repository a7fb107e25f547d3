"""The ADK bridge started per eval set (``evalcheck-adk agents/$EVALCHECK_EVAL_SET_ID``): each
eval set is scored on its own real ADK agent, whatever --concurrency; the agents' answers
say which agent served each run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .helpers import PY, cli_env

pytest.importorskip("google.adk")

EVALCHECK = Path(PY).parent / "evalcheck"
BRIDGE = Path(PY).parent / "evalcheck-adk"

# A real ADK agent (no model) that says its name and the pid of its process.
NAMED = '''
import os
from google.adk.agents import BaseAgent
from google.adk.events import Event
from google.genai import types


class Named(BaseAgent):
    async def _run_async_impl(self, ctx):
        yield Event(author=self.name, invocation_id=ctx.invocation_id,
                    content=types.Content(role="model", parts=[types.Part(
                        text=f"I am {self.name}")]))


root_agent = Named(name=os.path.basename(os.path.dirname(__file__)))
'''
SETS = {"greeter": 2, "shop": 3}


def repo(root: Path) -> Path:
    for name, cases in SETS.items():
        folder = root / "agents" / name
        folder.mkdir(parents=True)
        (folder / "__init__.py").write_text("from . import agent\n")
        (folder / "agent.py").write_text(NAMED)
        (folder / f"{name}.evalset.json").write_text(json.dumps({
            "eval_set_id": name,
            "eval_cases": [{"eval_id": f"{name}_{i}", "conversation": [
                {"user_content": {"role": "user", "parts": [{"text": f"who are you? ({i})"}]},
                 "final_response": {"role": "model", "parts": [{"text": f"I am {name}"}]}}]}
                for i in range(cases)]}))
        (folder / "test_config.json").write_text(json.dumps(
            {"criteria": {"response_match_score": 1.0}}))
    return root


@pytest.mark.parametrize("concurrency", ["1", "8"])
def test_bridge_per_eval_set_scores_each_set_on_its_own_agent(tmp_path, concurrency):
    root = repo(tmp_path)
    done = subprocess.run(
        [str(EVALCHECK), "run", "agents", "--agent-command",
         f"{BRIDGE} agents/$EVALCHECK_EVAL_SET_ID", "--num-runs", "2",
         "--concurrency", concurrency, "--results", "results.json"],
        cwd=root, env=cli_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((root / "results.json").read_text())
    got = {c["evalId"]: (c["status"], [m["score"] for m in c["metrics"]
                                       if m["name"] == "response_match_score"])
           for s in results["evalSets"] for c in s["cases"]}
    assert got == {f"{n}_{i}": ("passed", [1.0]) for n, k in SETS.items() for i in range(k)}
