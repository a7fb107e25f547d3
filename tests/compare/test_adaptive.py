"""Adaptive runs (--max-runs) with a real stdio agent whose outcome is random, seeded."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from checker.models.verdict_rule import parse_verdict_rule
from corehelpers import call, case, evalset, invocation, replay, run_cli, write_json

AGENT = f"{shlex.quote(sys.executable)} {shlex.quote(str(Path(__file__).parent / 'agents' / 'coin_agent.py'))}"
EXPECTED = invocation("Weather in Paris?", "The weather in Paris is sunny.", [call("get_weather", city="Paris")])
CASES = ["steady_a", "steady_b", "broken_a", "flipflop", "coin_a", "coin_b", "coin_c", "coin_d",
         "coin_e", "coin_f"]


def setup(repo: Path) -> None:
    write_json(repo / "evals" / "w.evalset.json", evalset("w", *[case(c, EXPECTED) for c in CASES]))
    write_json(repo / "evals" / "test_config.json", {"criteria": {"tool_trajectory_avg_score": 0.5}})


@pytest.mark.parametrize("rule", ["majority", "mean"])
def test_extra_runs_go_only_to_uncertain_cases_and_stop_at_max_runs(repo, monkeypatch, rule):
    setup(repo)
    log = repo / "turns.log"
    monkeypatch.setenv("COIN_LOG", str(log))
    monkeypatch.setenv("COIN_SEED", "7")
    out = run_cli(["run", "evals", "--agent-command", AGENT, "--num-runs", "2", "--max-runs", "5",
                   "--verdict", rule, "--concurrency", "4", "--results", "r.json"], repo)
    assert out.code in (0, 1), out.output
    data = json.loads((repo / "r.json").read_text())
    cases = {c["evalId"]: c for c in data["evalSets"][0]["cases"]}
    verdict = parse_verdict_rule(rule)
    ran = Counter(line.split()[0] for line in log.read_text().splitlines())
    extra = 0
    for eval_id, result in cases.items():
        scores = result["metrics"][0]["runs"]
        assert [r["run"] for r in result["runs"]] == list(range(1, len(scores) + 1))
        assert ran[eval_id] == len(scores)  # what the agent did is what was scored
        assert 2 <= len(scores) <= 5
        # Each extra run followed an uncertain verdict; the last one stops for a reason.
        for n in range(2, len(scores)):
            assert verdict.uncertain(scores[:n], 0.5), (eval_id, scores)
        assert len(scores) == 5 or not verdict.uncertain(scores, 0.5), (eval_id, scores)
        extra += len(scores) - 2
    for eval_id in ("steady_a", "steady_b", "broken_a"):
        assert len(cases[eval_id]["runs"]) == 2  # settled after --num-runs: no extra run
    if rule == "majority":
        assert len(cases["flipflop"]["runs"]) == 5  # never settles: stops at --max-runs
    assert extra > 0 and data["metadata"]["adaptiveExtraRuns"] == extra
    assert data["metadata"]["maxRuns"] == 5 and data["metadata"]["numRuns"] == 2
    assert "adaptive runs: round 1:" in out.stderr
    assert f"adaptive runs: {extra} extra run(s) in " in out.stdout


def test_replay_ignores_max_runs(repo):
    setup(repo)
    runs = [("w", c, n, [EXPECTED]) for c in CASES for n in (1, 2)]
    write_json(repo / "r.replay.json", replay(*runs))
    out = run_cli(["run", "evals", "--replay", "r.replay.json", "--max-runs", "5",
                   "--results", "r.json"], repo)
    assert out.code == 0, out.output
    assert "--max-runs is ignored in replay mode" in out.stderr
    data = json.loads((repo / "r.json").read_text())
    assert all(len(c["runs"]) == 2 for c in data["evalSets"][0]["cases"])
    assert "adaptiveExtraRuns" not in data["metadata"]


def test_max_runs_below_num_runs_is_a_usage_error(repo):
    setup(repo)
    out = run_cli(["run", "evals", "--agent-command", AGENT, "--num-runs", "3", "--max-runs", "2"], repo)
    assert out.code == 2 and "--max-runs 2 is below --num-runs 3" in out.output


def test_adaptive_runs_with_a_judge_metric(repo, tmp_path):
    """Scoring between rounds asks the judge in the agents' event loop; the final results
    reuse those scores (the fake Gemini server answers like the real API)."""
    sys.path.insert(0, str(Path(__file__).parent.parent / "judges"))
    from fake_gemini import FakeGemini, verdict

    write_json(repo / "evals" / "w.evalset.json",
               evalset("w", *[case(c, EXPECTED) for c in ("steady_a", "flipflop", "coin_a", "coin_b")]))
    write_json(repo / "evals" / "test_config.json", {"criteria": {"final_response_match_v2": {
        "threshold": 0.5, "judge_model_options": {"num_samples": 1}}}})
    with FakeGemini() as fake:
        fake.on(lambda p: "You grade answers" in p and "Lyon" in p, verdict(False))
        fake.on(lambda p: "You grade answers" in p, verdict(True))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "GEMINI_", "EVALCHECK_"))}
        env.update({"GOOGLE_API_KEY": "test-key", "EVALCHECK_GEMINI_BASE_URL": fake.url,
                    "COIN_SEED": "7"})
        done = subprocess.run([sys.executable, "-m", "checker.cli", "run", "evals", "--agent-command",
                               AGENT, "--num-runs", "2", "--max-runs", "4", "--verdict", "majority",
                               "--results", "r.json"], cwd=repo, env=env, capture_output=True,
                              text=True, timeout=300)
        requests = len(fake.requests)
    assert done.returncode in (0, 1), done.stderr
    data = json.loads((repo / "r.json").read_text())
    cases = {c["evalId"]: c for c in data["evalSets"][0]["cases"]}
    assert all(c["status"] in ("passed", "failed") for c in cases.values()), done.stdout
    assert len(cases["steady_a"]["runs"]) == 2 and len(cases["flipflop"]["runs"]) == 4
    assert cases["flipflop"]["metrics"][0]["runs"] == [1.0, 0.0, 1.0, 0.0]
    # Two different questions in all (a right and a wrong answer to the same prompt): each
    # round re-scores earlier runs, but the judge is asked each question once.
    assert requests == 2, (requests, data["metadata"]["judge"])
    assert data["metadata"]["adaptiveExtraRuns"] == sum(len(c["runs"]) - 2 for c in cases.values())
