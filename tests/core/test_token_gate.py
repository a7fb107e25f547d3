"""Tokens against the baseline: each compared case's agent tokens per run on main and here
(tokenChange), and the opt-in token gate (--max-token-increase): replayed runs whose events
report usage, a baseline written by the same CLI."""

from __future__ import annotations

import json

from corehelpers import case, evalset, invocation, replay, run_cli, write_json


def turn(prompt: int, output: int, model: str = "gemini-2.5-flash") -> dict:
    inv = invocation("q", "ok")
    inv["intermediate_data"] = {"invocation_events": [
        {"author": "agent", "model_version": model,
         "usage_metadata": {"prompt_token_count": prompt, "candidates_token_count": output}}]}
    return inv


def results_of(repo, name: str, prompt: int, *args: str):
    write_json(repo / "evals/s.evalset.json", evalset("s", case("c1", invocation("q", "ok")),
                                                      case("c2", invocation("q", "ok"))))
    write_json(repo / "evals/test_config.json", {"criteria": {"response_match_score": 0.5}})
    write_json(repo / f"{name}.runs.json", replay(
        *[("s", c, n, [turn(prompt if c == "c1" else 100, 20)]) for c in ("c1", "c2") for n in (1, 2)]))
    out = run_cli(["run", "evals", "--replay", f"{name}.runs.json", "--results", f"{name}.json",
                   "--markdown", f"{name}.md", *args], repo)
    return out, json.loads((repo / f"{name}.json").read_text())


def test_each_compared_case_carries_its_token_change(repo):
    results_of(repo, "main", 100)
    out, pr = results_of(repo, "pr", 340, "--baseline", "main.json")
    assert out.code == 0, out.output  # no token gate asked for: the change is shown only
    c1, c2 = pr["evalSets"][0]["cases"]
    assert c1["tokenChange"] == {"baseline": 120.0, "here": 360.0, "percent": 200.0}
    assert c2["tokenChange"] == {"baseline": 120.0, "here": 120.0, "percent": 0.0}
    assert "tokenGate" not in pr["comparison"]
    # and the estimated cost at the default Gemini 2.5 Flash prices: 0.30 / 2.50 per million
    assert pr["summary"]["usage"]["cost"]["total"] == round((340 * 2 + 200) * 0.30e-6 + 80 * 2.50e-6, 6)


def test_the_token_gate_fails_a_case_that_grew_beyond_the_limit(repo):
    results_of(repo, "main", 100)
    out, pr = results_of(repo, "pr", 340, "--baseline", "main.json", "--max-token-increase", "150")
    assert out.code == 1, out.output
    assert "token gate failed: 1 case used more than 150% more agent tokens per run than on " \
           "main: s/c1 (+200%)" in out.output
    assert pr["comparison"]["tokenGate"] == {"maxIncrease": 150.0, "passed": False, "exceeded": [
        {"evalSetId": "s", "evalId": "c1", "percent": 200.0}]}
    assert "token gate failed" in (repo / "pr.md").read_text()


def test_the_token_gate_passes_within_the_limit(repo):
    results_of(repo, "main", 100)
    out, pr = results_of(repo, "pr", 340, "--baseline", "main.json", "--max-token-increase", "250")
    assert out.code == 0, out.output
    assert pr["comparison"]["tokenGate"]["passed"] is True


def test_a_prices_file_that_is_not_a_price_table_is_bad_input_before_any_run(repo):
    write_json(repo / "prices.json", {"gemini-2.5-flash": {"input": "cheap"}})
    write_json(repo / "evals/s.evalset.json", evalset("s"))
    write_json(repo / "runs.json", replay(("s", "c1", 1, [invocation()])))
    out = run_cli(["run", "evals", "--replay", "runs.json", "--prices", "prices.json"], repo)
    assert out.code == 2
    assert "price of 'gemini-2.5-flash' must be" in out.output
