"""An unchanged pull request of a real ADK agent (tests/refusals/desk_app: ``gemini-2.5-flash``
through google-genai's real client) whose model service has a storm of 429s or 503s during its
runs, gated against main's results with ``--fail-on regression``: through the ADK bridge
(``evalcheck-adk``) and through ``adk api_server`` started by evalcheck, against the fake
Gemini API. The bridge is also run at the issue's scale: a 10-second storm."""

from __future__ import annotations

import shlex
import shutil
import socket
import sys
from pathlib import Path

import pytest

pytest.importorskip("google.adk")

from tests.fakes.gemini_api import FakeGeminiApi, Quota, Storm  # noqa: E402
from tests.refusals.service import BRIDGE, HERE, Outcome, run_evalcheck, service, write_evals  # noqa: E402

ADK = Path(sys.executable).parent / "adk"
CASES, RUNS = 6, 3


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    shutil.copytree(HERE / "desk_app", tmp_path / "agents" / "desk_app",
                    ignore=shutil.ignore_patterns("__pycache__"))
    write_evals(tmp_path / "evals", CASES)
    return tmp_path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bridge_args() -> list[str]:
    return ["--agent-command", f"{shlex.quote(str(BRIDGE))} agents/desk_app"]


def api_server_args() -> list[str]:
    port = free_port()
    return ["--agent-url", f"http://127.0.0.1:{port}", "--agent-server-command",
            f"{shlex.quote(str(ADK))} api_server --port {port} agents"]


def storm_run(repo: Path, how: list[str], storm: Storm, retry_delay: float = 0.5,
              *extra: str) -> tuple[Outcome, int]:
    """main's results without a storm, then the unchanged PR's with one: (PR, refused calls)."""
    with FakeGeminiApi(service(latency=0.05, quota=Quota(retry_delay=retry_delay))) as api:
        main = run_evalcheck(repo, api.url, *how, "--num-runs", str(RUNS), results="main.json")
        assert main.code == 0 and {c["status"] for c in main.cases()} == {"passed"}, main.output
        api.configure(service(latency=0.05, quota=Quota(retry_delay=retry_delay), storms=(storm,)))
        api.reset()
        pr = run_evalcheck(repo, api.url, *(api_server_args() if "--agent-url" in how else how),
                           "--num-runs", str(RUNS), "--baseline", "main.json", "--fail-on",
                           "regression", "--retries", "0", *extra)
        return pr, api.stats().refused


def assert_unchanged(pr: Outcome, refused: int) -> None:
    assert pr.code == 0, pr.output
    assert {(c["status"], c["change"]) for c in pr.cases()} == {("passed", "unchanged")}
    assert {r["status"] for r in pr.runs()} == {"passed"}
    counted = sum(r.get("refusals") or 0 for r in pr.runs())
    assert refused >= CASES and counted == refused, pr.output  # every refused call: one wait, one rerun
    assert pr.results is not None and pr.results["metadata"]["modelService"]["refusals"] == refused
    assert "confirmation: no case looked worse than the baseline, no fresh run" in pr.output
    assert "gate passed (fail-on: regression)" in pr.stdout


@pytest.mark.parametrize("status", [429, 503])
def test_through_the_bridge(repo: Path, status: int) -> None:
    pr, refused = storm_run(repo, bridge_args(), Storm(0.0, 2.0, status))
    assert_unchanged(pr, refused)


@pytest.mark.parametrize("status", [429, 503])
def test_through_adk_api_server(repo: Path, status: int) -> None:
    """adk api_server answers a refused model call with a bare HTTP 500 and closes the
    connection: its log tells the refusal, and no run fails on the closed connection."""
    pr, refused = storm_run(repo, api_server_args(), Storm(0.0, 2.0, status))
    assert_unchanged(pr, refused)


@pytest.mark.parametrize("status", [429, 503])
def test_the_issues_scale_a_10_second_storm_through_the_bridge(repo: Path, status: int) -> None:
    """A 10-second storm: of 429s with Google's RetryInfo of 2 s (the fake's default), and of
    503s (no RetryInfo: the exponential backoff)."""
    pr, refused = storm_run(repo, bridge_args(), Storm(0.0, 10.0, status), 2.0)
    assert_unchanged(pr, refused)
    assert pr.results is not None and pr.results["metadata"]["modelService"]["waitedSeconds"] >= 9


def test_a_service_that_keeps_refusing_through_adk_api_server_exits_2(repo: Path) -> None:
    pr, _ = storm_run(repo, api_server_args(), Storm(0.0, 3600.0, 429), 0.2,
                      "--max-service-wait", "1")
    assert pr.code == 2, pr.output
    assert (f"the model service refused {CASES * RUNS} of {CASES * RUNS} runs "
            "(429 RESOURCE_EXHAUSTED) past --max-service-wait") in pr.stderr
    assert {c["status"] for c in pr.cases()} == {"not_evaluated"}
    assert not any(c["change"] == "regressed" for c in pr.cases())


def test_an_ordinary_adk_agent_with_adks_own_retries_through_a_10_second_storm(tmp_path: Path) -> None:
    """tests/adk_agent/gemini_app sets no retry options: through the bridge, as in ADK's
    AgentEvaluator, ADK's eval plugin retries each model call (7 attempts from 5 s) inside the
    agent, so a 10-second storm of 429s is waited out there, and the gate passes."""
    from tests.fakes.weather_service import APP, service_config, write_eval_set

    (tmp_path / ".git").mkdir()
    write_eval_set(tmp_path / "evals", 4)
    how = ["--agent-command", f"{shlex.quote(str(BRIDGE))} {shlex.quote(str(APP))}"]
    with FakeGeminiApi(service_config(latency=0.05)) as api:
        main = run_evalcheck(tmp_path, api.url, *how, "--num-runs", "2", results="main.json")
        assert main.code == 0, main.output
        api.configure(service_config(latency=0.05, storms=(Storm(0.0, 10.0, 429),)))
        api.reset()
        pr = run_evalcheck(tmp_path, api.url, *how, "--num-runs", "2", "--baseline", "main.json",
                           "--fail-on", "regression", "--retries", "0")
        refused = api.stats().refused
    assert pr.code == 0, pr.output
    assert refused > 0 and {(c["status"], c["change"]) for c in pr.cases()} == {("passed", "unchanged")}
    assert "confirmation: no case looked worse than the baseline, no fresh run" in pr.output
