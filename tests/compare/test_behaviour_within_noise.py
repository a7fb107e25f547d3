"""The new user's break of issue 40, with ``--confirm-runs 20``: ``lisbon_usd`` books a hotel
instead of asking currency_agent in every run of the PR (main asked it in 2 of 3 runs). The
20 fresh runs give p = 3/253 = 0.0119, above the family's level (``--alpha 0.01``, one test):
the case stays "unchanged ... within noise", fails as on main, and the gate passes. Its
behaviour changed beyond noise all the same, and every report says so: the behaviour diff
is made for it (main's usual trajectory beside the PR's, the fresh runs counted), its row
says "behaviour changed", the terminal labels it. A real warm stdio agent, through the CLI."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from corehelpers import call, case, evalset, invocation, run_cli, write_json

AGENT = f"{shlex.quote(sys.executable)} {shlex.quote(str(Path(__file__).parent / 'agents' / 'trip_agent.py'))}"


@pytest.fixture
def scenario(repo, monkeypatch):
    write_json(repo / "evals/trip.evalset.json", evalset(
        "trip", case("lisbon_usd", invocation("100 EUR in USD?", "1 EUR is 1.08 USD.",
                                              [call("currency_agent", request="EUR to USD")])),
        case("rome_weather", invocation("Rome weather?", "Sunny in Rome.", [call("get_forecast", city="Rome")]))))
    write_json(repo / "evals/test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})
    monkeypatch.setenv("TRIP_SIDE", "main")
    done = run_cli(["run", "evals", "--agent-command", AGENT, "--num-runs", "3", "--results", "main.json"], repo)
    assert done.code == 1, done.output  # lisbon_usd fails on main too (2 of 3 runs)
    monkeypatch.setenv("TRIP_SIDE", "pr")
    done = run_cli(["run", "evals", "--agent-command", AGENT, "--num-runs", "3", "--baseline", "main.json",
                    "--confirm-runs", "20", "--alpha", "0.01", "--fail-on", "regression",
                    "--results", "pr.json", "--markdown", "pr.md", "--html", "pr.html"], repo)
    data = json.loads((repo / "pr.json").read_text())
    cases = {c["evalId"]: c for c in data["evalSets"][0]["cases"]}
    return done, cases, (repo / "pr.md").read_text(), (repo / "pr.html").read_text()


def test_the_break_left_within_noise_is_shown_in_the_behaviour_diff(scenario):
    done, cases, markdown, page = scenario
    lisbon = cases["lisbon_usd"]
    metric = lisbon["metrics"][0]
    assert lisbon["change"] == "unchanged" and len(metric["confirmRuns"]) == 20
    assert metric["pValue"] == pytest.approx(3 / 253)  # C(3,2) / C(23,2): every pass on main's side
    assert done.code == 0, done.output  # the gate passed: the drop is not called at alpha 0.01
    b = lisbon["behaviour"]
    assert b["shift"]["usual"] is True
    assert b["shift"]["calls"] == [{"call": {"name": "currency_agent", "args": {"request": "EUR to USD"}},
                                    "runs": {"baseline": 2, "here": 0}}]
    assert b["runs"] == {"baseline": 3, "here": 23} and b["freshRuns"] == 20
    assert b["here"]["runs"] == {"baseline": 1, "here": 23}  # book_hotel: 1 of 3 on main, every run here
    assert "behaviour" not in cases["rome_weather"]  # the same calls on both sides
    # The markdown: the diff, and the row of the case said "within noise" says its behaviour changed.
    section = markdown[markdown.index("### What the agent does differently"):]
    assert "🔀 <b>lisbon_usd</b> (trip, unchanged, behaviour changed): first divergence at turn 1, call 1" in section
    assert ("**Changed beyond noise:** main's most common trajectory is not this PR's; "
            "currency\\_agent(request=\"EUR to USD\") in 2 of 3 runs of main, 0 of 23 here.") in section
    assert "This PR's runs include its 20 fresh confirmation runs." in section
    assert "| **➜ 1 · 1** | `currency_agent(request=\"EUR to USD\")` | `book_hotel(city=\"Lisbon\")` |" in section
    row = next(line for line in markdown.splitlines() if line.startswith("| lisbon\\_usd |"))
    assert "behaviour changed (see What the agent does differently)" in row and "within noise" in row
    # The terminal's line of the failing case carries the label.
    line = next(x for x in done.stdout.splitlines() if " lisbon_usd [" in x)
    assert "[behaviour changed]" in line and "within noise" in line
    # The HTML report: the badge and the diff.
    block = page[page.index("<summary><code>lisbon_usd</code>"):]
    block = block[:block.index("<h4>Runs</h4>")]
    assert "behaviour changed</span>" in block and "Changed beyond noise: </b>" in block
    assert "This PR's runs include its 20 fresh confirmation runs." in block
    if shutil.which("cmark-gfm"):  # the comment as GitHub renders it: one table row, the diff's table
        html = subprocess.run(["cmark-gfm", "--unsafe", "-e", "table"], input=markdown, capture_output=True,
                              text=True, check=True).stdout
        assert "<td><strong>➜ 1 · 1</strong></td>" in html and "<strong>Changed beyond noise:</strong>" in html
