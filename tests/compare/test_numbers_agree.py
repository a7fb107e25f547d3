"""Numbers that agree (issue 40): every count of fresh runs - the terminal's, the headline's,
the HTML report's, the results' - is the same runs, with the ones asked for only to check
that screening and confirmation agree said apart; and `evalcheck compare` of a run's results
decides as the run did, on its confirmation runs, or says in its headline that it did not
and why."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

from corehelpers import call, case, evalset, invocation, run_cli, write_json

AGENT = (f"{shlex.quote(sys.executable)} "
         f"{shlex.quote(str(Path(__file__).parent / 'agents' / 'screening_aware_agent.py'))}")
EXPECTED = invocation("Weather in Paris?", "The weather in Paris is sunny.", [call("get_weather", city="Paris")])


def _run(repo: Path, out: str, *extra: str):
    return run_cli(["run", "evals", "--agent-command", AGENT, "--num-runs", "3", "--results", out,
                    "--markdown", f"{out}.md", "--html", f"{out}.html", *extra], repo)


def test_fresh_runs_for_the_screening_check_are_counted_apart_everywhere(repo, monkeypatch):
    """rain fails its 3 first runs (main passed 3/3) and then every third fresh run, up to
    --confirm-runs 30: its regression test settles after 5 fresh runs (4/5 against 3/3:
    p = 1 - C(7,5)/C(8,5) = 0.625 > 0.5); its screening check (two metrics main passed in
    every run: level 0.025) goes on to 25: runs 4-28 fail at 6, 9, ..., 27 (17 of 25 pass),
    and even 5 more passing leave p = C(11,3)/C(33,3) = 165/5,456 = 0.030 > 0.025 - it
    cannot disagree (at 20: 14 of 20, and 10 more passing would give C(9,3)/C(33,3) =
    0.015, so it went on)."""
    write_json(repo / "evals" / "w.evalset.json", evalset("w", case("rain", EXPECTED), case("sun", EXPECTED)))
    write_json(repo / "evals" / "test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})
    monkeypatch.setenv("AGENT_LOG", str(repo / "agent.log"))
    assert _run(repo, "main.json").code == 0
    monkeypatch.setenv("BREAK_SCREENING_RUNS", "3")
    monkeypatch.setenv("FRESH_FAIL_EVERY", "3")
    monkeypatch.setenv("BREAK_CASES", "rain")
    done = _run(repo, "pr.json", "--baseline", "main.json", "--fail-on", "regression", "--confirm-runs", "30")
    assert done.code == 0, done.output  # not confirmed, no disagreement at 0.025
    data = json.loads((repo / "pr.json").read_text())
    rain = data["evalSets"][0]["cases"][0]
    metric = rain["metrics"][0]
    assert len(metric["confirmRuns"]) == 5 and len(metric["disagreementRuns"]) == 25
    assert metric["disagreementRuns"][:5] == metric["confirmRuns"]
    assert [r["run"] for r in rain["freshRuns"]] == list(range(4, 29))
    meta = data["metadata"]
    assert (meta["confirmExtraRuns"], meta["confirmContestedRuns"], meta["confirmRounds"]) == (25, 20, 5)
    ran = (repo / "agent.log").read_text().split().count("rain")
    assert ran == 3 + 3 + 25  # main, the first runs, the fresh ones

    line = "confirmation: 25 fresh run(s) in 5 round(s) for 1 case(s) that looked worse than the " \
        "baseline: 5 for the regression tests, 20 more only to check that screening and " \
        "confirmation agree (up to 30 a case, 20 where it looked only a little worse)"
    assert line in done.stdout.splitlines()
    said = "1 case fails that passed 3/3 on main (w/rain): the drop was not confirmed in 5 fresh " \
        "runs (budget 30; 20 more checked that screening and confirmation agree)"
    assert said in done.stdout.splitlines()[-1]
    assert f"- {said}" in (repo / "pr.json.md").read_text().splitlines()[:8]  # a line under the headline
    page = (repo / "pr.json.html").read_text()
    assert "5 fresh runs, 4 passed (budget 30); the screening check read 25, 17 passed" in page

    # compare decides again on the run's fresh runs: the same labels, headline and gate.
    again = run_cli(["compare", "main.json", "pr.json", "--fail-on", "regression", "--results", "c.json",
                     "--markdown", "c.md"], repo)
    assert again.code == done.code, again.output
    assert again.stdout.splitlines()[-1] == done.stdout.splitlines()[-1]
    assert line in again.stdout.splitlines()
    compared = json.loads((repo / "c.json").read_text())
    assert compared["comparison"]["familywise"] == data["comparison"]["familywise"]
    assert compared["evalSets"] == data["evalSets"]
    assert (repo / "c.md").read_text().splitlines()[:4] == (repo / "pr.json.md").read_text().splitlines()[:4]


def test_compare_says_when_it_cannot_decide_on_the_runs_fresh_runs(repo, monkeypatch):
    """Against another results file of main than the run's, or at another alpha, `compare`
    decides without the run's confirmation runs and says so in its headline and footer (here
    the first runs alone still call it: 0/3 against 3/3 is p = 0.05, the only test that can
    reach 0.05, Tarone's K = 1)."""
    write_json(repo / "evals" / "w.evalset.json", evalset("w", case("rain", EXPECTED), case("sun", EXPECTED)))
    write_json(repo / "evals" / "test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})
    monkeypatch.setenv("AGENT_LOG", str(repo / "agent.log"))
    assert _run(repo, "main.json").code == 0
    monkeypatch.setenv("BREAK_SCREENING_RUNS", "100")  # every run of rain fails
    monkeypatch.setenv("BREAK_CASES", "rain")
    done = _run(repo, "pr.json", "--baseline", "main.json", "--fail-on", "regression", "--confirm-runs", "10")
    assert done.code == 1 and "1 case regressed" in done.stdout.splitlines()[-1], done.output
    same = run_cli(["compare", "main.json", "pr.json", "--fail-on", "regression"], repo)
    assert same.code == 1 and same.stdout.splitlines()[-1] == done.stdout.splitlines()[-1], same.output

    other = json.loads((repo / "main.json").read_text())
    other["metadata"]["note"] = "another run of main"
    write_json(repo / "other.json", other)
    fresh = len(json.loads((repo / "pr.json").read_text())["evalSets"][0]["cases"][0]["freshRuns"])
    for args, why in ((["other.json"], "they were asked for against other results of main than the "
                                       "BASELINE files given"),
                      (["main.json", "--alpha", "0.1"], "they stopped at alpha 0.05, this comparison is at --alpha 0.1")):
        out = run_cli(["compare", *args, "pr.json", "--fail-on", "regression", "--markdown", "o.md"], repo)
        assert out.code == 1, out.output
        last = out.stdout.splitlines()[-1]
        assert last.endswith(f"; re-decided without the {fresh} fresh confirmation runs the results file "
                             f"holds ({why})"), last
        assert "confirmation:" not in out.stdout
        footer = (repo / "o.md").read_text().splitlines()[-1]
        assert f"decided on the runs recorded, without the {fresh} fresh confirmation runs" in footer
        assert re.search(r"alpha 0\.\d+", footer)
