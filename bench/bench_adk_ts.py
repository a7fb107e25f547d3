"""Benchmark: the TypeScript ADK paths beside the Python bridge, on the same cases (prints
figures; not a test).

The weather app of tests/adk_agent (Python, google-adk) and its two TypeScript ports in
examples/typescript (@google/adk and @iqai/adk), each an LlmAgent with a tool writing
session state and a forecast sub-agent reached by transfer_to_agent, on the same offline
scripted model logic. An eval set of ``--cases`` cases cycling through the three cases
they share (the @google/adk one differs only in transfer_to_agent's argument name),
``--runs`` runs each, evalcheck at its default concurrency. The ways:

- python-bridge: ``--agent-command "evalcheck-adk weather_app"`` (the Python reference);
- google-api: ``--agent-url`` with ``--agent-server-command "node .../adk api_server"``
  (@google/adk-devtools);
- google-adapter: ``--agent-command "evalcheck-adk-ts agents/weather_app/agent.ts"``
  (@google/adk in-process);
- iqai-adapter: ``--agent-command "evalcheck-adk-ts agent.ts"`` (@iqai/adk).

For each way: wall time, CPU time (evalcheck and everything it started), CPU per run, and
the mean turn duration, the first turn's and the median time per run outside the turns
(as bench_adk.py). Needs tests/typescript's packages (scripts/setup). ``--repeat`` runs the
ways in turn that many times; the median is reported, with the load average (the machine
may be shared: say so with the figures).

    python bench/bench_adk_ts.py [--cases 30] [--runs 3] [--repeat 3] [--cpus 0,1]
                                 [--scenarios idle,load] [--load 2] [--ways ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_adk  # noqa: E402  (its measuring helpers)

REPO = bench_adk.REPO
TS = REPO / "examples" / "typescript"
NODE_MODULES = REPO / "tests" / "typescript" / "node_modules"
ADK_CLI = NODE_MODULES / "@google" / "adk-devtools" / "dist" / "esm" / "cli_entrypoint.js"
SHARED = ("paris_celsius", "compare_fahrenheit", "weather_then_forecast")


def eval_set(source: Path, folder: Path, cases: int) -> Path:
    """``cases`` cases cycling through the shared ones of ``source`` (either spelling)."""
    data = json.loads(source.read_text())
    key, id_key = ("evalCases", "evalId") if "evalCases" in data else ("eval_cases", "eval_id")
    originals = [c for c in data[key] if c[id_key] in SHARED]
    made = []
    for i in range(cases):
        case = json.loads(json.dumps(originals[i % len(originals)]))
        case[id_key] = f"{case[id_key]}_{i:03d}"
        made.append(case)
    folder.mkdir(parents=True)
    shutil.copy(source.parent / "test_config.json", folder / "test_config.json")
    path = folder / source.name
    path.write_text(json.dumps({**data, key: made}))
    return path


def ways(tmp: Path, args: argparse.Namespace) -> dict:
    copy = tmp / "typescript"
    shutil.copytree(TS, copy, ignore=shutil.ignore_patterns("node_modules"))
    for project in ("google-adk", "iqai-adk"):
        (copy / project / "node_modules").symlink_to(NODE_MODULES, target_is_directory=True)
    python_app = tmp / "agents" / "weather_app"
    shutil.copytree(bench_adk.ADK_AGENT / "weather_app", python_app,
                    ignore=shutil.ignore_patterns("__pycache__", ".adk"))
    python_set = eval_set(bench_adk.ADK_AGENT / "evals" / "weather_app.evalset.json", tmp / "e_py", args.cases)
    google_set = eval_set(copy / "google-adk" / "evals" / "weather_app.test.json", tmp / "e_google", args.cases)
    iqai_set = eval_set(copy / "iqai-adk" / "evals" / "weather_app.test.json", tmp / "e_iqai", args.cases)
    adapter = shlex.quote(str(bench_adk.BIN / "evalcheck-adk-ts"))
    google_agent = shlex.quote(str(copy / "google-adk" / "agents" / "weather_app" / "agent.ts"))
    iqai_agent = shlex.quote(str(copy / "iqai-adk" / "agent.ts"))

    def api():
        port = bench_adk.free_port()
        server = f"node {shlex.quote(str(ADK_CLI))} api_server --port {port} {shlex.quote(str(copy / 'google-adk' / 'agents'))}"
        return bench_adk.run_evalcheck(tmp, google_set, args, ["--agent-url", f"http://127.0.0.1:{port}",
                                                               "--agent-server-command", server])

    found = {
        "python-bridge": lambda: bench_adk.run_evalcheck(tmp, python_set, args, [
            "--agent-command", f"{shlex.quote(str(bench_adk.BIN / 'evalcheck-adk'))} {shlex.quote(str(python_app))}"]),
        "google-api": api,
        "google-adapter": lambda: bench_adk.run_evalcheck(tmp, google_set, args, [
            "--agent-command", f"{adapter} {google_agent}"]),
        "iqai-adapter": lambda: bench_adk.run_evalcheck(tmp, iqai_set, args, [
            "--agent-command", f"{adapter} {iqai_agent}"]),
    }
    return {w: f for w, f in found.items() if not args.ways or w in args.ways.split(",")}


def report(scenario: str, args: argparse.Namespace, figures: dict, loadavg: tuple[float, float]) -> None:
    total = args.cases * args.runs
    where = f"taskset -c {bench_adk.PIN[2]}" if bench_adk.PIN else f"{os.cpu_count()} CPU cores"
    extra_load = f", {args.load} busy processes beside" if scenario == "load" else ""
    print(f"\n[{scenario}] weather app, {args.cases} cases x {args.runs} runs = {total} runs; "
          f"median of {args.repeat}; {where}{extra_load}; load average {loadavg[0]:.1f} before, "
          f"{loadavg[1]:.1f} after", flush=True)
    print(f"{'way':<15} {'conc':>4} {'wall s':>7} {'x py':>5} {'CPU s':>7} {'CPU ms/run':>10} "
          f"{'x py':>5} {'turn ms':>8} {'turn 1 ms':>9} {'outside ms/run':>14}  all walls")
    base = figures.get("python-bridge")
    base_wall = statistics.median(w for w, _, _ in base) if base else None
    base_cpu = statistics.median(c for _, c, _ in base) if base else None
    for way, results in figures.items():
        wall = statistics.median(w for w, _, _ in results)
        cpu = statistics.median(c for _, c, _ in results)
        extra = results[-1][2]
        cells = [f"{extra[k]:.1f}" if k in extra else "-" for k in ("turn_ms", "first_turn_ms", "outside_ms")]
        ratio = (lambda a, b: f"{a / b:.2f}" if b else "-")
        print(f"{way:<15} {extra.get('concurrency', '-'):>4} {wall:>7.2f} {ratio(wall, base_wall):>5} "
              f"{cpu:>7.2f} {cpu / total * 1000:>10.1f} {ratio(cpu, base_cpu):>5} {cells[0]:>8} "
              f"{cells[1]:>9} {cells[2]:>14}  " + " ".join(f"{w:.1f}" for w, _, _ in results), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=30)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=None)
    parser.add_argument("--cpus", default="0,1", help="taskset -c CPUS for every way ('' for none)")
    parser.add_argument("--scenarios", default="idle")
    parser.add_argument("--load", type=int, default=2)
    parser.add_argument("--ways", default="")
    args = parser.parse_args()
    if not (NODE_MODULES / "@iqai" / "adk").is_dir():
        raise SystemExit("tests/typescript's packages are missing: run scripts/setup")
    subprocess.run([bench_adk.PY, "-m", "compileall", "-q", str(REPO / "checker"),
                    str(REPO / "evalcheck_adk_bridge"), str(REPO / "evalcheck_adk_ts")], check=True)
    if args.cpus and shutil.which("taskset"):
        bench_adk.PIN[:] = ["taskset", "-c", args.cpus]
    with tempfile.TemporaryDirectory() as name:
        found = ways(Path(name), args)
        for scenario in args.scenarios.split(","):
            load = bench_adk.start_load(args.load) if scenario == "load" else []
            try:
                figures: dict[str, list] = {w: [] for w in found}
                before = os.getloadavg()[0]
                for _ in range(args.repeat):
                    for way, run in found.items():
                        figures[way].append(run())
                report(scenario, args, figures, (before, os.getloadavg()[0]))
            finally:
                bench_adk.stop_load(load)


if __name__ == "__main__":
    main()
