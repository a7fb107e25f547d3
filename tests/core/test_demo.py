"""scripts/demo explains its intentional failure: what it says must be what evalcheck prints
for the bundled example (the demo itself, which installs a virtualenv, is run by hand)."""

from __future__ import annotations

from pathlib import Path

from corehelpers import run_cli

ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_explains_the_failure_evalcheck_reports():
    demo = (ROOT / "scripts" / "demo").read_text()
    out = run_cli(["run", "examples/weather/agent_evals", "--replay",
                   "examples/weather/recorded_runs.json", "--baseline", "examples/weather/baseline/results.json"], ROOT)
    assert out.code == 1
    assert out.stdout.splitlines()[:3] == [
        "examples/weather/agent_evals/weather.evalset.json:22 compare_cities [flaky 1/2 runs passed, "
        "baseline 2/2]: tool_trajectory_avg_score 0.50 < 1.00 (baseline 1.00, p=0.5, within noise)",
        '    run 2, turn 1: expected get_weather(city="Oslo") at call 2, got no call',
        "compared with baseline examples/weather/baseline/results.json: 0 regressed, 0 improved, "
        "2 unchanged, 0 new, 0 changed, 0 removed"]
    assert "--baseline examples/weather/baseline/results.json" in demo
    assert "within noise (p = 0.5)" in " ".join(demo.split())
    assert "compare_cities fails on purpose" in demo
    assert "averages 0.50 over the two runs, below its threshold of 1.00" in " ".join(demo.split())
    # Runtime dependencies only: the demo never installs the test extra.
    assert "[test]" not in demo and ".venv-demo" in demo
