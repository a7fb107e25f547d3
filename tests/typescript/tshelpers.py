"""Shared helpers of the TypeScript ADK tests: the npm packages of this folder's
package-lock.json (installed by scripts/setup.d/45-typescript.sh), the examples copied
beside them, evalcheck run as a user runs it."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
NODE_MODULES = HERE / "node_modules"
EXAMPLES = REPO / "examples" / "typescript"
AGENTS = HERE / "agents"
PY = sys.executable
# The scores of the examples' weather eval set, for both TypeScript ADKs: those of the same
# agent logic in Python (tests/adk_agent's weather_app through the ADK bridge), except the
# forecast turn's tokens (each ADK words the sub-agent's request its own way).
WEATHER_SCORES = {
    ("paris_celsius", "tool_trajectory_avg_score"): 1.0,
    ("paris_celsius", "response_match_score"): 1.0,
    ("compare_fahrenheit", "tool_trajectory_avg_score"): 1.0,
    ("compare_fahrenheit", "response_match_score"): 0.6470588235294118,
    ("weather_then_forecast", "tool_trajectory_avg_score"): 1.0,
    ("weather_then_forecast", "response_match_score"): 0.8999999999999999,
    # Two model calls of 107 prompt + 10 answer tokens (the scripted model's count).
    ("paris_celsius", "token_usage_v1"): 234.0,
    ("paris_celsius", "inference_call_count_v1"): 2.0,
    ("weather_then_forecast", "tool_call_count_v1"): 1.5,
}
ADK_CLI = NODE_MODULES / "@google" / "adk-devtools" / "dist" / "esm" / "cli_entrypoint.js"


def require_packages() -> None:
    """The packages must be there: a missing install fails the tests, never skips them."""
    if not (NODE_MODULES / ".evalcheck-lock.sha256").exists() or shutil.which("node") is None:
        pytest.fail("the TypeScript ADKs are not installed: run scripts/setup "
                    "(scripts/setup.d/45-typescript.sh)")


def examples_copy(tmp: Path) -> Path:
    """examples/typescript in ``tmp``, each example with this folder's node_modules, as
    a user's project has its own after npm install."""
    require_packages()
    copy = tmp / "typescript"
    shutil.copytree(EXAMPLES, copy, ignore=shutil.ignore_patterns("node_modules"))
    for project in ("google-adk", "iqai-adk"):
        (copy / project / "node_modules").symlink_to(NODE_MODULES, target_is_directory=True)
    return copy


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api_server_command(agents: Path, port: int) -> str:
    """``adk api_server`` of @google/adk-devtools, as ``npx adk api_server`` starts it."""
    return f"node {ADK_CLI} api_server --port {port} {agents}"


def evalcheck(*args: str, cwd: Path = REPO, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-c", "from checker.cli import main; main()", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def run_evalcheck(tmp: Path, evals: Path, *agent_args: str, runs: int = 2, concurrency: int = 2,
                  cwd: Path = REPO) -> tuple[dict, dict, subprocess.CompletedProcess]:
    """``evalcheck run``: the results, the recorded runs and the finished process."""
    results, inference = tmp / "results.json", tmp / "inference.json"
    done = evalcheck("run", str(evals), *agent_args, "--num-runs", str(runs),
                     "--concurrency", str(concurrency), "--results", str(results),
                     "--inference-out", str(inference), cwd=cwd)
    if not results.exists():
        pytest.fail(f"evalcheck wrote no results (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
    return json.loads(results.read_text()), json.loads(inference.read_text()), done


def metric_runs(results: dict) -> dict[tuple[str, str], list[float]]:
    """(eval id, metric) -> the score of each run."""
    return {(c["evalId"], m["name"]): m["runs"] for s in results["evalSets"]
            for c in s["cases"] for m in c["metrics"]}


def visits_eval_set(folder: Path, cases: int = 8) -> Path:
    """An eval set for the visits agents (agents/*/visits.*): each case's session holds its
    own marker; its two turns each count a visit, and must see only their own."""
    folder.mkdir(parents=True, exist_ok=True)

    def turn(i: int, visit: int) -> dict:
        return {"invocationId": f"inv-{visit}",
                "userContent": {"role": "user", "parts": [{"text": f"visit {visit}"}]},
                "finalResponse": {"role": "model", "parts": [
                    {"text": f"m{i}: visit {visit}, 0 other markers seen"}]},
                "intermediateData": {"toolUses": [{"name": "count_visit", "args": {}}]}}
    eval_set = {"evalSetId": "visits", "evalCases": [
        {"evalId": f"case_{i}", "conversation": [turn(i, 1), turn(i, 2)],
         "sessionInput": {"appName": "visits", "userId": f"user{i}", "state": {"marker": f"m{i}"}}}
        for i in range(cases)]}
    (folder / "visits.test.json").write_text(json.dumps(eval_set, indent=1))
    (folder / "test_config.json").write_text(json.dumps(
        {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 1.0}}))
    return folder


def most_in_flight(inference: dict) -> int:
    """The most runs that were between their first turn's start and last turn's end at once."""
    spans = []
    for run in inference["runs"]:
        invocations = run["invocations"]
        if invocations:
            first, last = invocations[0], invocations[-1]
            spans.append((first["creationTimestamp"], last["creationTimestamp"] + (last.get("duration") or 0)))
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


ADAPTER = Path(PY).parent / "evalcheck-adk-ts"


def adapter_exchange(module: Path, *args: str, texts: tuple[str, ...] = ("hi",),
                     cwd: Path | None = None, timeout: float = 120,
                     offered: int | None = None) -> tuple[list[dict], str, int]:
    """One run through ``evalcheck-adk-ts [ARGS] MODULE``, as the checker drives it: a
    start (``offered``: the sessions it offers), a user message per text, stdin closed. The
    protocol messages it wrote, its stderr and its exit status."""
    lines = [{"type": "start", "protocol": 1, "evalSetId": "set", "evalId": "case", "run": 1,
              "session": {"appName": "app", "userId": "user", "state": {}, "id": "s1"}}]
    if offered is not None:
        lines[0]["concurrent"] = offered
    lines += [{"type": "user", "invocationId": f"inv-{i}", "session": "s1",
               "content": {"role": "user", "parts": [{"text": text}]}} for i, text in enumerate(texts, 1)]
    cwd = cwd or module.parent
    done = subprocess.run([str(ADAPTER), *args, os.path.relpath(module, cwd)], cwd=cwd,
                          input="".join(json.dumps(line) + "\n" for line in lines),
                          capture_output=True, text=True, timeout=timeout)
    return [json.loads(line) for line in done.stdout.splitlines()], done.stderr, done.returncode


def final_texts(messages: list[dict]) -> list[str]:
    """The text of each response's last event with text."""
    texts = []
    for message in messages:
        if message.get("type") == "response":
            parts = [p for e in message["events"] for p in (e.get("content") or {}).get("parts", [])
                     if p.get("text")]
            texts.append(parts[-1]["text"] if parts else "")
    return texts


def check_weather_example(inference: dict, transfer_arg: str) -> list[dict]:
    """What the examples' weather agent did, as ADK records it: session state reached the
    instruction (the user's name) and the tool (the units); the forecast turn went through
    the sub-agent, with both calls and both authors (``transfer_arg``: transfer_to_agent's
    argument in this ADK). The forecast turn's events, for more checks."""
    runs = {(r["evalId"], r["run"]): r for r in inference["runs"]}
    compare = runs[("compare_fahrenheit", 1)]["invocations"][0]
    assert compare["finalResponse"]["parts"][0]["text"] == (
        "Bob, it is clear in Rome, 75 degrees fahrenheit and it is rainy in Oslo, "
        "48 degrees fahrenheit. Rome is warmer.")
    second = runs[("weather_then_forecast", 2)]["invocations"][1]
    events = second["intermediateData"]["invocationEvents"]
    calls = [p["functionCall"] for e in events for p in (e.get("content") or {}).get("parts", [])
             if "functionCall" in p]
    assert [(c["name"], c["args"]) for c in calls] == [
        ("transfer_to_agent", {transfer_arg: "forecast_agent"}),
        ("get_forecast", {"city": "Tokyo", "days": 3})]
    assert {e["author"] for e in events} == {"weather_agent", "forecast_agent"}
    assert second["finalResponse"]["parts"][0]["text"] == "The forecast for Tokyo: cloudy, windy, sunny."
    return events
