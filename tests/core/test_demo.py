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
        "baseline 2/2]: tool_trajectory_avg_score 0.50 < 1.00 (baseline 1.00, p of the pass rate 0.5, within noise)",
        '    run 2, turn 1: missing get_weather(city="Oslo")',  # IN_ORDER: the call it lacks
        "compared with baseline examples/weather/baseline/results.json: 0 regressed, 0 improved, "
        "2 unchanged, 0 new, 0 changed, 0 removed"]
    assert "--baseline examples/weather/baseline/results.json" in demo
    assert "within noise (p of the pass rate 0.5)" in " ".join(demo.split())
    assert "compare_cities fails on purpose" in demo
    assert "averages 0.50 over the two runs, below its threshold of 1.00" in " ".join(demo.split())
    # Runtime dependencies only: the demo never installs the test extra.
    assert "[test]" not in demo and ".venv-demo" in demo


def test_the_demo_reinstalls_for_a_changed_source_file_not_for_bytecode(tmp_path):
    """The tests write __pycache__ into the checkout; that alone must not reinstall the demo's
    venv (12 s instead of 2). Run in a copy whose venv's evalcheck is a stand-in, and whose
    Python cannot install (an attempt shows as the "installing" line)."""
    import os
    import shutil
    import subprocess
    import time

    (tmp_path / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "demo", tmp_path / "scripts" / "demo")
    (tmp_path / "pyproject.toml").write_text("")
    for package in ("checker", "evalcheck_adk_bridge"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    venv = tmp_path / ".venv-demo" / "bin"
    venv.mkdir(parents=True)
    (venv / "evalcheck").write_text("#!/bin/sh\nexit 1\n")
    (venv / "evalcheck").chmod(0o755)
    old = time.time() - 60
    for path in [tmp_path / "pyproject.toml", *tmp_path.glob("*/__init__.py")]:
        os.utime(path, (old, old))
    (tmp_path / ".venv-demo" / ".installed").touch()

    def demo() -> str:
        done = subprocess.run([str(tmp_path / "scripts" / "demo")], capture_output=True, text=True,
                              env={**os.environ, "PYTHON": "false"}, timeout=60)
        return done.stdout

    (tmp_path / "checker" / "__pycache__").mkdir()
    (tmp_path / "checker" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"")
    assert "installing" not in demo()
    (tmp_path / "evalcheck_adk_bridge" / "__init__.py").write_text("# changed\n")
    assert "demo: installing evalcheck" in demo()
