"""IQ AI's @iqai/adk (ADK-TS) agents through the bundled adapter, ``evalcheck-adk-ts MODULE``:
the real npm package, the example agent (TypeScript through the project's tsx; a state tool,
a sub-agent; a scripted offline model) scored as the eval set expects, token usage reported
though @iqai/adk's events drop it, and concurrent runs in one process isolated."""

from __future__ import annotations

import json
import shlex

import pytest

from tshelpers import (ADAPTER, AGENTS, WEATHER_SCORES, check_weather_example, examples_copy,
                       metric_runs, most_in_flight, run_evalcheck, visits_eval_set)

@pytest.fixture(scope="module")
def example_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("iqai")
    project = examples_copy(tmp) / "iqai-adk"
    command = f"{shlex.quote(str(ADAPTER))} agent.ts"
    return run_evalcheck(tmp, project / "evals", "--agent-command", command, cwd=project)


def test_example_agent_scores_as_expected(example_run):
    results, inference, done = example_run
    assert done.returncode == 0, done.stdout + done.stderr
    assert all(r.get("error") is None for r in inference["runs"]), inference["runs"]
    runs = metric_runs(results)
    for key, score in WEATHER_SCORES.items():
        assert runs[key] == [score, score], key


def test_tools_state_sub_agent_and_usage(example_run):
    _, inference, _ = example_run
    events = check_weather_example(inference, "agent_name")
    # Each model call's usage on its own event (@iqai/adk's events have none of their own).
    usages = [(e["author"], e["usageMetadata"]["candidatesTokenCount"]) for e in events
              if "usageMetadata" in e]
    assert usages == [("weather_agent", 20), ("forecast_agent", 10), ("forecast_agent", 10)]


def test_concurrent_sessions_in_one_process_keep_their_own_state(tmp_path):
    """16 runs, 8 at once, all in one adapter process; each case's session holds its own
    marker and a tool writes state: every turn sees only its own session."""
    evals = visits_eval_set(tmp_path / "evals")
    command = f"{shlex.quote(str(ADAPTER))} {shlex.quote(str(AGENTS / 'iqai' / 'visits.mjs'))}"
    results, inference, done = run_evalcheck(tmp_path, evals, "--agent-command", command,
                                              concurrency=8)
    assert done.returncode == 0, done.stdout + done.stderr
    assert all(score == 1.0 for (_, name), scores in metric_runs(results).items()
               if name in ("tool_trajectory_avg_score", "response_match_score") for score in scores)
    assert len(inference["runs"]) == 16
    pids = {p["functionResponse"]["response"]["pid"] for r in inference["runs"]
            for i in r["invocations"] for e in i["intermediateData"]["invocationEvents"]
            for p in (e.get("content") or {}).get("parts", []) if "functionResponse" in p}
    assert len(pids) == 1
    assert most_in_flight(inference) >= 4
