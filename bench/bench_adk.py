"""Benchmark: real ADK apps evaluated by ADK itself and by evalcheck, side by side (prints
figures; not a test).

Two apps of tests/adk_agent (google-adk, offline scripted models), ``--apps`` (default both):
``weather`` (weather_app: a tool writing session state, a forecast sub-agent reached by
``transfer_to_agent``) and ``shop`` (shop_app: a root agent with two tools, one writing
session state, and a checkout sub-agent reached by transfer whose tool keeps the cart in
session state; one- and two-turn cases). For each, an eval set of ``--cases`` cases made
from its own, ``--runs`` runs each; evalcheck at its default concurrency (``--concurrency
N`` to force one; ADK's own parallelism is 4). Each way runs as its own process, imports
included, as a user would start it:

- adk: ADK's ``AgentEvaluator.evaluate_eval_set`` (what ``adk eval`` / pytest use), in process;
- bridge: ``evalcheck run --agent-command "evalcheck-adk APP_DIR"`` (one process,
  concurrent sessions);
- bridge-c1: the same with ``--concurrency 1`` (the default must never be slower on 2 CPUs);
- api: ``evalcheck run --agent-url ... --agent-server-command "adk api_server ..."``;
- cold (``--cold``): the bridge with ``--one-session``, a process per run (the old way).

Scenarios (``--scenarios``, default ``idle,load``), each on the CPUs of ``--cpus`` (default
``0,1``: every way under ``taskset -c 0,1``, as a 2-CPU runner): ``idle``, and ``load``
with ``--load`` busy processes (default 2) spinning on those CPUs the whole time, as a
shared CI machine.

Both score the eval set's criteria (tool_trajectory_avg_score, response_match_score). For
each way: wall time, CPU time (the process and everything it started: for evalcheck the
checker's own CPU and the agent's together), CPU per run, and for evalcheck the mean turn
duration it measured (invocation_duration_v1's input) and the median time per run outside
the turns (session set-up and tear-down, protocol; the median leaves out the first runs,
which start the workers).
Targets: bridge at most 0.6x ADK's wall time and at most 0.6x its CPU per run, api at most
0.8x, for both apps in both scenarios; bridge (default) not slower than bridge-c1.
``--repeat`` runs the ways in turn that many times; the median is reported, with the load
average of the machine (it may be shared: say so with the figures).

    python bench/bench_adk.py [--apps weather,shop] [--cases 50] [--runs 3] [--concurrency N]
                              [--repeat 3] [--cold] [--cpus 0,1] [--scenarios idle,load] [--load 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ADK_AGENT = REPO / "tests" / "adk_agent"
# app -> (its agent folder, its eval set, its criteria)
APPS = {"weather": (ADK_AGENT / "weather_app", ADK_AGENT / "evals" / "weather_app.evalset.json",
                    ADK_AGENT / "evals" / "test_config.json"),
        "shop": (ADK_AGENT / "shop_app", ADK_AGENT / "shop_evals" / "shop_app.evalset.json",
                 ADK_AGENT / "shop_evals" / "test_config.json")}
PY = sys.executable
BIN = Path(PY).parent

ADK_SCRIPT = """
import asyncio, json, sys
sys.path.insert(0, {agents!r})
from google.adk.evaluation.agent_evaluator import AgentEvaluator
from google.adk.evaluation.eval_config import EvalConfig
from google.adk.evaluation.eval_set import EvalSet

AgentEvaluator._print_details = staticmethod(lambda *a, **k: None)
eval_set = EvalSet.model_validate_json(open({evalset!r}).read())
config = EvalConfig.model_validate_json(open({config!r}).read())
try:
    asyncio.run(AgentEvaluator.evaluate_eval_set(agent_module={module!r}, eval_set=eval_set,
                                                 eval_config=config, num_runs={runs}))
except AssertionError:
    pass  # a case fails its threshold on purpose (weather's wrong_expectation)
"""


def make_eval_set(folder: Path, app: str, cases: int) -> Path:
    """``cases`` cases cycling through the app's own, each with its own id."""
    _, source_file, config = APPS[app]
    source = json.loads(source_file.read_text())
    originals = source["eval_cases"]
    made = []
    for i in range(cases):
        case = json.loads(json.dumps(originals[i % len(originals)]))
        case["eval_id"] = f"{case['eval_id']}_{i:03d}"
        made.append(case)
    evals = folder / f"evals_{app}"
    evals.mkdir(parents=True)
    shutil.copy(config, evals / "test_config.json")
    path = evals / source_file.name
    path.write_text(json.dumps({**source, "eval_cases": made}))
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PIN: list[str] = []  # taskset -c CPUS, when --cpus


def measured(argv: list[str], cwd: Path) -> tuple[float, float, subprocess.CompletedProcess]:
    """Wall and CPU seconds (user + system, the process and all it waited for)."""
    argv = PIN + argv
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done


def run_adk(tmp: Path, evalset: Path, runs: int, module: str) -> tuple[float, float, dict]:
    script = ADK_SCRIPT.format(agents=str(tmp / "agents"), evalset=str(evalset), module=module,
                               config=str(evalset.parent / "test_config.json"), runs=runs)
    wall, cpu, done = measured([PY, "-c", script], tmp)
    if done.returncode != 0:
        raise SystemExit(f"ADK's AgentEvaluator failed:\n{done.stderr[-3000:]}")
    return wall, cpu, {}


def run_evalcheck(tmp: Path, evalset: Path, args: argparse.Namespace,
                  agent: list[str], concurrency: int | None = None) -> tuple[float, float, dict]:
    inference = tmp / "inference.json"
    inference.unlink(missing_ok=True)
    concurrency = concurrency or args.concurrency
    argv = [str(BIN / "evalcheck"), "run", str(evalset.parent), *agent,
            "--num-runs", str(args.runs), "--inference-out", str(inference),
            *(["--concurrency", str(concurrency)] if concurrency else [])]
    wall, cpu, done = measured(argv, tmp)
    if done.returncode not in (0, 1) or not inference.exists():
        raise SystemExit(f"evalcheck failed ({done.returncode}):\n{done.stderr[-3000:]}")
    recorded = json.loads(inference.read_text())["runs"]
    errors = [r["error"] for r in recorded if r.get("error")]
    if errors:
        raise SystemExit(f"{len(errors)} runs errored, e.g. {errors[0]}")
    turns = [inv["duration"] for r in recorded for inv in r["invocations"]]
    outside = [r["durationSeconds"] - sum(inv["duration"] for inv in r["invocations"])
               for r in recorded]
    used = next((line.split()[2] for line in done.stderr.splitlines()
                 if line.startswith("evalcheck: concurrency ")), str(concurrency or 4))
    return wall, cpu, {"concurrency": used, "turn_ms": statistics.mean(turns) * 1000,
                       "first_turn_ms": statistics.mean(r["invocations"][0]["duration"]
                                                        for r in recorded) * 1000,
                       "outside_ms": statistics.median(outside) * 1000}


def start_load(n: int) -> list[subprocess.Popen]:
    """``n`` processes spinning on the pinned CPUs: a machine other jobs use too."""
    return [subprocess.Popen([*PIN, PY, "-c", "while True: pass"]) for _ in range(n)]


def stop_load(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        proc.kill()
    for proc in procs:
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--apps", default="weather,shop", help="of: " + ", ".join(APPS))
    parser.add_argument("--cases", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=None,
                        help="force evalcheck's concurrency (default: evalcheck's own default)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cold", action="store_true", help="also the bridge with a process per run")
    parser.add_argument("--cpus", default="0,1", help="taskset -c CPUS for every way ('' for none)")
    parser.add_argument("--scenarios", default="idle,load")
    parser.add_argument("--load", type=int, default=2, help="busy processes in the load scenario")
    parser.add_argument("--ways", default="", help="only these ways (comma-separated)")
    args = parser.parse_args()
    # As installed (pip and the image compile bytecode once): an editable checkout under
    # PYTHONDONTWRITEBYTECODE=1 would compile evalcheck's modules in every process, about
    # 0.3 s of CPU a start that no user pays (google-adk's own bytecode is there already).
    subprocess.run([PY, "-m", "compileall", "-q", str(REPO / "checker"),
                    str(REPO / "evalcheck_adk_bridge")], check=True)
    if args.cpus and shutil.which("taskset"):
        PIN[:] = ["taskset", "-c", args.cpus]

    apps = args.apps.split(",")
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        agents = tmp / "agents"  # adk api_server and AgentEvaluator load the apps from here
        ways_of = {}
        for app in apps:
            folder = APPS[app][0]
            shutil.copytree(folder, agents / folder.name,
                            ignore=shutil.ignore_patterns("__pycache__", ".adk"))
            ways_of[app] = app_ways(tmp, make_eval_set(tmp, app, args.cases), folder.name, args)
        for scenario in args.scenarios.split(","):
            load = start_load(args.load) if scenario == "load" else []
            try:
                for app in apps:
                    ways = ways_of[app]
                    figures: dict[str, list[tuple[float, float, dict]]] = {w: [] for w in ways}
                    before = os.getloadavg()[0]
                    for _ in range(args.repeat):
                        for way, run in ways.items():
                            figures[way].append(run())
                    report(scenario, app, args, figures, (before, os.getloadavg()[0]))
            finally:
                stop_load(load)


def app_ways(tmp: Path, evalset: Path, module: str, args: argparse.Namespace) -> dict:
    """The ways to evaluate one app (``module``: its folder in tmp/agents)."""
    agents = tmp / "agents"
    agent_dir = shlex.quote(str(agents / module))
    bridge = shlex.quote(str(BIN / "evalcheck-adk"))
    ways = {
        "adk": lambda: run_adk(tmp, evalset, args.runs, module),
        "bridge": lambda: run_evalcheck(tmp, evalset, args, [
            "--agent-command", f"{bridge} {agent_dir}"]),
        "bridge-c1": lambda: run_evalcheck(tmp, evalset, args, [
            "--agent-command", f"{bridge} {agent_dir}"], concurrency=1),
        "api": lambda: api_way(tmp, evalset, args, agents),
    }
    if args.cold:
        ways["cold"] = lambda: run_evalcheck(tmp, evalset, args, [
            "--agent-command", f"{bridge} --one-session {agent_dir}"])
    if args.ways:
        keep = {"adk", *args.ways.split(",")}
        ways = {w: f for w, f in ways.items() if w in keep}
    return ways


def report(scenario: str, app: str, args: argparse.Namespace, figures: dict,
           loadavg: tuple[float, float]) -> None:
    total = args.cases * args.runs
    where = f"taskset -c {PIN[2]}" if PIN else f"{os.cpu_count()} CPU cores"
    extra_load = f", {args.load} busy processes beside" if scenario == "load" else ""
    print(f"\n[{scenario}] {app} ({APPS[app][0].name}, offline scripted model), {args.cases} cases x "
          f"{args.runs} runs = {total} runs; median of {args.repeat}; {where}{extra_load}; "
          f"load average {loadavg[0]:.1f} before, {loadavg[1]:.1f} after", flush=True)
    print(f"{'way':<10} {'conc':>4} {'wall s':>7} {'x ADK':>6} {'target':>6} {'CPU s':>7} "
          f"{'CPU ms/run':>10} {'x ADK':>6} {'target':>6} {'turn ms':>8} {'turn 1 ms':>9} "
          f"{'outside ms/run':>14}  all walls")
    adk_wall = statistics.median(w for w, _, _ in figures["adk"])
    adk_cpu = statistics.median(c for _, c, _ in figures["adk"])
    wall_targets = {"bridge": 0.6, "api": 0.8}
    cpu_targets = {"bridge": 0.6}
    for way, results in figures.items():
        wall = statistics.median(w for w, _, _ in results)
        cpu = statistics.median(c for _, c, _ in results)
        extra = results[-1][2]
        target = f"{wall_targets[way]:.1f}x" if way in wall_targets else ""
        cpu_target = f"{cpu_targets[way]:.1f}x" if way in cpu_targets else ""
        cells = [f"{extra[k]:.1f}" if k in extra else "-" for k in ("turn_ms", "first_turn_ms", "outside_ms")]
        conc = extra.get("concurrency") or "4"  # ADK's own; the API server's default
        print(f"{way:<10} {conc:>4} {wall:>7.2f} {wall / adk_wall:>6.2f} {target:>6} {cpu:>7.2f} "
              f"{cpu / total * 1000:>10.1f} {cpu / adk_cpu:>6.2f} {cpu_target:>6} {cells[0]:>8} "
              f"{cells[1]:>9} {cells[2]:>14}  " + " ".join(f"{w:.1f}" for w, _, _ in results),
              flush=True)


def api_way(tmp: Path, evalset: Path, args: argparse.Namespace, agents: Path):
    port = free_port()
    server = f"{shlex.quote(str(BIN / 'adk'))} api_server --port {port} {shlex.quote(str(agents))}"
    return run_evalcheck(tmp, evalset, args, ["--agent-url", f"http://127.0.0.1:{port}",
                                              "--agent-server-command", server])


if __name__ == "__main__":
    main()
