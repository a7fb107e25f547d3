"""Issue 22 in the real image: nothing of the pull request runs as root in any mode, the
agent's user cannot read the token actions/checkout leaves in .git/config, and what
setup-command rewrites is not what the verdict reads (docs/github-action.md#trust-model).

Every Python code object the container executes from the workspace (or from the private
copy of the custom metrics' sources) is traced, with the
effective uid of the process executing it, by an audit hook (sitecustomize on PYTHONPATH,
outside the workspace): a root entry in that trace is a module of the workspace imported by
root.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time

import pytest

from test_container_action import (HEAD, ROOT, FakeGitHub, Runner, _hand_to_runner_user,  # noqa: F401
                                   docker_run, event, image, input_env)
from runner_env import EXAMPLE, as_checkout  # noqa: E402  (on the path test_container_action set)

TOKEN = "ghs_checkouttoken4711"
# what actions/checkout writes with persist-credentials: true (its default)
EXTRAHEADER = "AUTHORIZATION: basic " + __import__("base64").b64encode(
    f"x-access-token:{TOKEN}".encode()).decode()

HOOK = r'''
import os, sys

_busy = []

def _trace(event, args):
    if event != "exec" or _busy:
        return
    name = getattr(args[0], "co_filename", "") or ""
    # the workspace, and the private copy of the custom metrics' sources
    if not name.startswith(("/github/workspace", "/tmp/evalcheck-metrics-")):
        return
    _busy.append(1)
    try:
        fd = os.open("/github/home/trace/exec.log", os.O_WRONLY | os.O_APPEND)
        os.write(fd, f"{os.geteuid()} {os.getpid()} {name}\n".encode())
        os.close(fd)
    except OSError:
        pass
    finally:
        _busy.pop()

sys.addaudithook(_trace)
'''

PROBE = ("(cat .git/config; git config --get-regexp 'http.*extraheader'; "
         "cat /proc/1/environ) > {out} 2>&1; true")

METRIC = '''
import os, subprocess

def probe(eval_metric, actual, expected, scenario):
    found = subprocess.run(["/bin/sh", "-c", {probe!r}], cwd="/github/workspace")
    return float(os.geteuid())
'''

# the agent for agent-command: reads what it may not, then answers every turn
AGENT = '''
import json, subprocess, sys
subprocess.run(["/bin/sh", "-c", {probe!r}])
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "user":
        print(json.dumps({{"type": "response", "invocationId": msg["invocationId"],
                           "finalResponse": "no idea"}}), flush=True)
'''


def _lay_out(runner: Runner) -> None:
    """The checkout's token in .git/config, a custom metric, and the trace file."""
    ws = runner.workspace
    (ws / ".git" / "config").write_text(
        '[core]\n\trepositoryformatversion = 0\n[http "https://github.com/"]\n\textraheader = '
        + EXTRAHEADER + "\n")
    (ws / "evalmetrics").mkdir()
    (ws / "evalmetrics" / "__init__.py").write_text("")
    # the metric cannot write the workspace (given back by then): it reports where it can
    (ws / "evalmetrics" / "probe.py").write_text(
        METRIC.format(probe=PROBE.format(out="/github/home/trace/metric-probe.txt")))
    config = ws / "agent_evals" / "test_config.json"
    data = json.loads(config.read_text())
    data["criteria"]["probe"] = 0.0
    data["custom_metrics"] = {"probe": {"code_config": {"name": "evalmetrics.probe.probe"}}}
    config.write_text(json.dumps(data))
    (ws / "agent.py").write_text(AGENT.format(probe=PROBE.format(out="agent-probe.txt")))
    shutil.copy(ROOT / "tests" / "agents" / "agents" / "tiny_api_server.py", ws)
    trace = runner.home / "trace"
    trace.mkdir()
    (trace / "sitecustomize.py").write_text(HOOK)
    (trace / "exec.log").touch()
    os.chmod(trace / "exec.log", 0o666)
    _hand_to_runner_user(runner)
    for path in (trace, *trace.iterdir()):
        os.chmod(path, 0o777 if path.is_dir() else (0o666 if path.name == "exec.log" else 0o644))
    os.chmod(runner.home, 0o755)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


MODES = {
    "replay": dict(replay="recorded_runs.json"),
    "replay+setup": dict(replay="recorded_runs.json",
                         setup_command=PROBE.format(out="setup-probe.txt")),
    "agent-command": dict(agent_command="python agent.py"),
    "agent-command+setup": dict(agent_command="python agent.py",
                                setup_command=PROBE.format(out="setup-probe.txt")),
    "agent-url": dict(agent_url="http://127.0.0.1:{port}", app_name="tiny",
                      agent_server_command=PROBE.format(out="server-probe.txt")
                      + " && exec python tiny_api_server.py {port} server.pid"),
}


PROBES = {"replay": ["metric"], "replay+setup": ["metric", "setup"], "agent-command": ["agent", "metric"],
          "agent-command+setup": ["agent", "metric", "setup"], "agent-url": ["metric", "server"]}


@pytest.mark.parametrize("mode", list(MODES))
def test_nothing_of_the_pr_runs_as_root_nor_reads_the_checkout_token(image, tmp_path, mode):  # noqa: F811
    with FakeGitHub() as fake:
        runner = Runner.create(tmp_path / "r", event())
        _lay_out(runner)
        port = _port()
        inputs = {k: v.format(port=port) for k, v in MODES[mode].items()}
        env = {**runner.github_env(fake.base_url, in_container=True, head_sha=HEAD),
               **input_env(fake.token, paths="agent_evals", num_runs="1", baseline="off", **inputs),
               "PYTHONPATH": "/github/home/trace"}
        done = docker_run(image, runner, env)
        log = done.stdout + done.stderr
        assert done.returncode in (0, 1), log[-5000:]

        trace = [line.split(" ", 2) for line in (runner.home / "trace" / "exec.log").read_text().splitlines()]
        as_root = [name for euid, _, name in trace if euid == "0"]
        assert as_root == [], as_root  # no module of the workspace ever ran as root
        metric = [name for euid, _, name in trace if name.endswith("probe.py")]
        assert metric and {euid for euid, _, name in trace if name.endswith("probe.py")} == {"48151"}, trace

        results = json.loads((runner.workspace / "evalcheck-report" / "results.json").read_text())
        scores = {m["score"] for s in results["evalSets"] for c in s["cases"]
                  for m in c["metrics"] if m["name"] == "probe"}
        assert scores == {48151.0}, scores  # the metric's euid: evalcheck-agent, never 0

        found = [*runner.workspace.glob("*-probe.txt"), *(runner.home / "trace").glob("*-probe.txt")]
        probes = sorted(p.name.split("-")[0] for p in found)
        assert probes == PROBES[mode], probes
        for probe in found:
            text = probe.read_text()
            assert TOKEN not in text and "eC1hY2Nlc3Mt" not in text, (probe.name, text)
            assert "Permission denied" in text, (probe.name, text)
        # .git is the runner's again, readable as before, the token still there for later steps
        git = runner.workspace / ".git"
        assert oct(git.stat().st_mode & 0o777) == oct(0o755)
        assert TOKEN not in log


SETUP_REWRITES = r'''
import json, pathlib
b = pathlib.Path("baseline/results.json")
data = json.loads(b.read_text())
for s in data["evalSets"]:
    for c in s["cases"]:
        for m in c["metrics"]:
            if m.get("score") is not None:
                m["score"] = 0.0
                m["runs"] = [0.0 for _ in m.get("runs") or []]
b.write_text(json.dumps(data))
c = pathlib.Path("criteria/test_config.json")
c.exists() and c.write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 0.0, "response_match_score": 0.0,
                                       "probe": 0.0},
                         "custom_metrics": {"probe": {"code_config": {"name": "evalmetrics.probe.probe"}}}}))
pathlib.Path("report.j2").write_text("## forged: passed\n")
pathlib.Path("evalmetrics/probe.py").write_text(
    "def probe(eval_metric, actual, expected, scenario):\n    return 12345.0\n")
pathlib.Path("recorded_runs.json").write_text("{}")
'''


def test_setup_command_rewrites_none_of_what_the_verdict_reads(image, tmp_path):  # noqa: F811
    """Issue 22: setup-command ran before the baseline and the criteria were read; rewriting
    them turned a failing run green. Every input is read (or privately copied) first."""
    with FakeGitHub() as fake:
        runner = Runner.create(tmp_path / "r", event())
        _lay_out(runner)
        ws = runner.workspace
        (ws / "criteria").mkdir()
        # the example's own criteria (those of its baseline), given as `config:`
        shutil.copy(EXAMPLE / "agent_evals" / "test_config.json", ws / "criteria" / "test_config.json")
        (ws / "report.j2").write_text("## {{ 'passed' if results.passed else 'failed' }}\n")
        (ws / "rewrite.py").write_text(SETUP_REWRITES)
        as_checkout(runner)  # a pull request that changed none of it (the baseline is tracked)
        _hand_to_runner_user(runner)
        env = {**runner.github_env(fake.base_url, in_container=True, head_sha=HEAD),
               **input_env(fake.token, paths="agent_evals", replay="recorded_runs.json",
                           config="criteria/test_config.json", baseline="baseline/results.json",
                           template="report.j2", setup_command="python rewrite.py")}
        done = docker_run(image, runner, env)
        log = done.stdout + done.stderr
        assert "setup-command failed" not in log, log[-3000:]
        assert done.returncode == 1, log[-5000:]  # the thresholds as they were: compare_cities fails
        assert runner.outputs()["passed"] == "false"
        results = json.loads((ws / "evalcheck-report" / "results.json").read_text())
        metrics = {(c["evalId"], m["name"]): m for s in results["evalSets"] for c in s["cases"]
                   for m in c["metrics"]}
        trajectory = metrics[("compare_cities", "tool_trajectory_avg_score")]
        assert trajectory["threshold"] == 1.0 and trajectory["status"] == "failed"
        # the baseline as it was (main passed compare_cities), not the rewritten one
        assert trajectory["baselineScore"] == 1.0, trajectory
        (comment,) = fake.comments[7]
        assert comment["body"].endswith("## failed\n"), comment["body"][-300:]
        (check,) = fake.check_runs.values()
        assert check["conclusion"] == "failure"


@pytest.mark.parametrize("folder", ["", "agent_evals/"])
def test_setup_command_rewrites_no_custom_metric(image, tmp_path, folder):  # noqa: F811
    """The custom metric scores from its sources as they were before setup-command ran, as
    the agent's user; also when its package is in the eval set's own folder (a monorepo's
    agent folder: the nearest holding it, copied apart from the root's)."""
    with FakeGitHub() as fake:
        runner = Runner.create(tmp_path / "r", event())
        _lay_out(runner)
        ws = runner.workspace
        if folder:
            shutil.move(ws / "evalmetrics", ws / folder / "evalmetrics")
        (ws / "rewrite.py").write_text(
            SETUP_REWRITES.replace('"evalmetrics/probe.py"', f'"{folder}evalmetrics/probe.py"'))
        _hand_to_runner_user(runner)
        env = {**runner.github_env(fake.base_url, in_container=True, head_sha=HEAD),
               **input_env(fake.token, paths="agent_evals", agent_command="python agent.py",
                           baseline="off", num_runs="1", setup_command="python rewrite.py")}
        done = docker_run(image, runner, env)
        assert done.returncode == 1, (done.stdout + done.stderr)[-5000:]
        results = json.loads((runner.workspace / "evalcheck-report" / "results.json").read_text())
        scores = {m["score"] for s in results["evalSets"] for c in s["cases"]
                  for m in c["metrics"] if m["name"] == "probe"}
        assert scores == {48151.0}, scores  # not 12345.0: the rewritten module


def test_git_is_given_back_and_git_works_after_the_run(image, tmp_path):  # noqa: F811
    """The runner's later steps still use the repository: .git has its mode back."""
    with FakeGitHub() as fake:
        runner = Runner.create(tmp_path / "r", event())
        subprocess.run(["git", "init", "-q", str(runner.workspace)], check=True)
        before = oct(os.stat(runner.workspace / ".git").st_mode & 0o777)
        env = {**runner.github_env(fake.base_url, in_container=True, head_sha=HEAD),
               **input_env(fake.token, paths="agent_evals", replay="recorded_runs.json", baseline="off",
                           setup_command="git status > git-status.txt 2>&1; true")}
        done = docker_run(image, runner, env)
        assert done.returncode == 1, (done.stdout + done.stderr)[-3000:]
        assert oct(os.stat(runner.workspace / ".git").st_mode & 0o777) == before
        assert subprocess.run(["git", "-C", str(runner.workspace), "status"], capture_output=True).returncode == 0


SURVIVOR_AGENT = r'''
import json, os, sys, time

FORGED = json.dumps({"version": 1, "passed": True, "forged": "FORGED"}).encode()


def survive():
    os.setsid()
    if os.fork():
        os._exit(0)
    os.makedirs("evalcheck-report", exist_ok=True)
    fd = os.open("evalcheck-report/results-1.json", os.O_WRONLY | os.O_CREAT, 0o666)
    sleepers = 0
    while True:  # fill the pids limit (bounded: never more than 300 forks, whatever the limit)
        if sleepers < 300:
            try:
                if os.fork() == 0:
                    time.sleep(120)
                    os._exit(0)
                sleepers += 1
                continue
            except OSError:
                pass
        try:  # and forge the shard's results through the descriptor it holds, as soon as
            # root has written them (the window before the checker exits is milliseconds)
            st = os.fstat(fd)
            if st.st_size > 0 and st.st_size != len(FORGED):
                os.pwrite(fd, FORGED, 0)
                os.ftruncate(fd, len(FORGED))
        except OSError:
            pass
        time.sleep(0.0002)


if os.environ.get("EVALCHECK_EVAL_ID") == "paris_today" and os.fork() == 0:
    survive()
    os._exit(0)
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "user":
        print(json.dumps({"type": "response", "invocationId": msg["invocationId"],
                          "finalResponse": "no idea"}), flush=True)
'''


def test_survivors_under_a_pids_limit_die_and_forge_no_shard(image, tmp_path):  # noqa: F811
    """Issue 22, attack 7: under --pids-limit the agent filled pids.max, so the checker could
    not spawn its `kill -9 -1`; a survivor holding results-1.json open rewrote it after root
    wrote it (same inode). Now every process of the agent's user is killed from root without
    spawning, and the results file is a new one."""
    with FakeGitHub() as fake:
        runner = Runner.create(tmp_path / "r", event())
        (runner.workspace / "agent.py").write_text(SURVIVOR_AGENT)
        _hand_to_runner_user(runner)
        env = {**runner.github_env(fake.base_url, in_container=True, head_sha=HEAD),
               **input_env(fake.token, paths="agent_evals", agent_command="python agent.py",
                           num_runs="1", concurrency="1", baseline="off", shard="1/1", publish="false",
                           results="evalcheck-report/results-1.json")}
        done = docker_run(image, runner, env, extra=("--pids-limit", "64"))
        log = done.stdout + done.stderr
        assert done.returncode in (0, 2), log[-5000:]
        time.sleep(1.5)  # a survivor, had there been one, would have written by now
        text = (runner.workspace / "evalcheck-report" / "results-1.json").read_text()
        assert "FORGED" not in text, text[:300]
        results = json.loads(text)
        assert results["passed"] is False and results["shard"]["index"] == 1


def _forged_zip() -> bytes:
    """A pull request's 'results of main': every case failed, so that nothing regresses."""
    import io
    import zipfile

    data = json.loads((EXAMPLE / "baseline" / "results.json").read_text())
    for eval_set in data["evalSets"]:
        for c in eval_set["cases"]:
            c["status"] = "failed"
            for m in c["metrics"]:
                if m.get("score") is not None:
                    m["score"], m["runs"] = 0.0, [0.0 for _ in m.get("runs") or []]
                    m["status"] = "failed" if m["status"] == "passed" else m["status"]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("results.json", json.dumps(data))
    return buffer.getvalue()


def test_a_branchs_forged_artifact_at_the_merge_base_is_no_baseline(image, tmp_path):  # noqa: F811
    """Issue 22, attack 4, in the image: a pull_request run on another branch whose head is
    the merge base uploaded 'results of main'; main's own artifact for it is missing."""
    merge_base = "0" * 40
    with FakeGitHub() as fake:
        fake.history, fake.merge_base = [merge_base, "1" * 40], merge_base
        fake.add_artifact(merge_base, _forged_zip(), head_branch="feature", event="pull_request")
        fake.add_artifact(merge_base, _forged_zip(), event="pull_request")  # a PR from a branch 'main'
        fake.add_artifact(merge_base, _forged_zip(), from_fork=True, omit=("head_repository_id",))
        ev = event()
        ev["pull_request"]["base"]["ref"] = "main"
        runner = Runner.create(tmp_path / "r", ev)
        env = {**runner.github_env(fake.base_url, in_container=True, head_sha=HEAD),
               **input_env(fake.token, paths="agent_evals", replay="recorded_runs.json",
                           fail_on="regression")}
        done = docker_run(image, runner, env)
        log = done.stdout + done.stderr
        assert "baseline: results of main" not in log, log[-3000:]
        assert "no baseline" in log
        assert not fake.downloads and fake.violations == []
        results = json.loads((runner.workspace / "evalcheck-report" / "results.json").read_text())
        assert results.get("comparison") is None
        assert done.returncode == 1  # without a baseline, regression gates like failure


MUTATING = ("{%- for s in results.eval_sets %}{% for c in s.cases[:] %}"
            "{% if c.status != 'passed' and s.cases.remove(c) %}{% endif %}{% endfor %}{% endfor -%}"
            "## {{ results.eval_sets[0].cases | length }} case(s) shown\n")


def test_a_template_that_removes_failing_cases_changes_nothing_but_its_text(image, tmp_path):  # noqa: F811
    """Issue 22, attack 5, in the image: the template got the live results; the removed
    cases lost their annotations and the last line said 'gate passed' on a failing job."""
    with FakeGitHub() as fake:
        runner = Runner.create(tmp_path / "r", event())
        (runner.workspace / "t.j2").write_text(MUTATING)
        env = {**runner.github_env(fake.base_url, in_container=True, head_sha=HEAD),
               **input_env(fake.token, paths="agent_evals", replay="recorded_runs.json",
                           template="t.j2", baseline="off")}
        done = docker_run(image, runner, env)
        log = done.stdout + done.stderr
        assert done.returncode == 1, log[-3000:]
        assert "::error::evalcheck: gate failed (fail-on: failure)" in log
        (cid, run), = fake.check_runs.items()
        assert run["conclusion"] == "failure" and len(fake.annotations[cid]) == 1
        (comment,) = fake.comments[7]
        assert comment["body"].endswith("## 1 case(s) shown\n")  # the template's own copy
        results = json.loads((runner.workspace / "evalcheck-report" / "results.json").read_text())
        assert len(results["evalSets"][0]["cases"]) == 2
