"""End to end: build the action's image and run it exactly as the Actions runner does.

`docker build` of the real Dockerfile as the runner builds it, with no build arguments: its
default base, debian:bookworm-slim, is here the Debian bookworm that
scripts/setup.d/50-docker.sh bootstraps and tags under that name, since images cannot be
pulled here (EVALCHECK_BASE_IMAGE names another base); then `docker run` with the
runner's mounts, working directory and -e variables, on the weather example (replay mode:
one failing and one passing case), against the fake GitHub API on 127.0.0.1 (--network
host). In CI (CI=true) a missing docker is a failure, not a skip.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "github"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "vertex"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judges"))

from fake_github import FakeGitHub  # noqa: E402
from fake_vertex import FakeVertex  # noqa: E402

from fake_gemini import FakeGemini, verdict  # noqa: E402
from runner_env import ROOT, Runner, docker_problem, input_env  # noqa: E402

DEFAULT_BASE = re.search(r"^ARG BASE_IMAGE=(\S+)$", (ROOT / "Dockerfile").read_text(), re.M).group(1)
BASE_IMAGE = os.environ.get("EVALCHECK_BASE_IMAGE", DEFAULT_BASE)
# One tag per checkout: several checkouts testing on one machine must not run each
# other's image (a tag is rebuilt by whoever builds last).
IMAGE = "evalcheck-action:pytest-" + hashlib.sha1(str(ROOT).encode()).hexdigest()[:10]
HEAD = "d" * 40


@pytest.fixture(scope="module")
def image() -> str:
    problem = docker_problem(BASE_IMAGE)
    if problem:
        if os.environ.get("CI") == "true":
            pytest.fail(f"container test needs docker in CI: {problem}")
        pytest.skip(problem)
    base = [] if BASE_IMAGE == DEFAULT_BASE else ["--build-arg", f"BASE_IMAGE={BASE_IMAGE}"]
    build = subprocess.run(["docker", "build", "-q", *base, "-t", IMAGE, str(ROOT)],
                           capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    return IMAGE


def docker_run(image: str, runner: Runner, env: dict[str, str],
               extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    # As the runner does it (ContainerActionHandler / DockerCommandManager): values travel in
    # the environment and are named with `-e NAME`, never written on the command line.
    # ``extra``: options of a self-hosted runner's engine (e.g. --pids-limit).
    args = ["docker", "run", "--rm", *extra, "--workdir", "/github/workspace", "--network", "host",
            "-v", f"{runner.workspace}:/github/workspace", "-v", f"{runner.home}:/github/home",
            "-v", f"{runner.workflow}:/github/workflow",
            "-v", f"{runner.file_commands}:/github/file_commands"]
    for name in env:
        args += ["-e", name]
    return subprocess.run([*args, image], env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=600)


def test_the_image_runs_debians_python(image):
    """evalcheck and the agent run on the Python of the Debian release the default base names
    (bookworm: python3 3.11 from apt, in /usr), as in CI's bootstrapped base."""
    suite = DEFAULT_BASE.removeprefix("debian:").removesuffix("-slim")
    probe = ("import platform, sys; print(platform.freedesktop_os_release()['VERSION_CODENAME'], "
             "'%d.%d' % sys.version_info[:2], sys.base_prefix)")
    for python in ("/opt/evalcheck/bin/python", "/opt/agent/bin/python"):
        done = subprocess.run(["docker", "run", "--rm", "--entrypoint", python, image, "-c", probe],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == [suite, {"bookworm": "3.11"}[suite], "/usr"], python


def event() -> dict:
    return {"action": "opened", "number": 7,
            "pull_request": {"number": 7, "head": {"sha": HEAD, "repo": {"full_name": "octo/agents"}},
                             "base": {"sha": "b" * 40, "repo": {"full_name": "octo/agents"}}},
            "repository": {"full_name": "octo/agents"}}


def test_container_action_end_to_end(image, tmp_path):
    with FakeGitHub() as fake:
        runner = Runner.create(tmp_path / "first", event())
        # The agent's requirements go into the agent's venv, first on PATH in the image.
        setup = "pip --version > setup-pip.txt && python -c 'import sys; print(sys.prefix)' > setup-prefix.txt"
        env = {**runner.github_env(fake.base_url, in_container=True, head_sha=HEAD),
               **input_env(fake.token, replay="recorded_runs.json", paths="agent_evals",
                           commit_status="true", setup_command=setup)}
        done = docker_run(image, runner, env)
        log = done.stdout + done.stderr
        assert done.returncode == 1, log  # one case fails on purpose: the gate fails the job

        # outputs, summary, report files
        outputs = runner.outputs()
        assert outputs["passed"] == "false"
        assert outputs["results-path"] == "evalcheck-report/results.json"
        results = json.loads((runner.workspace / outputs["results-path"]).read_text())
        assert results["summary"]["passed"] == 1 and results["summary"]["failed"] == 1
        assert "IN\\_ORDER: 1 expected call not matched" in (runner.workspace / outputs["markdown-path"]).read_text()
        summary = runner.summary()
        assert "Gate failed:" in summary
        assert "https://github.com/octo/agents/actions/runs/4242" in summary
        assert (runner.workspace / "setup-prefix.txt").exists(), log
        assert (runner.workspace / "setup-prefix.txt").read_text().strip() == "/opt/agent"

        # the sticky comment, check run with its annotation, status
        (comment,) = fake.comments[7]
        assert comment["body"].startswith("<!-- evalcheck:default -->")
        assert "compare\\_cities" in comment["body"] and "<details>" in comment["body"]
        assert outputs["comment-url"] == comment["html_url"]
        (cid, run), = fake.check_runs.items()
        assert run["head_sha"] == HEAD and run["conclusion"] == "failure"
        assert run["details_url"] == "https://github.com/octo/agents/actions/runs/4242"
        (note,) = fake.annotations[cid]
        assert (note["path"], note["start_line"], note["annotation_level"]) == \
            ("agent_evals/weather.evalset.json", 22, "failure")
        assert note["title"] == "compare_cities: failed"
        (status,) = fake.statuses
        assert status["state"] == "failure" and status["sha"] == HEAD

        # the token: masked first, never printed otherwise
        assert log.count(fake.token) == 1 and f"::add-mask::{fake.token}" in log
        assert "::group::evalcheck: evaluation" in log

        # a second push: the same comment is updated; fail-on: never lets the job pass
        runner2 = Runner.create(tmp_path / "second", event())
        env2 = {**runner2.github_env(fake.base_url, in_container=True, head_sha=HEAD),
                **input_env(fake.token, replay="recorded_runs.json", paths="agent_evals", fail_on="never")}
        done2 = docker_run(image, runner2, env2)
        assert done2.returncode == 0, done2.stdout + done2.stderr
        assert len(fake.comments[7]) == 1
        assert runner2.outputs()["comment-url"] == comment["html_url"]
        assert list(fake.check_runs.values())[-1]["conclusion"] == "neutral"
        assert fake.violations == [], fake.violations


def test_container_bad_input_exits_2(image, tmp_path):
    with FakeGitHub() as fake:
        runner = Runner.create(tmp_path, event())
        env = {**runner.github_env(fake.base_url, in_container=True, head_sha=HEAD),
               **input_env(fake.token, replay="missing.json")}
        done = docker_run(image, runner, env)
        assert done.returncode == 2
        assert "input 'replay': missing.json does not exist" in done.stdout + done.stderr
        assert "Traceback" not in done.stdout + done.stderr
        assert fake.requests == []


def test_container_scores_gemini_judge_and_vertex_metrics(image, tmp_path):
    """The image ships the judge and Vertex AI clients: criteria that need them are scored
    in the container (against the fakes on the host network), not reported as missing."""
    answer = {"role": "model", "parts": [{"text": "Sunny, 21 C."}]}
    turn = {"invocation_id": "inv-1", "user_content": {"role": "user", "parts": [{"text": "Paris?"}]},
            "final_response": answer}
    with FakeGitHub() as github, FakeGemini() as gemini:
        vertex = FakeVertex().start()
        try:
            gemini.on("", verdict(True))
            runner = Runner.create(tmp_path, event())
            evals = runner.workspace / "judged"
            evals.mkdir()
            (evals / "j.evalset.json").write_text(json.dumps(
                {"eval_set_id": "j", "eval_cases": [{"eval_id": "paris", "conversation": [turn]}]}))
            (evals / "test_config.json").write_text(json.dumps({"criteria": {
                "final_response_match_v2": 1.0, "safety_v1": 1.0}}))
            (runner.workspace / "judged_runs.json").write_text(json.dumps({"version": 1, "runs": [
                {"evalSetId": "j", "evalId": "paris", "run": 1, "invocations": [turn]}]}))
            env = {**runner.github_env(github.base_url, in_container=True, head_sha=HEAD),
                   **input_env(github.token, replay="judged_runs.json", paths="judged"),
                   "GOOGLE_API_KEY": vertex.api_key, "EVALCHECK_GEMINI_BASE_URL": gemini.url,
                   "GOOGLE_VERTEX_BASE_URL": vertex.url}
            done = docker_run(image, runner, env)
            log = done.stdout + done.stderr
            assert done.returncode == 0, log
            results = json.loads((runner.workspace / runner.outputs()["results-path"]).read_text())
            metrics = {m["name"]: m for m in results["evalSets"][0]["cases"][0]["metrics"]}
            assert metrics["final_response_match_v2"]["status"] == "passed", metrics
            assert metrics["safety_v1"]["status"] == "passed", metrics
            assert len(gemini.requests) >= 1 and len(vertex.requests) == 1
            assert vertex.api_key not in log
        finally:
            vertex.stop()


def test_container_passes_a_groq_judges_variables_through(image, tmp_path):
    """A judge named by LiteLLM's provider names (groq/...) is scored in the container with
    the step's GROQ_API_KEY and GROQ_API_BASE (the fake OpenAI-compatible server on the host
    network standing in for Groq), as the Gemini judge's variables are; the key never shows."""
    from tests.judges.fake_openai import FakeOpenAI, json_answer

    key = "gsk-fake-container-0123456789"
    answer = {"role": "model", "parts": [{"text": "Sunny, 21 C."}]}
    turn = {"invocation_id": "inv-1", "user_content": {"role": "user", "parts": [{"text": "Paris?"}]},
            "final_response": answer}
    with FakeGitHub() as github, FakeOpenAI(key) as groq:
        groq.on("You grade answers given by an AI agent",
                *[json_answer({"reasoning": "same forecast", "verdict": "valid"})] * 3)
        runner = Runner.create(tmp_path, event())
        evals = runner.workspace / "judged"
        evals.mkdir()
        (evals / "j.evalset.json").write_text(json.dumps(
            {"eval_set_id": "j", "eval_cases": [{"eval_id": "paris", "conversation": [turn]}]}))
        (evals / "test_config.json").write_text(json.dumps({"criteria": {"final_response_match_v2": {
            "threshold": 1.0, "judge_model_options": {"judge_model": "groq/llama-3.3-70b-versatile",
                                                      "num_samples": 3}}}}))
        (runner.workspace / "judged_runs.json").write_text(json.dumps({"version": 1, "runs": [
            {"evalSetId": "j", "evalId": "paris", "run": 1, "invocations": [turn]}]}))
        env = {**runner.github_env(github.base_url, in_container=True, head_sha=HEAD),
               **input_env(github.token, replay="judged_runs.json", paths="judged"),
               "GROQ_API_KEY": key, "GROQ_API_BASE": groq.url + "/openai/v1"}
        done = docker_run(image, runner, env)
        log = done.stdout + done.stderr
        assert done.returncode == 0, log
        results = json.loads((runner.workspace / runner.outputs()["results-path"]).read_text())
        metrics = {m["name"]: m for m in results["evalSets"][0]["cases"][0]["metrics"]}
        metric = metrics["final_response_match_v2"]
        assert (metric["status"], metric["score"]) == ("passed", 1.0), metrics
        assert len(groq.requests) == 3  # one call a sample, as ADK makes them
        assert {r.model for r in groq.requests} == {"llama-3.3-70b-versatile"}
        assert {r.headers.get("Authorization") for r in groq.requests} == {f"Bearer {key}"}
        assert key not in log + json.dumps(results) + json.dumps(github.comments)


def test_container_runs_a_live_agent(image, tmp_path):
    """The main use: the agent runs inside the container (stdio protocol, its own process
    group per run), every case twice, and the comment reports the live runs."""
    with FakeGitHub() as fake:
        runner = Runner.create(tmp_path, event())
        shutil.copy(ROOT / "examples" / "agents" / "python_weather" / "agent.py", runner.workspace / "agent.py")
        env = {**runner.github_env(fake.base_url, in_container=True, head_sha=HEAD),
               **input_env(fake.token, agent_command="python agent.py", paths="agent_evals",
                           num_runs="2", inference_out="evalcheck-report/runs.json")}
        done = docker_run(image, runner, env)
        log = done.stdout + done.stderr
        assert done.returncode == 0, log
        results = json.loads((runner.workspace / runner.outputs()["results-path"]).read_text())
        assert results["passed"] is True and results["metadata"]["mode"] == "stdio"
        cases = results["evalSets"][0]["cases"]
        assert [len(c["runs"]) for c in cases] == [2, 2]
        assert all(r["status"] == "passed" for c in cases for r in c["runs"])
        recorded = json.loads((runner.workspace / "evalcheck-report" / "runs.json").read_text())
        assert len(recorded["runs"]) == 4
        assert '"Oslo"' in json.dumps(recorded) and "get_weather" in json.dumps(recorded)
        (comment,) = fake.comments[7]
        assert "passed" in comment["body"] and fake.violations == []


def test_container_runs_an_adk_agent_folder_through_the_bridge(image, tmp_path):
    """An ADK team's one line: setup-command installs google-adk into the agent's
    environment, and `evalcheck-adk FOLDER` runs their agent folder as it is - the real
    test agent (tools, a sub-agent, session state), offline model - even next to a
    checker/ package of the team's own, which shadowed the bridge's first name."""
    with FakeGitHub() as fake:
        runner = Runner.create(tmp_path, event())
        shutil.copytree(ROOT / "tests" / "adk_agent" / "weather_app", runner.workspace / "weather_app",
                        ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(ROOT / "tests" / "adk_agent" / "evals", runner.workspace / "adk_evals")
        (runner.workspace / "checker").mkdir()
        (runner.workspace / "checker" / "__init__.py").write_text("")
        env = {**runner.github_env(fake.base_url, in_container=True, head_sha=HEAD),
               **input_env(fake.token, paths="adk_evals", num_runs="1",
                           setup_command="pip install --quiet google-adk==2.13.0",
                           agent_command="evalcheck-adk weather_app")}
        done = docker_run(image, runner, env)
        log = done.stdout + done.stderr
        assert done.returncode == 1, log[-5000:]  # one case expects a wrong trajectory, on purpose
        results = json.loads((runner.workspace / runner.outputs()["results-path"]).read_text())
        statuses = {c["evalId"]: c["status"] for c in results["evalSets"][0]["cases"]}
        assert statuses == {"paris_celsius": "passed", "weather_then_forecast": "passed",
                            "wrong_expectation": "failed", "compare_fahrenheit": "passed"}, log[-5000:]
        # The bridge ran in the agent's environment, where evalcheck itself is not installed.
        assert "No module named" not in log


def test_container_runs_several_adk_agents_each_eval_set_on_its_own(image, tmp_path):
    """A repository of three ADK agents (tests/adk_agent/several_agents.py), one
    `agent-command: evalcheck-adk agents`: each eval set runs on its own agent - the agents'
    own answers and authors show it - in one bridge process in the agent's environment."""
    sys.path.insert(0, str(ROOT / "tests" / "adk_agent"))
    from several_agents import AUTHORS, build

    with FakeGitHub() as fake:
        runner = Runner.create(tmp_path, event())
        build(runner.workspace)
        env = {**runner.github_env(fake.base_url, in_container=True, head_sha=HEAD),
               **input_env(fake.token, paths="agents evals", num_runs="2",
                           inference_out="evalcheck-report/inference.json",
                           setup_command="pip install --quiet google-adk==2.13.0",
                           agent_command="evalcheck-adk agents")}
        done = docker_run(image, runner, env)
        log = done.stdout + done.stderr
        assert done.returncode == 0, log[-5000:]
        results = json.loads((runner.workspace / runner.outputs()["results-path"]).read_text())
        statuses = {s["evalSetId"]: {c["status"] for c in s["cases"]} for s in results["evalSets"]}
        assert statuses == {"weather": {"passed"}, "shop": {"passed"}, "greetings": {"passed"}}, log[-5000:]
        runs = json.loads((runner.workspace / "evalcheck-report" / "inference.json").read_text())["runs"]
        authors: dict[str, set[str]] = {}
        for run in runs:
            assert run.get("error") is None, run["error"]
            for invocation in run["invocations"]:
                for step in invocation["intermediateData"].get("invocationEvents", []):
                    authors.setdefault(run["evalSetId"], set()).add(step["author"])
        assert authors["weather"] == AUTHORS["weather_app"] and authors["shop"] == AUTHORS["shop_app"]
        greetings = [r["invocations"][0]["finalResponse"]["parts"][0]["text"] for r in runs
                     if r["evalSetId"] == "greetings"]
        assert sorted(set(greetings)) == ["Hello Ada, I am the greeter.", "Hello Bo, I am the greeter."]
        assert len(runs) == 2 * 10 and fake.violations == []


def _hand_to_runner_user(runner: Runner, uid: int = 1001) -> None:
    """The runner's directories belong to its user (uid 1001 on GitHub's runners), not root."""
    for top in (runner.workspace, runner.home, runner.file_commands):
        for path in [top, *top.rglob("*")]:
            os.lchown(path, uid, uid)


def test_container_agent_cannot_forge_the_verdict(image, tmp_path):
    """The PR's agent runs as an unprivileged user with a scrubbed environment: each attack
    of issue 11 fails, and the failing agent still fails the gate everywhere."""
    runner_uid = 1001
    actions_token = "actions-runtime-secret-4711"
    with FakeGitHub() as fake:
        runner = Runner.create(tmp_path, event())
        shutil.copy(Path(__file__).with_name("hostile_agent.py"), runner.workspace / "agent.py")
        env_file, path_file = runner.file_commands / "set_env_1", runner.file_commands / "add_path_1"
        env_file.touch()
        path_file.touch()
        _hand_to_runner_user(runner, runner_uid)
        env = {**runner.github_env(fake.base_url, in_container=True, head_sha=HEAD),
               **input_env(fake.token, agent_command="python agent.py", paths="agent_evals",
                           num_runs="1", concurrency="1",
                           setup_command="id -u > setup-uid.txt && touch /opt/agent/setup-was-here"),
               "GITHUB_ENV": "/github/file_commands/set_env_1",
               "GITHUB_PATH": "/github/file_commands/add_path_1",
               "ACTIONS_RUNTIME_TOKEN": actions_token, "GITHUB_TOKEN": fake.token}
        done = docker_run(image, runner, env)
        log = done.stdout + done.stderr
        assert done.returncode == 1, log[-5000:]
        attacks = json.loads((runner.workspace / "attacks.json").read_text())

        # It ran as the unprivileged user, and so did setup-command (which could still
        # install into the agent's environment).
        assert attacks["uid"] == attacks["euid"] != 0
        assert (runner.workspace / "setup-uid.txt").read_text().strip() == str(attacks["uid"])
        assert "setup-command failed" not in log
        # evalcheck's installation is not writable.
        assert attacks["rouge_score_found"], attacks
        assert attacks["append_rouge_score"].startswith("PermissionError"), attacks
        assert attacks["append_checker"].startswith("PermissionError"), attacks
        assert attacks["add_rouge_score_source"].startswith("PermissionError"), attacks
        assert attacks["add_pth"].startswith("PermissionError"), attacks
        # No token, input, file command or ACTIONS_* variable in its environment ...
        agent_env = attacks["environ"]
        leaked = [k for k in agent_env if k.startswith(("INPUT_", "ACTIONS_")) or k in (
            "GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STATE", "GITHUB_STEP_SUMMARY", "GITHUB_TOKEN")]
        assert leaked == [], leaked
        assert fake.token not in json.dumps(agent_env) and actions_token not in json.dumps(agent_env)
        # ... nor readable from any process's /proc/<pid>/environ (the checker is PID 1).
        readable = json.dumps(attacks["proc_environ"])
        assert fake.token not in readable and actions_token not in readable
        assert attacks["proc_environ"]["1"].startswith("PermissionError"), attacks["proc_environ"]
        # The runner's file-command files are not writable, and the report paths it bent
        # into symlinks to the step-output file were not followed.
        assert len(attacks["file_commands"]) == 4, attacks
        for path in attacks["file_commands"]:
            assert attacks[f"write {os.path.basename(path)}"].startswith("PermissionError"), attacks
        assert attacks["symlink_reports"] == "done", attacks
        assert env_file.read_text() == "" and path_file.read_text() == ""
        assert "FORGED" not in runner.summary() and "forged" not in runner.summary()
        outputs = (runner.file_commands / runner.output_name).read_text()
        assert "FORGED" not in outputs and "BASH_ENV" not in outputs

        # The verdict: the step output, the results file (the detached forger was killed),
        # the check run and the status all say failed.
        assert runner.outputs()["passed"] == "false"
        results = json.loads((runner.workspace / "evalcheck-report" / "results.json").read_text())
        assert results["passed"] is False and "forged" not in results
        assert not (runner.workspace / "evalcheck-report" / "results.json").is_symlink()
        assert not (runner.workspace / "evalcheck-report" / "report.md").is_symlink()
        (run,) = fake.check_runs.values()
        assert run["conclusion"] == "failure"
        assert "Gate failed:" in runner.summary()

        # The workspace is the runner user's again, files the agent wrote included.
        strays = [str(p) for p in [runner.workspace, *runner.workspace.rglob("*")]
                  if p.lstat().st_uid != runner_uid]
        assert strays == [], strays
        assert (runner.workspace / "attacks.json").stat().st_uid == runner_uid
        assert log.count(fake.token) == 1 and actions_token not in log


def test_container_agent_server_runs_unprivileged(image, tmp_path):
    """agent-server-command runs as the agent's user too, with the scrubbed environment;
    its runs complete over HTTP and the workspace is given back."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with FakeGitHub() as fake:
        runner = Runner.create(tmp_path, event())
        shutil.copy(ROOT / "tests" / "agents" / "agents" / "tiny_api_server.py", runner.workspace)
        _hand_to_runner_user(runner)
        server = f"id -u > server-uid.txt && env > server-env.txt && exec python tiny_api_server.py {port} server.pid"
        env = {**runner.github_env(fake.base_url, in_container=True, head_sha=HEAD),
               **input_env(fake.token, agent_url=f"http://127.0.0.1:{port}", agent_server_command=server,
                           app_name="tiny", paths="agent_evals", num_runs="1")}
        done = docker_run(image, runner, env)
        log = done.stdout + done.stderr
        assert done.returncode == 1, log[-5000:]  # the tiny server's answers miss the thresholds
        results = json.loads((runner.workspace / runner.outputs()["results-path"]).read_text())
        runs = [r for c in results["evalSets"][0]["cases"] for r in c["runs"]]
        assert runs and all(r.get("error") is None for r in runs), runs
        assert (runner.workspace / "server-uid.txt").read_text().strip() == "48151"
        server_env = (runner.workspace / "server-env.txt").read_text()
        assert fake.token not in server_env and "INPUT_" not in server_env
        assert "GITHUB_OUTPUT" not in server_env and "GITHUB_STEP_SUMMARY" not in server_env
        assert (runner.workspace / "server-uid.txt").stat().st_uid == 1001
