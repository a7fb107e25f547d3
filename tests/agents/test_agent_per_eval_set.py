"""A process serves only the eval set it was started for: an agent command that depends on
the eval set (``agents/$EVALCHECK_EVAL_SET_ID``, a config, an app name) runs each eval set on
its own agent, also when its processes are warm workers or serve concurrent sessions, at
every --concurrency and in shards. A process that says ``"evalSets": "any"`` serves every
eval set. The agents' own answers say which agent served each run."""

from __future__ import annotations

import asyncio
import json
import shlex
import subprocess
import time
from collections import defaultdict
from pathlib import Path

import pytest

from checker.agents.base import RunJob
from checker.agents.stdio import StdioRunner

from .helpers import AGENTS, PY, case, cli_env, process_state

EVALCHECK = Path(PY).parent / "evalcheck"
AGENT = f"{shlex.quote(PY)} {shlex.quote(str(AGENTS / 'folder_agent.py'))}"
SETS = {"greeter": 3, "shop": 4}  # eval set (= agent folder) -> cases


def repo(tmp_path: Path) -> Path:
    """agents/greeter and agents/shop, each with its eval set: the agent of a set must say
    "I am <set>" and call "<set>_tool"."""
    for name, cases in SETS.items():
        folder = tmp_path / "agents" / name
        folder.mkdir(parents=True)
        (folder / f"{name}.evalset.json").write_text(json.dumps({
            "eval_set_id": name,
            "eval_cases": [{"eval_id": f"{name}_{i}", "conversation": [
                {"user_content": {"role": "user", "parts": [{"text": f"turn {t} of case {i}"}]},
                 "final_response": {"role": "model", "parts": [{"text": f"I am {name}"}]},
                 "intermediate_data": {"tool_uses": [{"name": f"{name}_tool", "args": {}}]}}
                for t in (1, 2)]} for i in range(cases)]}))
        (folder / "test_config.json").write_text(json.dumps(
            {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 1.0}}))
    return tmp_path


def run(root: Path, mode: str, *extra: str) -> tuple[dict, dict[int, set[str]]]:
    """evalcheck run with the agent in ``mode``: (results, agent folders served by each pid)."""
    log = root / "folders.log"
    log.unlink(missing_ok=True)
    command = f"{AGENT} agents/$EVALCHECK_EVAL_SET_ID {mode}"
    done = subprocess.run([str(EVALCHECK), "run", "agents", "--agent-command", command,
                           "--num-runs", "2", "--results", "results.json", *extra],
                          cwd=root, env=cli_env(FOLDER_LOG=str(log)), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    served: dict[int, set[str]] = defaultdict(set)
    for line in log.read_text().splitlines():
        pid, folder, eval_set = line.split()
        served[int(pid)].add(folder)
        assert folder == eval_set, f"{eval_set} was served by the {folder} agent"
    results = json.loads((root / "results.json").read_text())
    retried = [r for s in results["evalSets"] for c in s["cases"] for r in c["runs"] if r.get("retries")]
    assert not retried, retried  # no run failed first: a retry could hide a wrong agent
    return results, served


def statuses(results: dict) -> dict[str, str]:
    return {c["evalId"]: c["status"] for s in results["evalSets"] for c in s["cases"]}


@pytest.mark.parametrize("mode", ["--warm", "--concurrent 4"])
@pytest.mark.parametrize("concurrency", ["1", "8"])
def test_each_eval_set_runs_on_its_own_agent(tmp_path, mode, concurrency):
    root = repo(tmp_path)
    results, served = run(root, mode, "--concurrency", concurrency)
    assert statuses(results) == {f"{n}_{i}": "passed" for n, k in SETS.items() for i in range(k)}
    # Every process served one agent; each agent's runs all went to its own processes.
    assert all(len(folders) == 1 for folders in served.values()), served
    assert {f for folders in served.values() for f in folders} == set(SETS)


@pytest.mark.parametrize("mode", ["--warm", "--concurrent 4"])
def test_each_shard_runs_each_eval_set_on_its_own_agent(tmp_path, mode):
    root = repo(tmp_path)
    seen: dict[str, str] = {}
    for shard in ("1/2", "2/2"):
        results, served = run(root, mode, "--shard", shard, "--concurrency", "8")
        assert all(len(folders) == 1 for folders in served.values()), served
        seen.update(statuses(results))
    assert seen == {f"{n}_{i}": "passed" for n, k in SETS.items() for i in range(k)}


@pytest.mark.parametrize("mode", ["--warm --any", "--concurrent 8 --any"])
def test_a_process_serving_any_eval_set_serves_them_all(tmp_path, mode):
    """One that says "evalSets": "any" reads the eval set from each start message: one
    process serves both eval sets, and still passes them all."""
    root = repo(tmp_path)
    results, served = run(root, mode, "--concurrency", "1")
    assert set(statuses(results).values()) == {"passed"}
    assert len(served) == 1 and next(iter(served.values())) == set(SETS), served


@pytest.mark.parametrize("mode", ["--warm", "--concurrent 4"])
def test_no_more_processes_stay_than_runs_in_flight(tmp_path, mode):
    """Six eval sets run one after the other, one run at a time: each set's process is
    retired when the next set's starts, so one process is alive at the end, not six."""
    names = [f"set{i}" for i in range(6)]
    for name in names:
        (tmp_path / "agents" / name).mkdir(parents=True)
    log = tmp_path / "folders.log"
    runner = StdioRunner(f"{AGENT} agents/$EVALCHECK_EVAL_SET_ID {mode}", cwd=tmp_path,
                         env=cli_env(FOLDER_LOG=str(log)), kill_grace=0.5)

    async def go() -> list[int]:
        try:
            for name in names:
                run = await runner.run(RunJob(eval_set_id=name, case=case("c1", turns=1), run=1))
                assert run.error is None and run.invocations[0].final_response.parts[0].text \
                    == f"I am {name}"
            pids = sorted({int(line.split()[0]) for line in log.read_text().splitlines()})
            deadline = time.monotonic() + 5
            while sum(process_state(p) not in (None, "Z") for p in pids) > 1 \
                    and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            return [p for p in pids if process_state(p) not in (None, "Z")]
        finally:
            await runner.aclose()

    alive = asyncio.run(go())
    assert len(alive) == 1, alive
