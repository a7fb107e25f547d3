"""Tokens through a real stdio agent (tests/agents/agents/echo_agent.py reports 10 prompt
and 3 candidates tokens a turn): per run, case and suite in the results, in the report's
footer with an estimated cost, and the agent token budget (--max-agent-tokens)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from .helpers import AGENTS, PY, case, cli_env, write_eval_set

ECHO = f"{PY} {AGENTS / 'echo_agent.py'}"


def evalcheck(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "checker.cli", "run", "evals", "--agent-command", ECHO,
                           "--results", "r.json", "--markdown", "r.md", *args], cwd=repo,
                          env=cli_env(), capture_output=True, text=True, timeout=120)


def suite(repo: Path, cases: int = 2, turns: int = 2) -> None:
    (repo / ".git").mkdir()
    write_eval_set(repo / "evals", "s", [case(f"c{i}", turns=turns) for i in range(1, cases + 1)])


def test_token_totals_are_the_sum_of_what_the_agent_reported(tmp_path):
    suite(tmp_path)
    (tmp_path / "prices.json").write_text(json.dumps({"*": {"input": 1000, "output": 2000}}))
    done = evalcheck(tmp_path, "--num-runs", "2", "--prices", "prices.json")
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "r.json").read_text())
    for c in results["evalSets"][0]["cases"]:
        for run in c["runs"]:  # 2 turns of 10 + 3 tokens
            assert run["usage"] == {"agent": {"input": 20, "output": 6,
                                              "models": {"": {"input": 20, "output": 6}}}}
        assert (c["usage"]["agent"]["input"], c["usage"]["agent"]["output"]) == (40, 12)
        # $1000 and $2000 per million tokens: 40 * 0.001 + 12 * 0.002
        assert c["usage"]["cost"] == {"total": 0.064, "agent": 0.064}
    usage = results["summary"]["usage"]
    assert (usage["agent"]["input"], usage["agent"]["output"]) == (80, 24)
    assert "judge" not in usage  # no judge metric: nothing counted, not 0
    assert usage["cost"]["total"] == 0.128 and usage["cost"]["prices"].startswith("prices.json")
    report = (tmp_path / "r.md").read_text()
    assert "tokens: agent 80 in + 24 out · est. cost $0.128 (prices.json, then Gemini list prices" \
        in report.replace("\\", "")


def test_without_a_price_the_tokens_are_counted_and_the_cost_is_not_guessed(tmp_path):
    suite(tmp_path, cases=1)
    done = evalcheck(tmp_path, "--num-runs", "1")
    assert done.returncode == 0, done.stderr
    usage = json.loads((tmp_path / "r.json").read_text())["summary"]["usage"]
    assert usage["cost"] == {"prices": "Gemini list prices of 2025-07",
                             "unpriced": ["(model not reported)"]}
    assert "no price for (model not reported)" in (tmp_path / "r.md").read_text().replace("\\", "")


def test_a_spent_agent_budget_starts_no_further_run_and_exits_2_naming_it(tmp_path):
    suite(tmp_path, cases=3)
    # one run at a time: 26 tokens a run, so the budget of 40 is spent after the second run
    done = evalcheck(tmp_path, "--num-runs", "2", "--concurrency", "1", "--max-agent-tokens", "40")
    assert done.returncode == 2, done.stderr
    assert "the agent token budget (--max-agent-tokens 40) was spent (52 tokens used): " \
           "4 runs not started, 2 cases not evaluated" in done.stderr
    results = json.loads((tmp_path / "r.json").read_text())
    statuses = {c["evalId"]: c["status"] for c in results["evalSets"][0]["cases"]}
    assert statuses == {"c1": "passed", "c2": "not_evaluated", "c3": "not_evaluated"}
    c3 = results["evalSets"][0]["cases"][2]
    assert [r["status"] for r in c3["runs"]] == ["not_evaluated", "not_evaluated"]
    assert c3["runs"][0]["error"].startswith("not started: the agent token budget")
    assert results["passed"] is False
    assert results["summary"]["notEvaluated"] == 2 and results["summary"]["passed"] == 1
    assert results["budgets"] == [{"side": "agent", "option": "--max-agent-tokens", "limit": 40,
                                   "used": 52, "what": "run", "refused": 4, "cases": 2}]
    assert "token budget" in (tmp_path / "r.md").read_text()


def test_a_budget_the_suite_fits_in_changes_nothing(tmp_path):
    suite(tmp_path, cases=1)
    done = evalcheck(tmp_path, "--num-runs", "2", "--max-agent-tokens", "1000")
    assert done.returncode == 0, done.stderr
    assert "budgets" not in json.loads((tmp_path / "r.json").read_text())


def test_budgets_are_per_shard_and_merge_exits_2_naming_the_shard(tmp_path):
    """Each shard spends its own --max-agent-tokens; merge carries the budget a shard spent,
    named with its shard, never passes, and exits 2 as that shard did."""
    suite(tmp_path, cases=4, turns=1)  # 13 tokens a run

    def shard(index: int, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([PY, "-m", "checker.cli", "run", "evals", "--agent-command", ECHO,
                               "--num-runs", "2", "--concurrency", "1", "--shard", f"{index}/2",
                               "--results", f"shard{index}.json", *args], cwd=tmp_path,
                              env=cli_env(), capture_output=True, text=True, timeout=120)

    assert shard(1, "--max-agent-tokens", "20").returncode == 2  # its 2nd run spends it
    assert shard(2, "--max-agent-tokens", "1000").returncode == 0  # the same budget, its own
    done = subprocess.run([PY, "-m", "checker.cli", "merge", "shard1.json", "shard2.json",
                           "--results", "merged.json"], cwd=tmp_path, env=cli_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "the agent token budget (--max-agent-tokens 20) of shard 1/2 was spent (26 tokens " \
           "used): 2 runs not started, 1 case not evaluated" in done.stderr
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert merged["passed"] is False and [b["shard"] for b in merged["budgets"]] == ["1/2"]
    assert merged["summary"]["notEvaluated"] == 1 and merged["summary"]["passed"] == 3


# An agent whose usage counts are not counts: 1e400 (read as infinity), a 29-digit count,
# a negative one. Its answers are right; only its usage must be left out, with a warning.
BAD_USAGE = {"huge": '{"promptTokenCount": 1e400, "candidatesTokenCount": 3}',
             "digits": '{"promptTokenCount": 12345678901234567890123456789}',
             "negative": '{"candidatesTokenCount": -5}',
             "fine": '{"promptTokenCount": 10, "candidatesTokenCount": 3}'}
USAGE_AGENT = '''
import json, os, sys
usage = USAGES[os.environ["EVALCHECK_EVAL_ID"]]
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "user":
        text = msg["content"]["parts"][0]["text"]
        sys.stdout.write('{"type": "response", "invocationId": "%s", "finalResponse": %s, '
                         '"usage": %s}\\n' % (msg["invocationId"], json.dumps("echo: " + text), usage))
        sys.stdout.flush()
'''


def test_usage_counts_that_are_not_counts_are_left_out_with_a_warning(tmp_path):
    suite(tmp_path, cases=0)
    write_eval_set(tmp_path / "evals", "s", [case(name, turns=1) for name in BAD_USAGE])
    (tmp_path / "agent.py").write_text(f"USAGES = {BAD_USAGE!r}\n{USAGE_AGENT}")
    done = subprocess.run([PY, "-m", "checker.cli", "run", "evals", "--agent-command",
                           f"{PY} agent.py", "--num-runs", "1", "--results", "r.json",
                           "--max-agent-tokens", "1000", "--inference-out", "recorded.json"],
                          cwd=tmp_path, env=cli_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr  # every answer right; the budget is not spent
    for name, key, value in (("huge", "promptTokenCount", "inf"),
                             ("digits", "promptTokenCount", "123456789012345678901..."),
                             ("negative", "candidatesTokenCount", "-5")):
        assert (f"evalcheck: warning: s/{name} run 1: the agent's token usage was left out: "
                f"{key} is {value}, not a token count (an integer from 0 to 2^53)") in done.stderr
    assert "fine run 1" not in done.stderr
    results = json.loads((tmp_path / "r.json").read_text())
    usage = {c["evalId"]: c["runs"][0].get("usage") for c in results["evalSets"][0]["cases"]}
    assert usage == {"huge": None, "digits": None, "negative": None,
                     "fine": {"agent": {"input": 10, "output": 3,
                                        "models": {"": {"input": 10, "output": 3}}}}}
    assert results["summary"]["usage"]["agent"]["input"] == 10

    # The recorded runs keep no usage for them; replaying a file that has such counts
    # (written by hand, as a pull request may) leaves them out the same way.
    recorded = json.loads((tmp_path / "recorded.json").read_text())
    for run in recorded["runs"]:
        if run["evalId"] == "digits":
            run["invocations"][0]["intermediateData"] = {"invocationEvents": [
                {"author": "agent", "usageMetadata": {"promptTokenCount": 1e300}}]}
    (tmp_path / "hand.json").write_text(json.dumps(recorded))
    replayed = subprocess.run([PY, "-m", "checker.cli", "run", "evals", "--replay", "hand.json",
                               "--results", "r2.json"], cwd=tmp_path, env=cli_env(),
                              capture_output=True, text=True, timeout=120)
    assert replayed.returncode == 0, replayed.stderr
    assert ("s/digits run 1: the agent's token usage was left out: promptTokenCount is 1e+300"
            in replayed.stderr)


def test_a_token_count_is_an_integer_from_0_to_2_to_the_53():
    from checker.models.usage import bad_usage

    fine = [0, 812, 812.0, "12", " 7 ", 2 ** 53, None]
    bad = [-1, 2 ** 53 + 1, 812.5, float("inf"), float("nan"), True, "1e400", "12a", [], {}]
    assert [bad_usage({"promptTokenCount": v}) for v in fine] == [None] * len(fine)
    assert all(bad_usage({"prompt_token_count": v}) for v in bad)
    assert bad_usage({"trafficType": "ON_DEMAND", "promptTokensDetails": [1e400]}) is None
