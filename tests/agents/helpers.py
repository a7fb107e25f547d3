"""Shared helpers of the runner tests."""

from __future__ import annotations

import asyncio
import time
import json
import os
import sys
from pathlib import Path

from checker.models.evalset import EvalCase
from checker.models.records import RecordedRun
from checker.agents.base import RunJob

AGENTS = Path(__file__).parent / "agents"
REPO = Path(__file__).resolve().parents[2]
PY = sys.executable


def case(eval_id: str = "c1", turns: int = 2, text: str = "What is the weather in Paris?",
         state: dict | None = None) -> EvalCase:
    return EvalCase.model_validate({
        "eval_id": eval_id,
        "conversation": [{"user_content": {"role": "user", "parts": [{"text": f"{text} ({i})"}]},
                          "final_response": {"role": "model", "parts": [{"text": f"echo: {text} ({i})"}]}}
                         for i in range(1, turns + 1)],
        "session_input": {"app_name": "app", "user_id": "u", "state": state or {}},
    })


def run_one(runner, eval_case: EvalCase, *, run: int = 1, turn_timeout: float = 5.0) -> RecordedRun:
    async def go() -> RecordedRun:
        try:
            return await runner.run(RunJob(eval_set_id="set", case=eval_case, run=run,
                                           turn_timeout=turn_timeout))
        finally:
            await runner.aclose()
    return asyncio.run(go())


def read_pids(pidfile: Path) -> list[int]:
    return [int(x) for x in pidfile.read_text().split()] if pidfile.exists() else []


def process_state(pid: int) -> str | None:
    """The /proc state letter of ``pid`` (Z = zombie), or None when it no longer exists."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2:].split()[0].decode()


def assert_all_gone(pids: list[int]) -> None:
    assert pids, "the agent never wrote its pid"
    # The exit status is read as soon as a process exits (pidfd), and the event loop's child
    # watcher reaps it a moment later: a zombie may stand for that moment, not longer.
    deadline = time.monotonic() + 2.0
    while True:
        left = {pid: process_state(pid) for pid in pids if process_state(pid) is not None}
        if not left or any(state != "Z" for state in left.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    assert not left, f"processes left behind (pid: state): {left}"


def write_eval_set(folder: Path, set_id: str, cases: list[EvalCase], config: dict | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{set_id}.evalset.json"
    path.write_text(json.dumps({"eval_set_id": set_id, "eval_cases": [
        c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in cases]}))
    (folder / "test_config.json").write_text(json.dumps(config or {
        "criteria": {"tool_trajectory_avg_score": 0.0, "response_match_score": 0.5}}))
    return path


def cli_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra)
    return env
