"""The image itself (issue 25): its size, what `docker run IMAGE --help` loads, the packed
bytecode the Vertex AI criteria import, and git without perl. bench/bench_image.py measures
the size and start times against the same targets."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_container_action import image  # noqa: E402,F401

MAX_IMAGE_BYTES = 400_000_000  # with every criterion (EXTRAS=judges,vertex, the default)


def run(image: str, *args: str, entrypoint: str | None = None) -> subprocess.CompletedProcess[str]:
    entry = ["--entrypoint", entrypoint] if entrypoint else []
    return subprocess.run(["docker", "run", "--rm", *entry, image, *args],
                          capture_output=True, text=True, timeout=300)


def test_the_image_is_at_most_400_mb(image):  # noqa: F811
    size = int(subprocess.run(["docker", "image", "inspect", "-f", "{{.Size}}", image],
                              capture_output=True, text=True, check=True).stdout)
    assert size <= MAX_IMAGE_BYTES, f"image is {size / 1e6:.0f} MB (bench/bench_image.py tells what weighs)"


def test_help_is_the_command_lines_and_loads_no_action_machinery(image):  # noqa: F811
    done = run(image, "--help")
    assert done.returncode == 0, done.stderr
    assert "Usage: evalcheck" in done.stdout and "run" in done.stdout
    # What it imports: the click command line only, not the Action's entry (pydantic, httpx,
    # the publisher) nor the packed SDKs, whose zip it never opens (scripts/image_slim.py).
    probe = ("import runpy, sys\nsys.argv = ['/entrypoint', '--help']\n"
             "try:\n    runpy.run_path('/entrypoint', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "heavy = [m for m in sys.modules if m.split('.')[0] in ('pydantic', 'httpx', 'google', 'jinja2')"
             " or m.startswith('checker.action')]\n"
             "import zipimport\nprint('checker.cli' in sys.modules, heavy, list(zipimport._zip_directory_cache))\n")
    traced = run(image, "-c", probe, entrypoint="/opt/evalcheck/bin/python")
    assert traced.returncode == 0, traced.stderr
    assert traced.stdout.splitlines()[-1] == "True [] []", traced.stdout.splitlines()[-1]


def test_the_action_without_arguments_still_runs_the_action(image):  # noqa: F811
    done = run(image)
    assert done.returncode == 2
    assert "give exactly one of the inputs agent-command, agent-url, replay" in done.stderr


def test_vertex_and_judge_clients_import_from_the_packed_bytecode(image):  # noqa: F811
    probe = ("import os; os.environ['LITELLM_LOCAL_MODEL_COST_MAP'] = 'True'\n"
             "import agentplatform._genai.evals, google.cloud.aiplatform_v1beta1, google.genai, pandas\n"
             "from vertexai.evaluation.metrics.metric_prompt_template_examples import MetricPromptTemplateExamples\n"
             "import pydantic, grpc, numpy\n"
             "print(google.cloud.aiplatform_v1beta1.__file__)\n"
             "print(pydantic.__file__)\n")
    done = run(image, "-c", probe, entrypoint="/opt/evalcheck/bin/python")
    assert done.returncode == 0, done.stderr[-3000:]
    packed, on_disk = done.stdout.split()
    assert "/_evalcheck_bytecode.zip/google/cloud/aiplatform_v1beta1/" in packed
    # Imported by every start of the Action: kept out of the zip.
    assert on_disk.endswith("/site-packages/pydantic/__init__.pyc"), on_disk


def test_git_works_without_perl(image):  # noqa: F811
    script = ("set -e; cd /tmp && git init -q r && cd r && git config user.email a@b && "
              "git config user.name a && echo x > f && git add f && git commit -qm one && "
              "echo y >> f && git diff --stat && git commit -qam two && git log --oneline | wc -l && "
              "git clone -q /tmp/r /tmp/c && git -C /tmp/c rev-parse --short HEAD >/dev/null && "
              "test ! -e /usr/bin/perl5.36-x86_64-linux-gnu && dpkg -s perl-modules-5.36 2>&1 | grep -c 'not installed'")
    done = run(image, "-c", script, entrypoint="/bin/sh")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-2:] == ["2", "1"], done.stdout
