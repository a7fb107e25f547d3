"""Custom metrics named relative to an agent's folder in a monorepo (issue 23): ADK users run
``adk eval`` from the agent's folder, so ``eval.custom_metrics.fn`` is that agent's
``eval/custom_metrics.py``. The top-level package is looked up from the eval file's folder
up to the repository root (the nearest wins), each agent's copy is kept apart, and one
``evalcheck run .`` scores each eval set with its own agent's metric."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from checker.inputs.discover import discover

AGENT = """import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "user":
        print(json.dumps({"type": "response", "invocationId": m["invocationId"],
                          "finalResponse": "ok"}), flush=True)
"""
CONFIG = {"criteria": {"mine": 0.5},
          "custom_metrics": {"mine": {"code_config": {"name": "eval.custom_metrics.score"}}}}
# Each agent's metric imports a module of its own folder with the same name (helpers), as the
# root's does: the copies and the worker's imports must not mix them.
METRIC = ("import helpers\n"
          "def score(eval_metric, actual, expected, scenario):\n"
          "    return helpers.VALUE\n")
# eval file's folder -> the score its metric gives
SCORES = {"agents/alpha/eval/data": 0.25, "agents/beta/eval/data": 0.75, "evals": 0.5}


def _eval_set(set_id: str) -> dict:
    return {"eval_set_id": set_id, "eval_cases": [
        {"eval_id": f"{set_id}_{n}", "conversation": [
            {"invocation_id": "1", "user_content": {"role": "user", "parts": [{"text": "hi"}]}}]}
        for n in (1, 2)]}


def monorepo(root: Path) -> Path:
    (root / ".git").mkdir(parents=True)
    for folder, value in SCORES.items():
        origin = root / folder.removesuffix("/eval/data").removesuffix("evals")
        (origin / "eval").mkdir(parents=True, exist_ok=True)
        (origin / "eval" / "custom_metrics.py").write_text(METRIC)
        (origin / "helpers.py").write_text(f"VALUE = {value}\n")
        (root / folder).mkdir(parents=True, exist_ok=True)
        set_id = folder.split("/")[1] if "/" in folder else "root"
        (root / folder / f"{set_id}.evalset.json").write_text(json.dumps(_eval_set(set_id)))
        (root / folder / "test_config.json").write_text(json.dumps(CONFIG))
    return root


def test_the_nearest_folder_holding_the_package_is_the_origin(tmp_path):
    root = monorepo(tmp_path / "repo")
    (root / "agents" / "gamma" / "eval").mkdir(parents=True)  # eval/ of its own, no metric module
    (root / "agents" / "gamma" / "g.evalset.json").write_text(json.dumps(_eval_set("gamma")))
    (root / "agents" / "gamma" / "test_config.json").write_text(json.dumps(CONFIG))
    targets = discover([str(root)], root=root).targets
    origins = {t.eval_set_id: t.config.metrics[0].custom_function_origin for t in targets}
    assert origins == {"alpha": root / "agents" / "alpha", "beta": root / "agents" / "beta",
                       "gamma": root / "agents" / "gamma", "root": None}


def test_two_agents_with_the_same_metric_name_are_each_scored_by_their_own(tmp_path):
    root = monorepo(tmp_path / "repo")
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "GEMINI_", "EVALCHECK_"))}
    out = subprocess.run([sys.executable, "-m", "checker.cli", "run", ".", "--agent-command",
                          f"{sys.executable} {agent}", "--num-runs", "2", "--results", "r.json"],
                         cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 1, out.stdout + out.stderr  # alpha's 0.25 is under 0.5
    results = json.loads((root / "r.json").read_text())
    got = {s["evalSetId"]: {(m["status"], m["score"]) for c in s["cases"] for m in c["metrics"] if m["name"] == "mine"}
           for s in results["evalSets"]}
    assert got == {"alpha": {("failed", 0.25)}, "beta": {("passed", 0.75)},
                   "root": {("passed", 0.5)}}, out.stderr
