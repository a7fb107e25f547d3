"""``evalcheck-adk-ts`` is found beside ``evalcheck`` when the venv's bin is not on PATH (run as
``.venv/bin/evalcheck``), as ``evalcheck-adk`` is (tests/agents/test_our_commands.py); and it
needs only the plain install, no Python ADK (the ``[adk]`` extra), as docs/adk-typescript.md says."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tshelpers import AGENTS, NODE_MODULES, PY, require_packages

EVALCHECK = Path(PY).parent / "evalcheck"
ECHO = (AGENTS / "iqai" / "echo.mjs").as_uri()
REPO = Path(__file__).resolve().parents[2]
# Run first in every Python process: google-adk and google-genai (what the [adk] extra
# brings) cannot be imported, as in a plain `pip install` of evalcheck.
NO_PYTHON_ADK = """import sys

class NoPythonAdk:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[:2] in (["google", "adk"], ["google", "genai"]):
            raise ImportError(f"{name}: not installed (plain pip install)")
        return None

sys.meta_path.insert(0, NoPythonAdk())
"""


def echo_project(tmp_path: Path) -> None:
    assert not Path("/usr/bin/evalcheck-adk-ts").exists()
    (tmp_path / "node_modules").symlink_to(NODE_MODULES, target_is_directory=True)
    (tmp_path / "agent.mjs").write_text(
        f'import {{ echoAgent }} from "{ECHO}";\nexport const rootAgent = echoAgent("root");\n')
    evals = tmp_path / "evals"
    evals.mkdir()
    (evals / "set.evalset.json").write_text(json.dumps({"eval_set_id": "set", "eval_cases": [{
        "eval_id": "hi", "conversation": [{
            "user_content": {"role": "user", "parts": [{"text": "hi"}]},
            "final_response": {"role": "model", "parts": [{"text": "root: hi"}]}}]}]}))
    (evals / "test_config.json").write_text(json.dumps({"criteria": {"response_match_score": 1.0}}))


def test_the_adapter_beside_evalcheck_runs_with_its_folder_off_path(tmp_path):
    require_packages()
    echo_project(tmp_path)
    done = subprocess.run(
        [str(EVALCHECK), "run", "evals", "--agent-command", "evalcheck-adk-ts agent.mjs",
         "--num-runs", "1", "--results", "results.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=180,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CI": "true"})
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["summary"]["passed"] == 1, results["summary"]


def test_the_adapter_needs_no_python_adk(tmp_path):
    require_packages()
    echo_project(tmp_path)
    blocker = tmp_path / "site"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(NO_PYTHON_ADK)
    done = subprocess.run(
        [str(EVALCHECK), "run", "evals", "--agent-command", "evalcheck-adk-ts agent.mjs",
         "--num-runs", "1", "--results", "results.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=180,
        env={"PATH": f"{EVALCHECK.parent}:/usr/bin:/bin", "HOME": str(tmp_path), "CI": "true",
             "PYTHONPATH": str(blocker)})
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "results.json").read_text())["summary"]["passed"] == 1
    # The blocker works: google-adk, installed here, cannot be imported under it.
    adk = subprocess.run([PY, "-c", "import google.adk"], capture_output=True, text=True,
                         timeout=60, env={"PYTHONPATH": str(blocker)})
    assert adk.returncode == 1 and "google.adk: not installed (plain pip install)" in adk.stderr


def test_the_typescript_docs_say_the_plain_install_is_enough():
    docs = (REPO / "docs" / "adk-typescript.md").read_text()
    assert "the package alone (`evalcheck-adk`, no extra) is all a TypeScript agent needs" in docs
    assert "pip install ./evalcheck " in docs and "[adk]` extra adds Python's google-adk" in docs
