"""What a change under test brings in its own files - paths its eval and config files name, a
judge cache, a baseline file, a replay file - is its claim: under ``--confine`` (the Action's
rules on the command line) none of it decides the gate on its own (docs/command-line.md#untrusted-checkouts)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from corehelpers import run_cli, write_json

ECHO_AGENT = '''
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "user":
        print(json.dumps({"type": "response", "invocationId": msg["invocationId"],
                          "finalResponse": "fine"}), flush=True)
'''
PASSING_FUNCTION = "def evaluate(instance):\n    return {'score': 1.0}\n"


def agents_cli_project(root: Path, function_file: str) -> Path:
    """An agents-cli dataset of one case whose one metric is a custom_function_file."""
    (root / ".git").mkdir(parents=True)
    (root / "agent.py").write_text(ECHO_AGENT)
    evals = root / "tests" / "eval"
    write_json(evals / "datasets" / "d.json", {"eval_cases": [
        {"eval_case_id": "one", "prompt": {"role": "user", "parts": [{"text": "hi"}]}}]})
    (evals / "eval_config.yaml").write_text(
        "metrics_to_run:\n  - fn\ncustom_metrics:\n  - name: fn\n"
        f"    custom_function_file: {json.dumps(function_file)}\n")
    return root


def run_project(root: Path, *extra: str):
    return run_cli(["run", ".", "--agent-command", f"{sys.executable} agent.py", "--num-runs", "1",
                    "--threshold", "fn=1", *extra], root)


@pytest.mark.parametrize("named", ["absolute", "climbing"])
def test_a_custom_function_file_outside_the_checkout_is_refused_under_confine(tmp_path, named):
    outside = tmp_path / "outside" / "fn.py"
    outside.parent.mkdir()
    outside.write_text(PASSING_FUNCTION)
    ref = str(outside) if named == "absolute" else "../../../outside/fn.py"
    root = agents_cli_project(tmp_path / "repo", ref)
    done = run_project(root)  # without --confine: a path like any other, read and run
    assert done.code == 0, done.output
    done = run_project(root, "--confine", ".")
    assert done.code == 2, done.output
    assert ("tests/eval/eval_config.yaml at $.custom_metrics[0].custom_function_file: this "
            f"custom_function_file ({outside}) lies outside the workspace") in done.stderr
    assert "Traceback" not in done.output


def test_a_missing_file_outside_is_refused_as_outside_not_as_missing(tmp_path):
    """Whether a file outside exists is not the change's to learn from the log."""
    root = agents_cli_project(tmp_path / "repo", "/etc/evalcheck-no-such-file.py")
    done = run_project(root, "--confine", ".")
    assert done.code == 2 and "lies outside the workspace" in done.stderr, done.output
    assert "not found" not in done.stderr


def test_a_custom_function_file_inside_the_checkout_runs_under_confine(tmp_path):
    root = agents_cli_project(tmp_path / "repo", "metrics/fn.py")
    (root / "tests" / "eval" / "metrics").mkdir()
    (root / "tests" / "eval" / "metrics" / "fn.py").write_text(PASSING_FUNCTION)
    done = run_project(root, "--confine", ".", "--results", "r.json")
    assert done.code == 0, done.output
    (case,) = json.loads((root / "r.json").read_text())["evalSets"][0]["cases"]
    assert [(m["name"], m["score"]) for m in case["metrics"]] == [("fn", 1.0)]
