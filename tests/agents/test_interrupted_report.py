"""An interrupted run reports what it did (issue 40, CONTRACT section 11): a real `evalcheck
run` subprocess, a fast case that answers and a slow one that hangs, sent SIGTERM (a
cancelled job) or SIGINT (Ctrl-C) while the slow agent runs. The finished run is scored and
every file is written marked interrupted ("interrupted: 1 of 2 runs"): results, markdown,
HTML, JUnit; the gate fails even under fail-on never; the exit is 143 / 130; no traceback or
"Exception ignored" noise; no agent left running."""

from __future__ import annotations

import json
import signal
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from .helpers import PY, assert_all_gone, case, cli_env, read_pids, write_eval_set
from .test_sigterm import slow_or_echo, wait_for_agents

NOISE = ("Traceback", "Exception ignored", "Event loop is closed", "BaseSubprocessTransport")


def interrupted_run(tmp_path: Path, sent: int) -> tuple[subprocess.CompletedProcess, Path]:
    pidfile, log = tmp_path / "pids", tmp_path / "turns.log"
    path = write_eval_set(tmp_path / "evals", "set", [case("fast", turns=1), case("slow", turns=1)])
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [PY, "-c", "from checker.cli import main; main()", "run", str(path), "--agent-command",
         slow_or_echo(pidfile), "--num-runs", "1", "--concurrency", "2", "--fail-on", "never",
         "--inference-out", str(out / "inference.json"), "--results", str(out / "results.json"),
         "--markdown", str(out / "report.md"), "--html", str(out / "report.html"),
         "--junit", str(out / "junit.xml")],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(ECHO_LOG=str(log)))
    wait_for_agents(proc, pidfile, log)
    proc.send_signal(sent)
    stdout, stderr = proc.communicate(timeout=60)
    assert_all_gone(read_pids(pidfile))  # the slow agent and its child: nothing left running
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), out


@pytest.mark.parametrize("sent, name, status", [(signal.SIGTERM, "SIGTERM", 143), (signal.SIGINT, "SIGINT", 130)])
def test_an_interrupted_run_scores_and_writes_what_finished(tmp_path, sent, name, status):
    done, out = interrupted_run(tmp_path, sent)
    assert done.returncode == status, done.stderr
    for noise in NOISE:
        assert noise not in done.stdout + done.stderr, done.stderr
    assert "evalcheck: interrupted; 1 run(s) had finished, written to" in done.stderr
    assert "; scoring them (interrupted: 1 of 2 runs)" in done.stderr
    # The terminal ends as every run does: the gate, failed, even under fail-on never.
    assert done.stdout.splitlines()[-1].startswith("gate failed (fail-on: never): interrupted: 1 of 2 runs; "), \
        done.stdout
    # The results: marked, the finished run scored, the other not evaluated.
    results = json.loads((out / "results.json").read_text())
    assert results["interrupted"] == {"signal": name, "runsFinished": 1, "runsPlanned": 2}
    assert results["passed"] is False
    cases = {c["evalId"]: c for c in results["evalSets"][0]["cases"]}
    assert cases["fast"]["status"] == "passed" and [r["run"] for r in cases["fast"]["runs"]] == [1]
    assert cases["slow"]["status"] == "not_evaluated"
    assert cases["slow"]["runs"] == [{"run": 1, "status": "not_evaluated", "error":
                                      f"interrupted before this run finished ({name})",
                                      "durationSeconds": None, "stderrTail": None}]
    assert [r["evalId"] for r in json.loads((out / "inference.json").read_text())["runs"]] == ["fast"]
    # The markdown and the HTML say it first.
    markdown = (out / "report.md").read_text()
    assert markdown.splitlines()[0] == "## ❌ Gate failed: interrupted: 1 of 2 runs."
    assert f"> **Interrupted by {name}**: 1 of 2 runs finished and are scored here;" in markdown
    assert f"**Run 1 was not evaluated:** interrupted before this run finished ({name})." in markdown
    page = (out / "report.html").read_text()
    assert '<h1 class="gate failed">Gate failed: interrupted: 1 of 2 runs.</h1>' in page
    assert f'<p class="error interrupted">Interrupted by {name}: 1 of 2 runs finished' in page
    # JUnit: the run marked, the case that did not run skipped (not passed, not failed).
    root = ET.parse(out / "junit.xml").getroot()
    (prop,) = root.findall("./properties/property")
    assert (prop.get("name"), prop.get("value")) == ("interrupted", f"interrupted: 1 of 2 runs ({name})")
    slow = root.find(".//testcase[@name='slow']/skipped")
    assert slow is not None and slow.get("message") == f"interrupted before 1 of its 1 runs finished ({name})"
    assert root.find(".//testcase[@name='fast']/failure") is None


def test_sigterm_to_a_run_of_a_real_adk_agent_through_the_bridge_is_quiet(tmp_path):
    """The new user's setup: an ADK app through `evalcheck-adk` (one process serving the
    runs as concurrent sessions, more runs planned than it serves at once), its model slow (the
    fake Gemini API, 6 s a call), SIGTERM while the runs wait on it: no "Exception ignored in BaseSubprocessTransport.__del__
    ... Event loop is closed" (a second cancel cut the kill of the shared agent short), the
    report written, exit 143."""
    import os
    import shutil
    import time

    pytest.importorskip("google.adk")
    from tests.fakes.gemini_api import FakeGeminiApi, service_env
    from tests.refusals.service import BRIDGE, EVALCHECK, HERE, REPO, service, write_evals

    (tmp_path / ".git").mkdir()
    shutil.copytree(HERE / "desk_app", tmp_path / "agents" / "desk_app", ignore=shutil.ignore_patterns("__pycache__"))
    write_evals(tmp_path / "evals", 6)
    with FakeGeminiApi(service(latency=6.0)) as api:
        proc = subprocess.Popen([str(EVALCHECK), "run", "evals", "--agent-command", f"{BRIDGE} agents/desk_app",
                                 "--num-runs", "3", "--results", "r.json", "--markdown", "r.md"],
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, **service_env(api.url), "PYTHONPATH": str(REPO)})
        deadline = time.monotonic() + 120
        while api.stats().calls < 8:  # the first 8 runs wait on the model
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr
    for noise in NOISE:
        assert noise not in stdout + stderr, stderr
    results = json.loads((tmp_path / "r.json").read_text())
    # 18 runs planned, 8 at a time (the bridge's sessions): the first 8 waited on the model.
    assert results["interrupted"] == {"signal": "SIGTERM", "runsFinished": 0, "runsPlanned": 18}
    assert (tmp_path / "r.md").read_text().startswith("## ❌ Gate failed: interrupted: 0 of 18 runs.")
    assert "evals/desk.evalset.json:1 case_01: not evaluated: interrupted before this run finished (SIGTERM) " \
           "(runs 1, 2, 3)" in stdout.splitlines()
