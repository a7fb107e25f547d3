"""An unchanged pull request whose model service has a storm of 429s or 503s during its runs,
gated against main's results with ``--fail-on regression``, through ``evalcheck run`` and a
stdio agent of its own (tests/refusals/genai_agent.py: google-genai's real client against the
fake Gemini API). Storms are scaled down to 2 s (the issue's 10 s is in test_storm_adk.py):
what matters is that every refused run is refused more than once and outlasts ``--retries``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.fakes.gemini_api import FakeGeminiApi, Quota, Storm
from tests.refusals.service import HERE, Outcome, run_evalcheck, service, write_evals

AGENT = f"{sys.executable} {HERE / 'genai_agent.py'}"
CASES, RUNS = 8, 3


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    write_evals(tmp_path / "evals", CASES)
    return tmp_path


def main_results(repo: Path, api: FakeGeminiApi, agent: str = AGENT) -> None:
    main = run_evalcheck(repo, api.url, "--agent-command", agent, "--num-runs", str(RUNS),
                         results="main.json")
    assert main.code == 0 and {c["status"] for c in main.cases()} == {"passed"}, main.output


def assert_unchanged_through_the_storm(pr: Outcome, api: FakeGeminiApi) -> None:
    assert pr.code == 0, pr.output
    assert {(c["status"], c["change"]) for c in pr.cases()} == {("passed", "unchanged")}
    assert {r["status"] for r in pr.runs()} == {"passed"}  # every run got through in the end
    assert "unavailable" not in str(pr.runs())
    refused = sum(r.get("refusals") or 0 for r in pr.runs())
    assert refused >= 8 and refused == api.stats().refused  # each refusal waited for, run again
    assert pr.results is not None
    service = pr.results["metadata"]["modelService"]
    assert service["refusals"] == refused and service["waitedSeconds"] > 0
    # no confirmation run: no case looked worse, a refusal never screens one
    assert "confirmation: no case looked worse than the baseline, no fresh run" in pr.output
    assert all(not m.get("screened") for c in pr.cases() for m in c["metrics"])
    assert "gate passed (fail-on: regression)" in pr.stdout
    assert f"model service: {refused} refusals" in pr.stdout


@pytest.mark.parametrize("status", [429, 503])
def test_an_unchanged_pr_through_a_storm_passes_the_regression_gate(repo: Path, status: int) -> None:
    with FakeGeminiApi(service(latency=0.05, quota=Quota(retry_delay=0.5))) as api:
        main_results(repo, api)
        api.configure(service(latency=0.05, quota=Quota(retry_delay=0.5),
                              storms=(Storm(0.0, 2.0, status),)))
        api.reset()
        # --retries 0: a refusal counted as the agent's error would fail its run at once
        pr = run_evalcheck(repo, api.url, "--agent-command", AGENT, "--num-runs", str(RUNS),
                           "--baseline", "main.json", "--fail-on", "regression", "--retries", "0")
        assert_unchanged_through_the_storm(pr, api)
        assert set(pr.results["metadata"]["modelService"]["byCode"]) == {
            {429: "429 RESOURCE_EXHAUSTED", 503: "503 UNAVAILABLE"}[status]}


def test_a_protocol_1_agents_refusal_is_told_by_google_genais_words(repo: Path) -> None:
    """An agent that reports the model's error only as text (no ``unavailable`` field)."""
    agent = AGENT + " --no-field"
    with FakeGeminiApi(service(latency=0.05, quota=Quota(retry_delay=0.3))) as api:
        main_results(repo, api, agent)
        api.configure(service(latency=0.05, quota=Quota(retry_delay=0.3),
                              storms=(Storm(0.0, 1.0, 429),)))
        api.reset()
        pr = run_evalcheck(repo, api.url, "--agent-command", agent, "--num-runs", str(RUNS),
                           "--baseline", "main.json", "--fail-on", "regression", "--retries", "0")
        assert_unchanged_through_the_storm(pr, api)


def test_a_service_that_keeps_refusing_exits_2_naming_the_refusals(repo: Path) -> None:
    with FakeGeminiApi(service(latency=0.05, quota=Quota(retry_delay=0.2))) as api:
        main_results(repo, api)
        api.configure(service(latency=0.05, quota=Quota(retry_delay=0.2),
                              storms=(Storm(0.0, 3600.0, 429),)))
        api.reset()
        pr = run_evalcheck(repo, api.url, "--agent-command", AGENT, "--num-runs", str(RUNS),
                           "--baseline", "main.json", "--fail-on", "regression",
                           "--max-service-wait", "1", "--markdown", "report.md",
                           "--html", "report.html")
    assert pr.code == 2, pr.output
    said = (f"the model service refused {CASES * RUNS} of {CASES * RUNS} runs "
            f"(429 RESOURCE_EXHAUSTED) past --max-service-wait; no verdict on {CASES} cases")
    assert f"evalcheck: error: {said}" in pr.stderr
    assert f"gate failed (fail-on: regression): {said}" in pr.stdout
    assert pr.stderr.count("evalcheck: the model service refused a run (429 RESOURCE_EXHAUSTED): "
                           "refused runs are run again") == 1  # said once, as it starts
    assert pr.stderr.count("evalcheck: the model service kept refusing (429 RESOURCE_EXHAUSTED) "
                           "for longer than 1 s (--max-service-wait)") == 1
    assert "regressed" not in pr.stdout.replace("0 regressed", "")
    assert {(c["status"], c["change"]) for c in pr.cases()} == {("not_evaluated", "unchanged")}
    assert {r["status"] for r in pr.runs()} == {"not_evaluated"}
    assert all(r["unavailable"]["code"] == "429 RESOURCE_EXHAUSTED" for r in pr.runs())
    assert pr.results is not None and pr.results["metadata"]["modelService"]["gaveUp"] == \
        "429 RESOURCE_EXHAUSTED"
    assert "confirmation: no case looked worse than the baseline, no fresh run" in pr.output
    report = (repo / "report.md").read_text()
    assert "**The model service kept refusing** (exit status 2)" in report
    assert "the model service refused it" in report
    page = (repo / "report.html").read_text()
    assert f"{said}: those runs are left out, never counted as failing runs (exit status 2)" in page


def test_confirmation_runs_the_service_kept_refusing_leave_the_case_without_a_verdict(repo: Path) -> None:
    """A case that looks worse gets fresh confirmation runs; when the model service keeps
    refusing them, the drop is neither confirmed nor cleared: no verdict, exit 2, never a
    pass of the gate on the screening runs alone."""
    agent = f"{sys.executable} {HERE / 'scripted_agent.py'}"
    main = run_evalcheck(repo, "http://127.0.0.1:9", "--agent-command", agent, "--num-runs",
                         str(RUNS), results="main.json")
    assert main.code == 0, main.output
    pr = run_evalcheck(repo, "http://127.0.0.1:9", "--agent-command", agent, "--num-runs",
                       str(RUNS), "--baseline", "main.json", "--fail-on", "regression",
                       "--max-service-wait", "1",
                       env={"EVALCHECK_TEST_WRONG": "case_03",
                            "EVALCHECK_TEST_REFUSE_FROM": str(RUNS + 1)})
    assert pr.code == 2, pr.output
    said = ("the model service refused 5 fresh confirmation runs (429 RESOURCE_EXHAUSTED) past "
            "--max-service-wait; no verdict on 1 case")
    assert f"evalcheck: error: {said}" in pr.stderr
    assert f"gate failed (fail-on: regression): {said}" in pr.stdout
    case = next(c for c in pr.cases() if c["evalId"] == "case_03")
    assert case["change"] != "regressed" and case["status"] == "failed"  # its own first runs
    assert pr.results is not None and pr.results["metadata"]["modelService"]["unavailableRuns"] == 5


def test_compare_of_a_run_the_service_kept_refusing_exits_2_as_the_run_did(repo: Path) -> None:
    import subprocess

    from tests.refusals.service import EVALCHECK

    agent = f"{sys.executable} {HERE / 'scripted_agent.py'}"
    main = run_evalcheck(repo, "http://127.0.0.1:9", "--agent-command", agent, "--num-runs", "2",
                         results="main.json")
    pr = run_evalcheck(repo, "http://127.0.0.1:9", "--agent-command", agent, "--num-runs", "2",
                       "--max-service-wait", "0.5", env={"EVALCHECK_TEST_REFUSE_FROM": "2"})
    assert (main.code, pr.code) == (0, 2), pr.output
    done = subprocess.run([str(EVALCHECK), "compare", "main.json", "results.json", "--fail-on",
                           "regression"], cwd=repo, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    # Every second run is refused (and the first runs not started once the service is given
    # up with every slot held by a refused run waiting): compare says what the run said.
    unavailable = pr.results["metadata"]["modelService"]["unavailableRuns"]
    assert CASES <= unavailable <= CASES * 2
    said = f"the model service refused {unavailable} of {CASES * 2} runs (429 RESOURCE_EXHAUSTED)"
    assert said in pr.stderr and said in done.stderr
