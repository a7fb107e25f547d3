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


# --------------------------------------------------------------------------- the judge cache

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judges"))
from fake_gemini import FakeGemini, verdict  # noqa: E402

from changed_repo import commit, git  # noqa: E402

MATCH = "You grade answers given by an AI agent"  # final_response_match_v2's prompt


def judged_repo(root: Path) -> Path:
    """A git repository of one judged case whose recorded answer is wrong."""
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    turn = {"invocation_id": "t1", "user_content": {"role": "user", "parts": [{"text": "Capital of France?"}]},
            "final_response": {"role": "model", "parts": [{"text": "Paris."}]}}
    write_json(root / "evals" / "geo.evalset.json", {"eval_set_id": "geo", "eval_cases": [
        {"eval_id": "capital", "conversation": [turn]}]})
    write_json(root / "evals" / "test_config.json", {"criteria": {
        "final_response_match_v2": {"threshold": 1.0, "judge_model_options": {"num_samples": 1}}}})
    wrong = {**turn, "final_response": {"role": "model", "parts": [{"text": "Lyon."}]}}
    write_json(root / "runs.json", {"version": 1, "runs": [
        {"evalSetId": "geo", "evalId": "capital", "run": 1, "invocations": [wrong]}]})
    commit(root, "main")
    return root


@pytest.fixture
def judge(monkeypatch):
    with FakeGemini() as fake:
        for name in [n for n in __import__("os").environ if n.startswith(("GOOGLE_", "GEMINI_"))]:
            monkeypatch.delenv(name)
        monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
        monkeypatch.setenv("EVALCHECK_GEMINI_BASE_URL", fake.url)
        yield fake


def judged_run(root: Path, *extra: str):
    done = run_cli(["run", "evals", "--replay", "runs.json", "--results", "r.json", *extra], root)
    results = json.loads((root / "r.json").read_text()) if (root / "r.json").exists() else None
    (root / "r.json").unlink(missing_ok=True)
    return done, results


def committed_verdicts(root: Path, judge) -> None:
    """The attack: the change's author runs evalcheck against a judge of their own that
    finds the wrong answer valid, and commits the cache it wrote."""
    judge.on(MATCH, verdict(True))
    done, _ = judged_run(root, "--judge-cache", ".judge-cache")
    assert done.code == 0, done.output
    commit(root, "add the judge cache")
    judge.reset()
    judge.on(MATCH, verdict(False, "Lyon is not the capital"))  # the real judge


def test_committed_judge_answers_are_refused_under_confine(tmp_path, judge):
    root = judged_repo(tmp_path / "repo")
    committed_verdicts(root, judge)
    done, results = judged_run(root, "--judge-cache", ".judge-cache", "--confine", ".")
    assert done.code == 2 and results is None, done.output
    assert ("--judge-cache: .judge-cache is inside the workspace, where the change under test "
            "can commit cache entries") in done.stderr
    assert judge.requests == []


def test_committed_judge_answers_are_warned_about_without_confine(tmp_path, judge):
    """Plain evalcheck run trusts the checkout, as any tool does, and says what it took."""
    root = judged_repo(tmp_path / "repo")
    committed_verdicts(root, judge)
    done, results = judged_run(root, "--judge-cache", ".judge-cache")
    assert done.code == 0 and results["metadata"]["judge"]["cacheHits"] == 1, done.output
    assert "warning: --judge-cache .judge-cache: git tracks 1 file(s) in it (.judge-cache/" in done.stderr
    assert "pass --confine . to refuse it" in done.stderr


def test_a_judge_cache_outside_the_checkout_works_as_before_under_confine(tmp_path, judge):
    root = judged_repo(tmp_path / "repo")
    judge.on(MATCH, verdict(False, "Lyon is not the capital"))
    cache = tmp_path / "cache"
    first, results = judged_run(root, "--judge-cache", str(cache), "--confine", ".")
    assert first.code == 1 and results["metadata"]["judge"]["calls"] == 1, first.output
    second, results = judged_run(root, "--judge-cache", str(cache), "--confine", ".")
    assert second.code == 1 and results["metadata"]["judge"]["cacheHits"] == 1, second.output
    assert len(judge.requests) == 1 and "warning" not in first.stderr + second.stderr
