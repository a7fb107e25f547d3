"""A judge the model service refuses for a while is waited for, never the agent's regression
(issue 38 point 3): an unchanged pull request whose Gemini judge answers 429
RESOURCE_EXHAUSTED for its first 10 seconds, against main's results with --fail-on
regression, passes as main did, every judge request retried after the service's hint."""

from __future__ import annotations

import json
import time

from .fake_gemini import error_reply
from .test_end_to_end import evalcheck, repo, script  # noqa: F401 - the repo fixture

STORM = 10.0


def verdicts(results: dict) -> dict[tuple[str, str], tuple[str, float | None]]:
    return {(c["evalId"], m["name"]): (m["status"], m.get("score"))
            for c in results["evalSets"][0]["cases"] for m in c["metrics"]}


def test_an_unchanged_pr_whose_judge_is_refused_for_10_s_passes_as_main_did(repo, fake):  # noqa: F811
    script(fake)
    main = evalcheck(repo, fake, "--results", "main.json")
    assert main.returncode == 1, main.stderr  # main fails some cases: the PR must fail them alike
    fake.reset()
    ends = time.monotonic() + STORM
    fake.on(lambda p: time.monotonic() < ends, error_reply(429, "Resource has been exhausted "
                                                                "(e.g. check quota).", retry_after="1"))
    script(fake)
    pr = evalcheck(repo, fake, "--baseline", "main.json", "--fail-on", "regression",
                   "--results", "pr.json")
    assert pr.returncode == 0, pr.stdout + pr.stderr
    refused = [r for r in fake.requests if r.received < ends]
    assert refused and fake.requests[-1].received >= ends  # the storm was met, and outlasted
    before = json.loads((repo / "main.json").read_text())
    after = json.loads((repo / "pr.json").read_text())
    assert verdicts(after) == verdicts(before)  # no case failed or regressed because of it
    assert not any(c.get("change") == "regressed" for c in after["evalSets"][0]["cases"])
    judge = after["metadata"]["judge"]
    assert judge["retries"] >= len(refused) and "refusals" not in judge
    # fewer judge calls at once while refused (the run's adaptive limit, cut by a quarter)
    slots = judge["adaptiveConcurrency"]
    assert slots["start"] == slots["cap"] == 8 and slots["lowest"] < 8 and slots["refusals"] >= 1
    assert "gate passed (fail-on: regression)" in pr.stdout
