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


def ordinary_agent_storm(tmp_path: Path, storm: Storm, retry_delay: float = 2.0,
                         cases: int = 4) -> tuple[Outcome, int]:
    """tests/adk_agent/gemini_app (it sets no retry options) through the bridge: main's
    results, then the unchanged PR's with ``storm``: (PR, calls refused)."""
    from tests.fakes.weather_service import APP, service_config, write_eval_set

    (tmp_path / ".git").mkdir()
    write_eval_set(tmp_path / "evals", cases)
    how = ["--agent-command", f"{shlex.quote(str(BRIDGE))} {shlex.quote(str(APP))}"]
    quota = Quota(retry_delay=retry_delay)
    with FakeGeminiApi(service_config(latency=0.05, quota=quota)) as api:
        main = run_evalcheck(tmp_path, api.url, *how, "--num-runs", "2", results="main.json")
        assert main.code == 0, main.output
        api.configure(service_config(latency=0.05, quota=quota, storms=(storm,)))
        api.reset()
        pr = run_evalcheck(tmp_path, api.url, *how, "--num-runs", "2", "--baseline", "main.json",
                           "--fail-on", "regression", "--retries", "0")
        return pr, api.stats().refused


def test_an_ordinary_adk_agent_waits_out_a_10_second_storm_inside_the_bridge(tmp_path: Path) -> None:
    """As in ADK's AgentEvaluator, a model call the agent gave no retry options is retried
    inside the agent (7 attempts): the bridge's retries (evalcheck_adk_bridge/retries.py) wait
    the RetryInfo delay (2 s here) and tell each refusal to evalcheck at once
    ({"type": "refused"}), which counts it and cuts the runs in flight. A 10-second storm of
    429s is waited out there, and the gate passes."""
    pr, refused = ordinary_agent_storm(tmp_path, Storm(0.0, 10.0, 429))
    assert pr.code == 0, pr.output
    assert refused > 0 and {(c["status"], c["change"]) for c in pr.cases()} == {("passed", "unchanged")}
    assert "confirmation: no case looked worse than the baseline, no fresh run" in pr.output
    assert pr.results is not None
    service = pr.results["metadata"]["modelService"]
    # Every refused call told, and counted on its run: none was the run's end.
    assert service["retriedByAgents"] == service["refusals"] == refused, service
    assert sum(r.get("refusals") or 0 for r in pr.runs()) == refused
    assert service["refusedRuns"] == 0
    assert "the agent retries it after the delay the service asks for" in pr.stderr


def test_the_bridge_retries_at_the_pace_the_service_asks(tmp_path: Path) -> None:
    """A 3-second storm whose 429s ask for 0.5 s: each refused call is tried again every
    0.5-0.6 s, so the first call of each run is refused about five times (google-genai's
    retry under ADK's options would wait 5 s: once)."""
    pr, refused = ordinary_agent_storm(tmp_path, Storm(0.0, 3.0, 429), retry_delay=0.5)
    assert pr.code == 0, pr.output
    per_run = [r.get("refusals") or 0 for r in pr.runs()]
    assert max(per_run) >= 4 and sum(per_run) == refused, per_run
