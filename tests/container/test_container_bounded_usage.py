"""Usage counts that are not counts, in the real image: an agent reporting
``"promptTokenCount": 1e400`` (read as infinity) and a 29-digit count no longer crashes the
checker (it did: ``::error::evalcheck crashed``, no outputs) nor spends the token budget:
the runs' usage is left out with a warning naming each run, and the Action reports as usual."""

from __future__ import annotations

import json

from test_container_action import (HEAD, FakeGitHub, Runner, _hand_to_runner_user,  # noqa: F401
                                   docker_run, event, image, input_env)

AGENT = '''
import json, os, sys
usage = {"paris_today": '{"promptTokenCount": 1e400}',
         "compare_cities": '{"promptTokenCount": 12345678901234567890123456789}'}
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "user":
        sys.stdout.write('{"type": "response", "invocationId": "%s", "finalResponse": "no idea", '
                         '"usage": %s}\\n' % (msg["invocationId"],
                                             usage.get(os.environ["EVALCHECK_EVAL_ID"], "{}")))
        sys.stdout.flush()
'''


def test_usage_counts_that_are_not_counts_are_left_out_in_the_container(image, tmp_path):  # noqa: F811
    with FakeGitHub() as fake:
        runner = Runner.create(tmp_path / "r", event())
        (runner.workspace / "agent.py").write_text(AGENT)
        _hand_to_runner_user(runner)
        env = {**runner.github_env(fake.base_url, in_container=True, head_sha=HEAD),
               **input_env(fake.token, paths="agent_evals", num_runs="1", baseline="off",
                           agent_command="python agent.py", max_agent_tokens="1000")}
        done = docker_run(image, runner, env)
        log = done.stdout + done.stderr
        assert "crashed" not in log and "Traceback" not in log, log[-5000:]
        assert done.returncode == 1, log[-5000:]  # "no idea" fails the cases, nothing else
        for case in ("paris_today", "compare_cities"):
            assert f"/{case} run 1: the agent's token usage was left out: promptTokenCount is" in log
        assert "token budget" not in log  # 10^28 tokens did not spend --max-agent-tokens
        assert runner.outputs()["passed"] == "false"
        results = json.loads((runner.workspace / "evalcheck-report" / "results.json").read_text())
        assert all("usage" not in run for s in results["evalSets"] for c in s["cases"]
                   for run in c["runs"])
        (check,) = fake.check_runs.values()
        assert check["conclusion"] == "failure"
