"""``evalcheck-adk-ts`` is found beside ``evalcheck`` when the venv's bin is not on PATH (run as
``.venv/bin/evalcheck``), as ``evalcheck-adk`` is (tests/agents/test_our_commands.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tshelpers import AGENTS, NODE_MODULES, PY, require_packages

EVALCHECK = Path(PY).parent / "evalcheck"
ECHO = (AGENTS / "iqai" / "echo.mjs").as_uri()


def test_the_adapter_beside_evalcheck_runs_with_its_folder_off_path(tmp_path):
    require_packages()
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
    done = subprocess.run(
        [str(EVALCHECK), "run", "evals", "--agent-command", "evalcheck-adk-ts agent.mjs",
         "--num-runs", "1", "--results", "results.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=180,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CI": "true"})
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["summary"]["passed"] == 1, results["summary"]
