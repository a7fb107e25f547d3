"""token_usage_v1's breakdown (input, prompt, cached, tool use, output, candidates, reasoning)
in the results details and the report; a count the model did not report is n/a, not 0."""

from __future__ import annotations

import json

from corehelpers import case, evalset, invocation, replay, run_cli, write_json


def with_usage(query: str, *usages: dict, invocation_id: str = "i1") -> dict:
    turn = invocation(query, "ok", invocation_id=invocation_id)
    turn["intermediate_data"] = {"invocation_events": [
        {"author": "agent", "usage_metadata": u} for u in usages]}
    return turn


def run(repo, *turns: dict):
    expected = [invocation(t["user_content"]["parts"][0]["text"], "ok",
                           invocation_id=t["invocation_id"]) for t in turns]
    write_json(repo / "evals/s.evalset.json", evalset("s", case("c1", *expected)))
    write_json(repo / "evals/test_config.json", {"criteria": {"response_match_score": 0.5}})
    write_json(repo / "runs.json", replay(("s", "c1", 1, list(turns))))
    out = run_cli(["run", "evals", "--replay", "runs.json", "--results", "r.json",
                   "--markdown", "r.md"], repo)
    assert out.code == 0, out.output
    metrics = json.loads((repo / "r.json").read_text())["evalSets"][0]["cases"][0]["metrics"]
    return next(m for m in metrics if m["name"] == "token_usage_v1"), (repo / "r.md").read_text()


def test_every_count_is_in_the_details_and_a_missing_one_is_null(repo):
    metric, report = run(repo, with_usage(
        "q", {"prompt_token_count": 90, "cached_content_token_count": 40, "candidates_token_count": 15},
        {"prompt_token_count": 10, "candidates_token_count": 5}))
    assert metric["status"] == "informational" and metric["score"] == 120
    assert metric["details"] == {
        "total_tokens": 120, "input_tokens": 100, "prompt_tokens": 100, "cached_tokens": 40,
        "tool_use_tokens": None, "output_tokens": 20, "candidates_tokens": 20,
        "reasoning_tokens": None}
    assert ("tokens per turn: 120 = input 100 (prompt 100, of which cached 40; tool use n/a) "
            "+ output 20 (candidates 20, reasoning n/a)") in report


def test_counts_average_over_every_turn_as_in_adk(repo):
    # ADK divides by all turns, so a turn without usage lowers the mean (total = input + output).
    metric, report = run(repo, with_usage("q1", {"prompt_token_count": 100, "thoughts_token_count": 7,
                                                 "tool_use_prompt_token_count": 3,
                                                 "candidates_token_count": 10}),
                         with_usage("q2", invocation_id="i2"))
    assert metric["details"]["total_tokens"] == 60 and metric["details"]["reasoning_tokens"] == 3.5
    assert metric["details"]["input_tokens"] == 51.5 and metric["details"]["cached_tokens"] is None
    assert "tokens per turn: 60 = input 52 (prompt 50, of which cached n/a; tool use 2) " in report


def test_no_token_counts_no_line(repo):
    metric, report = run(repo, invocation("q", "ok"))
    assert metric["score"] is None
    assert set(metric["details"]) >= {"total_tokens", "reasoning_tokens"}
    assert all(v is None for v in metric["details"].values())
    assert "tokens per turn" not in report
