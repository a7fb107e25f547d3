"""Baselines, flaky labels, shards and merge for agents-cli datasets (issue 23.4), as for ADK's
eval sets (test_compare_cli.py): a dataset and eval_config.yaml scored with rouge_1 (a mapped
built-in metric, local and deterministic) and a custom_function (the custom metric worker),
the agent's answers replayed."""

from __future__ import annotations

import json
from pathlib import Path

from corehelpers import invocation, replay, run_cli, write_json

REFERENCE = "Sunny and 21 degrees in Paris"
RIGHT = [invocation("Weather in Paris?", REFERENCE)]
WRONG = [invocation("Weather in Paris?", "I cannot tell")]
CASES = ("steady", "breaks", "wobbly", "other")
CONFIG = """metrics_to_run:
  - rouge_1
  - says_sunny
custom_metrics:
  - name: says_sunny
    custom_function: |
      def evaluate(instance):
          text = "".join(p.get("text", "") for p in instance["response"]["parts"])
          return {"score": 1.0 if "Sunny" in text else 0.0, "explanation": text}
"""


def setup(repo: Path) -> None:
    (repo / "tests/eval").mkdir(parents=True)
    (repo / "tests/eval/eval_config.yaml").write_text(CONFIG, encoding="utf-8")
    write_json(repo / "tests/eval/datasets/weather.json", {"eval_cases": [
        {"eval_case_id": c, "prompt": {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
         "reference": {"response": {"role": "model", "parts": [{"text": REFERENCE}]}}} for c in CASES]})


def run(repo: Path, name: str, outcomes: dict[str, list[bool]], *extra: str):
    runs = [("weather", c, n, RIGHT if ok else WRONG)
            for c, oks in outcomes.items() for n, ok in enumerate(oks, start=1)]
    write_json(repo / f"{name}.replay.json", replay(*runs))
    return run_cli(["run", ".", "--replay", f"{name}.replay.json", "--results", f"{name}.json",
                    "--threshold", "rouge_1=0.5", "--threshold", "says_sunny=1", *extra], repo)


def cases(repo: Path, name: str) -> dict[str, dict]:
    [eval_set] = json.loads((repo / f"{name}.json").read_text())["evalSets"]
    return {c["evalId"]: c for c in eval_set["cases"]}


MAIN = {c: [True] * 6 for c in CASES}  # 6 runs: a regression is significant family-wise


def test_a_regressed_agents_cli_case_against_a_baseline_from_an_agents_cli_run(repo):
    setup(repo)
    base = run(repo, "base", MAIN)
    assert base.code == 0, base.output
    assert {m["name"]: m["score"] for m in cases(repo, "base")["steady"]["metrics"]} == {
        "rouge_1": 1.0, "says_sunny": 1.0}
    out = run(repo, "head", {**MAIN, "breaks": [False] * 6}, "--baseline", "base.json",
              "--fail-on", "regression")
    assert out.code == 1, out.output
    assert "breaks [regressed]: rouge_1 0.00 < 0.50 (baseline 1.00" in out.stdout
    head = cases(repo, "head")
    assert head["breaks"]["change"] == "regressed"
    assert {c: head[c]["change"] for c in ("steady", "wobbly", "other")} == dict.fromkeys(
        ("steady", "wobbly", "other"), "unchanged")
    says = [m for m in head["breaks"]["metrics"] if m["name"] == "says_sunny"][0]
    assert (says["baselineScore"], says["score"], says["status"]) == (1.0, 0.0, "failed")
    # the case's fingerprint is the same on both sides: compared, not "changed"
    assert head["breaks"]["fingerprint"] == cases(repo, "base")["breaks"]["fingerprint"]


def test_a_flaky_agents_cli_case_is_labelled_k_of_n(repo):
    setup(repo)
    run(repo, "base", MAIN)
    out = run(repo, "head", {**MAIN, "wobbly": [True, False, True]}, "--baseline", "base.json",
              "--fail-on", "regression", "--verdict", "majority")
    assert out.code == 0, out.output
    assert "wobbly [flaky 2/3 runs passed, baseline 6/6]: passed" in out.stdout
    wobbly = cases(repo, "head")["wobbly"]
    assert wobbly["flaky"] is True and wobbly["change"] == "unchanged"
    assert [m["runs"] for m in wobbly["metrics"]] == [[1.0, 0.0, 1.0], [1.0, 0.0, 1.0]]


def test_two_shards_merged_are_one_run(repo):
    setup(repo)
    outcomes = {**MAIN, "breaks": [False] * 6, "wobbly": [True, False, True]}
    whole = run(repo, "whole", outcomes)
    shards = [run(repo, f"s{i}", outcomes, "--shard", f"{i}/2") for i in (1, 2)]
    assert whole.code == 1 and all(s.code in (0, 1) for s in shards)
    seen = [set(cases(repo, f"s{i}")) for i in (1, 2)]
    assert seen[0] and seen[1] and not seen[0] & seen[1] and seen[0] | seen[1] == set(CASES)
    merged = run_cli(["merge", "s1.json", "s2.json", "--results", "merged.json"], repo)
    assert merged.code == 1, merged.output

    def strip(c: dict) -> dict:
        return {k: v for k, v in c.items() if k not in ("durationSeconds", "shard")}

    one, both = cases(repo, "whole"), cases(repo, "merged")
    assert {k: strip(v) for k, v in both.items()} == {k: strip(v) for k, v in one.items()}
    summary = [json.loads((repo / f).read_text())["summary"] for f in ("whole.json", "merged.json")]
    assert (summary[1]["passed"], summary[1]["failed"], summary[1]["errored"]) == (
        summary[0]["passed"], summary[0]["failed"], summary[0]["errored"]) == (2, 2, 0)
