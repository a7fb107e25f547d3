"""Benchmark: an ADK app against a model service with latency, a quota and storms, evaluated by
google-adk's AgentEvaluator and by evalcheck side by side (prints figures; not a test).

The app is tests/adk_agent/gemini_app (a travel desk handing weather questions to a weather
desk with a tool; ``model="gemini-2.5-flash"``, three model calls a turn) going through
google-genai's real client, ADK's retry options and error types to the fake Gemini API
(tests/fakes/gemini_api.py, in a process of its own on its own CPU: ``--service-cpu``) with
``GOOGLE_GEMINI_BASE_URL``. The service answers each call after ``--latency`` seconds and
enforces a quota: ``--rps`` calls accepted in any 1-second window and ``--in-flight`` at once,
answering Google's own ``429 RESOURCE_EXHAUSTED`` body (RetryInfo 2 s) beyond it.

Scenarios (``--scenarios``, default all):

- ``quota``: ``--cases`` x ``--runs`` runs; for each way the wall time against the floor
  (the model calls times the latency over the calls allowed in flight, or the calls over the
  allowed rate, whichever is larger), the time before the first model call (``start``), the
  calls refused, and what evalcheck's concurrency did.
  Ways: ``adk`` (AgentEvaluator.evaluate_eval_set, its parallelism 4, in process), ``bridge``
  (``evalcheck run --agent-command "evalcheck-adk APP"``, the default concurrency),
  ``bridge-cap`` (the same with ``--max-concurrency`` set as docs/agent-protocol.md says for
  the quota: the calls a second times a call's seconds) and ``api``
  (``--agent-server-command "adk api_server ..."``); ``--ways`` picks.
- ``over``: the same suite sustained over the quota (``--over-rps``, default 5 calls a
  second): the share of calls refused, whether every case completed and none errored.
- ``storm``: an unchanged pull request against main's results (``--fail-on regression``,
  ``--retries 0``) with a 10-second storm of 429s, then one of 503s (no RetryInfo), starting
  2 s into its runs; ``--storm-cases`` cases: the exit status, the cases regressed or failed,
  the confirmation runs started, the calls refused.

    python bench/bench_model_service.py [--scenarios quota,over,storm] [--cases 50] [--runs 3]
        [--latency 0.5] [--rps 40] [--in-flight 32] [--over-rps 5] [--ways adk,bridge,bridge-cap,api]
        [--repeat 1] [--service-cpu 1]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.fakes.gemini_api import FakeGeminiProcess, Quota, Storm  # noqa: E402
from tests.fakes.weather_service import APP, CALLS_PER_TURN, service_config, write_eval_set  # noqa: E402

PY = sys.executable
BIN = Path(PY).parent
RETRY_DELAY = 2.0  # the RetryInfo delay of the fake's 429s

ADK_SCRIPT = """
import asyncio, json, sys
sys.path.insert(0, {agents!r})
from google.adk.evaluation.agent_evaluator import AgentEvaluator
from google.adk.evaluation.eval_config import EvalConfig
from google.adk.evaluation.eval_set import EvalSet

AgentEvaluator._print_details = staticmethod(lambda *a, **k: None)
eval_set = EvalSet.model_validate_json(open({evalset!r}).read())
config = EvalConfig.model_validate_json(open({config!r}).read())
asyncio.run(AgentEvaluator.evaluate_eval_set(agent_module={module!r}, eval_set=eval_set,
                                             eval_config=config, num_runs={runs}))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def floor_seconds(calls: int, latency: float, rps: float, in_flight: int) -> float:
    """The least time ``calls`` model calls can take under the quota."""
    return max(calls * latency / in_flight, calls / rps)


class Setup:
    """The repository the ways run in: the app in agents/, its eval set in evals/."""

    def __init__(self, tmp: Path, cases: int):
        self.tmp = tmp
        (tmp / ".git").mkdir(exist_ok=True)
        self.agents = tmp / "agents"
        if not (self.agents / APP.name).exists():
            shutil.copytree(APP, self.agents / APP.name, ignore=shutil.ignore_patterns("__pycache__"))
        self.evals = tmp / "evals"
        shutil.rmtree(self.evals, ignore_errors=True)
        self.evalset = write_eval_set(self.evals, cases)
        self.cases = cases


def run_way(way: str, setup: Setup, env: dict[str, str], runs: int,
            extra: list[str] = (), results: str = "results.json") -> dict[str, Any]:
    """One way: its wall time, exit status and (evalcheck) the results it wrote."""
    out = setup.tmp / results
    out.unlink(missing_ok=True)
    if way == "adk":
        script = ADK_SCRIPT.format(agents=str(setup.agents), evalset=str(setup.evalset),
                                   config=str(setup.evals / "test_config.json"),
                                   module=APP.name, runs=runs)
        argv = [PY, "-c", script]
    else:
        if way.startswith("bridge"):
            agent = ["--agent-command",
                     f"{shlex.quote(str(BIN / 'evalcheck-adk'))} {shlex.quote(str(setup.agents / APP.name))}"]
        else:
            port = free_port()
            agent = ["--agent-url", f"http://127.0.0.1:{port}", "--agent-server-command",
                     f"{shlex.quote(str(BIN / 'adk'))} api_server --port {port} "
                     f"{shlex.quote(str(setup.agents))}"]
        argv = [str(BIN / "evalcheck"), "run", "evals", *agent, "--num-runs", str(runs),
                "--results", results, *extra]
    began = time.monotonic()  # the fake service's first_call_at is on this clock
    done = subprocess.run(argv, cwd=setup.tmp, capture_output=True, text=True, env=env)
    wall = time.monotonic() - began
    found = json.loads(out.read_text()) if out.exists() else None
    return {"wall": wall, "code": done.returncode, "results": found, "stderr": done.stderr,
            "stdout": done.stdout, "began": began}


def cases_of(results: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [c for s in (results or {}).get("evalSets", []) for c in s["cases"]]


def service_line(results: dict[str, Any] | None) -> str:
    meta = (results or {}).get("metadata", {})
    conc = meta.get("adaptiveConcurrency") or {}
    told = (meta.get("modelService") or {}).get("retriedByAgents")
    turns = [conc.get("start")] + [limit for _, limit in conc.get("overTime", [])]
    peaks = [turns[0]] + [b for a, b, c in zip(turns, turns[1:], turns[2:], strict=False)
                          if (b - a) * (c - b) < 0] + turns[-1:]
    peaks = [n for n in peaks if n is not None]
    if len(peaks) > 8:  # the first and the last few turns, as the end-of-run line says them
        peaks = [*peaks[:3], "...", *peaks[-4:]]
    return (f"concurrency {' -> '.join(str(n) for n in peaks)}"
            + (f"; {told} refused calls retried in the agent" if told else ""))


def scenario_quota(args: argparse.Namespace, tmp: Path, over: bool = False) -> None:
    rps = args.over_rps if over else args.rps
    setup = Setup(tmp, args.cases)
    calls = args.cases * args.runs * CALLS_PER_TURN
    floor = floor_seconds(calls, args.latency, rps, args.in_flight)
    ways = args.ways.split(",") if not over else [w for w in args.ways.split(",") if w != "adk" or args.adk_over]
    title = "sustained over the quota" if over else "at the quota"
    print(f"\n[{'over' if over else 'quota'}] {title}: {args.cases} cases x {args.runs} runs x "
          f"{CALLS_PER_TURN} model calls = {calls} calls at {args.latency:g} s, quota {rps:g}/s and "
          f"{args.in_flight} in flight; floor {floor:.1f} s; median of {args.repeat}", flush=True)
    print(f"{'way':<10} {'wall s':>7} {'x floor':>7} {'start s':>7} {'calls':>6} {'refused':>8} "
          f"{'share':>6} {'cases ok':>8} {'errored runs':>12}  how")
    config = service_config(latency=args.latency,
                            quota=Quota(per_second=rps, in_flight=args.in_flight,
                                        retry_delay=RETRY_DELAY))
    # What docs/agent-protocol.md tells a team to set for its quota: the calls a second it
    # allows times the seconds a call takes, when under the calls in flight it allows.
    capped = max(1, min(args.in_flight, int(rps * args.latency)))
    for way in ways:
        rows = []
        extra = ["--max-concurrency", str(capped)] if way == "bridge-cap" else []
        for _ in range(args.repeat):
            with FakeGeminiProcess(config, cpus=args.service_cpu or None) as api:
                env = {**os.environ, **api.env(), "PYTHONPATH": str(REPO)}
                outcome = run_way(way, setup, env, args.runs, extra)
                stats = api.stats()
            rows.append((outcome, stats))
        rows.sort(key=lambda r: r[0]["wall"])
        outcome, stats = rows[len(rows) // 2]
        if outcome["code"] not in (0, 1):
            print(f"{way:<10} failed ({outcome['code']}): {outcome['stderr'][-800:]}")
            continue
        cases = cases_of(outcome["results"])
        ok = sum(c["status"] == "passed" for c in cases) if way != "adk" else "-"
        errored = sum(1 for c in cases for r in c["runs"] if r.get("error")) if way != "adk" else "-"
        how = service_line(outcome["results"]) if way != "adk" else "AgentEvaluator, parallelism 4"
        walls = " ".join(f"{o['wall']:.1f}" for o, _ in rows)
        # Before the first model call: the checker's start, the agent's load and warm-up.
        start = (stats.first_call_at - outcome["began"]) if stats.first_call_at else float("nan")
        print(f"{way:<10} {outcome['wall']:>7.1f} {outcome['wall'] / floor:>7.2f} {start:>7.1f} "
              f"{stats.calls:>6} "
              f"{stats.refused:>8} {stats.refused_share:>6.1%} {ok!s:>8} {errored!s:>12}  {how}"
              + (f"  (walls {walls})" if len(rows) > 1 else ""), flush=True)


def scenario_storm(args: argparse.Namespace, tmp: Path) -> None:
    setup = Setup(tmp, args.storm_cases)
    print(f"\n[storm] an unchanged pull request, {args.storm_cases} cases x {args.runs} runs, "
          f"against main's results (--fail-on regression, --retries 0); a 10-second storm "
          f"from 2 s into its runs; {args.latency:g} s a call, quota {args.rps:g}/s", flush=True)
    print(f"{'way':<7} {'storm':>5} {'exit':>4} {'wall s':>7} {'regressed':>9} {'failed':>6} "
          f"{'fresh runs':>10} {'refused':>7}  last line")
    quota = Quota(per_second=args.rps, in_flight=args.in_flight, retry_delay=RETRY_DELAY)
    for way in [w for w in args.ways.split(",") if w in ("bridge", "api")]:
        for status in (429, 503):
            with FakeGeminiProcess(service_config(latency=args.latency, quota=quota),
                                   cpus=args.service_cpu or None) as api:
                env = {**os.environ, **api.env(), "PYTHONPATH": str(REPO)}
                main = run_way(way, setup, env, args.runs, results="main.json")
                if main.get("code") != 0:
                    print(f"{way:<7} main's run failed ({main['code']}): {main['stderr'][-800:]}")
                    continue
                api.configure(service_config(latency=args.latency, quota=quota,
                                             storms=(Storm(2.0, 12.0, status),)))
                api.reset()
                pr = run_way(way, setup, env, args.runs, ["--baseline", "main.json", "--fail-on",
                                                          "regression", "--retries", "0"])
                refused = api.stats().refused
            cases = cases_of(pr["results"])
            regressed = sum(c.get("change") == "regressed" for c in cases)
            failed = sum(c["status"] == "failed" for c in cases)
            fresh = sum(len(c.get("freshRuns") or []) for c in cases)
            last = pr["stdout"].strip().splitlines()[-1][:90] if pr["stdout"].strip() else ""
            print(f"{way:<7} {status:>5} {pr['code']:>4} {pr['wall']:>7.1f} {regressed:>9} "
                  f"{failed:>6} {fresh!s:>10} {refused:>7}  {last}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scenarios", default="quota,over,storm")
    parser.add_argument("--cases", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--rps", type=float, default=40.0)
    parser.add_argument("--in-flight", type=int, default=32)
    parser.add_argument("--over-rps", type=float, default=5.0)
    parser.add_argument("--adk-over", action="store_true", help="also ADK in the over scenario")
    parser.add_argument("--storm-cases", type=int, default=20)
    parser.add_argument("--ways", default="adk,bridge,bridge-cap,api")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--service-cpu", default="1" if (os.cpu_count() or 1) > 1 else "",
                        help="taskset -c for the fake service ('' for none)")
    args = parser.parse_args()
    subprocess.run([PY, "-m", "compileall", "-q", str(REPO / "checker"),
                    str(REPO / "evalcheck_adk_bridge")], check=True)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        for scenario in args.scenarios.split(","):
            if scenario == "quota":
                scenario_quota(args, tmp)
            elif scenario == "over":
                scenario_quota(args, tmp, over=True)
            elif scenario == "storm":
                scenario_storm(args, tmp)
            else:
                raise SystemExit(f"unknown scenario {scenario!r}: quota, over or storm")
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
