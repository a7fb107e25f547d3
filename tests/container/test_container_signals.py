"""`docker stop` (what a cancelled job does): SIGTERM reaches the container's PID 1, the
entrypoint, which stops the agents like Ctrl-C does and exits 143 - not 137 after Docker's
grace period, which is what an entrypoint that ignores SIGTERM as PID 1 gets."""

from __future__ import annotations

import os
import subprocess
import time
import uuid

from test_container_action import HEAD, event, image  # noqa: F401 (the image fixture)

from fake_github import FakeGitHub
from runner_env import Runner, input_env


def test_docker_stop_is_ctrl_c_with_status_143(image, tmp_path):  # noqa: F811
    name = f"evalcheck-sigterm-{uuid.uuid4().hex[:8]}"
    with FakeGitHub() as fake:
        runner = Runner.create(tmp_path, event())
        env = {**runner.github_env(fake.base_url, in_container=True, head_sha=HEAD),
               **input_env(fake.token, paths="agent_evals", num_runs="1",
                           agent_command="echo started > started.txt; sleep 300")}
        args = ["docker", "run", "--name", name, "--workdir", "/github/workspace", "--network", "host",
                "-v", f"{runner.workspace}:/github/workspace", "-v", f"{runner.home}:/github/home",
                "-v", f"{runner.workflow}:/github/workflow", "-v", f"{runner.file_commands}:/github/file_commands"]
        for key in env:
            args += ["-e", key]
        proc = subprocess.Popen([*args, image], env={**os.environ, **env}, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 120
            while not (runner.workspace / "started.txt").exists():
                assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
                time.sleep(0.2)
            stopped = time.monotonic()
            subprocess.run(["docker", "stop", "-t", "30", name], capture_output=True, timeout=60)
            out, err = proc.communicate(timeout=60)
            took = time.monotonic() - stopped
        finally:
            subprocess.run(["docker", "rm", "-f", name], capture_output=True)
    assert proc.returncode == 143, out[-3000:] + err[-3000:]
    assert took < 20, f"{took:.1f} s: SIGTERM was not acted on"
    assert "evalcheck: interrupted; 0 run(s) had finished" in err
    assert "Traceback" not in out + err
    assert "passed" not in runner.outputs()
