"""An unchanged pull request of a TypeScript ADK agent on Gemini (tests/refusals/ts: @iqai/adk
and @google/adk, each through @google/genai's real client) whose model service has a storm
during its runs, through ``evalcheck-adk-ts`` against the fake Gemini API, gated against
main's results with ``--fail-on regression``: @iqai/adk raises @google/genai's ApiError (a 429
with its RetryInfo here), @google/adk answers with an event of the model's error (a 503)."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

import pytest

from tests.fakes.gemini_api import FakeGeminiApi, Quota, Storm
from tests.refusals.service import HERE, run_evalcheck, service, write_evals

NODE_MODULES = HERE.parent / "typescript" / "node_modules"
ADAPTER = Path(sys.executable).parent / "evalcheck-adk-ts"
CASES, RUNS = 6, 3


@pytest.mark.parametrize("module, status", [("iqai_desk.mjs", 429), ("google_desk.mjs", 503)])
def test_an_unchanged_typescript_agent_through_a_storm(tmp_path: Path, module: str, status: int) -> None:
    if not (NODE_MODULES / ".evalcheck-lock.sha256").exists() or shutil.which("node") is None:
        pytest.fail("the TypeScript ADKs are not installed: run scripts/setup")
    (tmp_path / ".git").mkdir()
    shutil.copy(HERE / "ts" / module, tmp_path / module)
    (tmp_path / "node_modules").symlink_to(NODE_MODULES, target_is_directory=True)
    write_evals(tmp_path / "evals", CASES)
    agent = ["--agent-command", f"{shlex.quote(str(ADAPTER))} {module}"]
    with FakeGeminiApi(service(latency=0.05, quota=Quota(retry_delay=0.5))) as api:
        main = run_evalcheck(tmp_path, api.url, *agent, "--num-runs", str(RUNS), results="main.json",
                             timeout=400)
        assert main.code == 0 and {c["status"] for c in main.cases()} == {"passed"}, main.output
        api.configure(service(latency=0.05, quota=Quota(retry_delay=0.5),
                              storms=(Storm(0.0, 2.0, status),)))
        api.reset()
        pr = run_evalcheck(tmp_path, api.url, *agent, "--num-runs", str(RUNS), "--baseline",
                           "main.json", "--fail-on", "regression", "--retries", "0", timeout=400)
        refused = api.stats().refused
    assert pr.code == 0, pr.output
    assert {(c["status"], c["change"]) for c in pr.cases()} == {("passed", "unchanged")}
    counted = sum(r.get("refusals") or 0 for r in pr.runs())
    assert refused >= CASES and counted == refused, pr.output
    assert pr.results is not None
    assert set(pr.results["metadata"]["modelService"]["byCode"]) == {
        {429: "429 RESOURCE_EXHAUSTED", 503: "503 UNAVAILABLE"}[status]}
    assert "confirmation: no case looked worse than the baseline, no fresh run" in pr.output


def exchange(tmp_path: Path, module: str, url_env: dict[str, str]) -> list[dict]:
    """One run through ``evalcheck-adk-ts MODULE`` as the checker drives it: its messages."""
    import json
    import os
    import subprocess

    shutil.copy(HERE / "ts" / module, tmp_path / module)
    if not (tmp_path / "node_modules").exists():
        (tmp_path / "node_modules").symlink_to(NODE_MODULES, target_is_directory=True)
    lines = [{"type": "start", "protocol": 1, "evalSetId": "desk", "evalId": "c", "run": 1,
              "session": {"appName": "desk", "userId": "u", "state": {}, "id": "s1"}},
             {"type": "user", "invocationId": "inv-1", "session": "s1",
              "content": {"role": "user", "parts": [{"text": "What is the weather in Rome?"}]}}]
    done = subprocess.run([str(ADAPTER), module], cwd=tmp_path, capture_output=True, text=True,
                          input="".join(json.dumps(line) + "\n" for line in lines), timeout=300,
                          env={**os.environ, **url_env})
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.parametrize("module", ["iqai_desk.mjs", "google_desk.mjs"])
def test_the_adapter_says_the_model_service_refused(tmp_path: Path, module: str) -> None:
    with FakeGeminiApi(service(quota=Quota(retry_delay=1.5), storms=(Storm(0.0, 60.0, 429, share=1.0),))) as api:
        messages = exchange(tmp_path, module, api.env())
        api.configure(service(storms=(Storm(0.0, 60.0, 503),)))
        api.reset()
        overloaded = exchange(tmp_path, module, api.env())
    (error,) = [m for m in messages if m["type"] == "error"]
    # @iqai/adk keeps the ApiError's body (its RetryInfo); @google/adk's error event does not
    expected = {"code": "429 RESOURCE_EXHAUSTED", **({"retryAfter": 1.5} if "iqai" in module else {})}
    assert (error["invocationId"], error["unavailable"]) == ("inv-1", expected)
    (error,) = [m for m in overloaded if m["type"] == "error"]
    assert error["unavailable"] == {"code": "503 UNAVAILABLE"}
