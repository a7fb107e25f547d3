"""compare and merge end as run does (issue 26): the token gate (--max-token-increase), the
trend of main over several baselines, the HTML report (--html), and for merge the estimated
cost over the merged shards (--prices). Replayed runs whose events report usage; the
baselines written by the same CLI."""

from __future__ import annotations

import json
import re

from corehelpers import case, evalset, invocation, replay, run_cli, write_json

CASES = ("c1", "c2", "c3", "c4")


def turn(prompt: int, answer: str = "right answer") -> dict:
    inv = invocation("q", answer)
    inv["intermediate_data"] = {"invocation_events": [
        {"author": "agent", "model_version": "my-model",
         "usage_metadata": {"prompt_token_count": prompt, "candidates_token_count": 20}}]}
    return inv


def recorded(repo, name: str, failing: int, prompt: int) -> str:
    """Replay file: the first ``failing`` cases answer wrong; c1 reports ``prompt`` tokens."""
    write_json(repo / "evals/s.evalset.json", evalset("s", *[case(c, invocation("q", "right answer"))
                                                           for c in CASES]))
    write_json(repo / "evals/test_config.json", {"criteria": {"response_match_score": 0.9}})
    write_json(repo / f"{name}.runs.json", replay(*[
        ("s", c, n, [turn(prompt if c == "c1" else 100, "wrong" if i < failing else "right answer")])
        for i, c in enumerate(CASES) for n in (1, 2)]))
    return f"{name}.runs.json"


def run(repo, name: str, failing: int, prompt: int, *args: str):
    out = run_cli(["run", "evals", "--replay", recorded(repo, name, failing, prompt),
                   "--results", f"{name}.json", *args], repo)
    assert out.code in (0, 1), out.output
    return out


def history(repo) -> list[str]:
    for k, failing in enumerate((0, 1, 0)):  # main3 (oldest) .. main1 (newest)
        run(repo, f"main{3 - k}", failing, 100)
    return ["main1.json", "main2.json", "main3.json"]  # newest first


def charts(markdown: str) -> list[str]:
    return re.findall(r"```mermaid\n(.*?)```", markdown, re.S)


def without_timing(results: dict) -> dict:
    return {k: v for k, v in results.items() if k not in ("metadata", "comparison")} | {
        "comparison": {k: v for k, v in results["comparison"].items() if k != "baseline"}}


def test_compare_gates_tokens_shows_the_trend_and_writes_html_as_run_does(repo):
    mains = history(repo)
    run(repo, "pr", 2, 340)  # c1 spends 3x (360 per run against 120), 2 cases fail
    out = run_cli(["compare", *mains, "pr.json", "--max-token-increase", "150", "--results",
                   "compared.json", "--markdown", "compared.md", "--html", "compared.html"], repo)
    assert out.code == 1, out.output
    assert "token gate failed: 1 case used more than 150% more agent tokens per run than on " \
           "main: s/c1 (+200%)" in out.output
    assert "trend of main: Suite pass rate over 3 results: 1.00 0.75 1.00 -> this PR 0.50" in out.output
    compared = json.loads((repo / "compared.json").read_text())
    assert compared["comparison"]["tokenGate"]["passed"] is False
    assert [p["passRate"] for p in compared["comparison"]["trend"]] == [1.0, 0.75, 1.0]
    assert len(charts((repo / "compared.md").read_text())) == 2
    page = (repo / "compared.html").read_text()
    assert "token gate failed" in page and "Suite pass rate" in page and "+200%" in page
    # run with the same baselines and gate decides and reports the same
    again = run_cli(["run", "evals", "--replay", "pr.runs.json", "--results", "ran.json",
                     *[a for m in mains for a in ("--baseline", m)], "--max-token-increase", "150"], repo)
    assert again.code == 1
    assert without_timing(json.loads((repo / "ran.json").read_text())) == without_timing(compared)


def test_compare_within_the_token_limit_passes(repo):
    mains = history(repo)
    run(repo, "pr", 0, 340)
    out = run_cli(["compare", mains[0], "pr.json", "--max-token-increase", "250"], repo)
    assert out.code == 0, out.output
    assert "token gate passed" in out.output and "trend of main" not in out.output  # 1 baseline


def test_merge_prices_the_shards_gates_tokens_and_writes_html_with_the_turns(repo):
    mains = history(repo)
    write_json(repo / "prices.json", {"my-model": {"input": 1000, "output": 2000}})
    runs = recorded(repo, "pr", 1, 340)
    for i in (1, 2):
        out = run_cli(["run", "evals", "--replay", runs, "--shard", f"{i}/2", "--prices", "prices.json",
                       "--results", f"shard{i}.json", "--inference-out", f"shard{i}.runs.json"], repo)
        assert out.code in (0, 1), out.output
    whole = run_cli(["run", "evals", "--replay", runs, "--prices", "prices.json", "--results",
                     "whole.json"], repo)
    out = run_cli(["merge", "shard1.json", "shard2.json", "shard1.runs.json", "shard2.runs.json",
                   "--inference-out", "merged.runs.json", "--prices", "prices.json",
                   *[a for m in mains for a in ("--baseline", m)], "--max-token-increase", "150",
                   "--results", "merged.json", "--markdown", "merged.md", "--html", "merged.html"], repo)
    assert whole.code == 1 and out.code == 1, out.output
    merged = json.loads((repo / "merged.json").read_text())
    # (340*2 + 100*6) in + 20*8 out at $1000 / $2000 per million
    cost = merged["summary"]["usage"]["cost"]
    assert cost["total"] == round(1280 * 1000e-6 + 160 * 2000e-6, 6) == \
        json.loads((repo / "whole.json").read_text())["summary"]["usage"]["cost"]["total"]
    assert cost["prices"].startswith("prices.json")
    assert merged["comparison"]["tokenGate"]["exceeded"] == [{"evalSetId": "s", "evalId": "c1", "percent": 200.0}]
    assert len(merged["comparison"]["trend"]) == 3 and len(charts((repo / "merged.md").read_text())) == 2
    assert "token gate failed" in out.output and "trend of main" in out.output
    assert "est. cost $1.60 (prices.json" in (repo / "merged.md").read_text().replace("\\", "")
    page = (repo / "merged.html").read_text()
    assert "Run 1: 1 turn" in page and "token gate failed" in page


def test_merge_without_prices_prices_at_the_default_table(repo):
    runs = recorded(repo, "pr", 0, 100)
    for i in (1, 2):
        assert run_cli(["run", "evals", "--replay", runs, "--shard", f"{i}/2", "--results",
                        f"shard{i}.json"], repo).code == 0
    assert run_cli(["merge", "shard1.json", "shard2.json", "--results", "merged.json"], repo).code == 0
    cost = json.loads((repo / "merged.json").read_text())["summary"]["usage"]["cost"]
    assert cost == {"prices": "Gemini list prices of 2025-07", "unpriced": ["my-model"]}


def test_merge_with_a_bad_prices_file_is_bad_input_before_merging(repo):
    write_json(repo / "prices.json", {"my-model": {"input": "cheap"}})
    out = run_cli(["merge", "nothing.json", "--prices", "prices.json"], repo)
    assert out.code == 2 and "price of 'my-model' must be" in out.output
