"""A recorded-runs file (what --inference-out writes) where a results file belongs: said as
such, with the command that makes a results file of it - not "no 'passed' key"."""

from __future__ import annotations

from corehelpers import call, case, evalset, invocation, replay, run_cli, write_json

RIGHT = invocation("Weather in Paris?", "Sunny", [call("get_weather", city="Paris")])


def test_compare_and_baseline_say_it_is_a_recorded_runs_file(repo):
    write_json(repo / "evals" / "w.evalset.json", evalset("w", case("c", RIGHT)))
    write_json(repo / "runs.json", replay(("w", "c", 1, [RIGHT]), ("w", "c", 2, [RIGHT])))
    assert run_cli(["run", "evals", "--replay", "runs.json", "--results", "r.json"], repo).code == 0
    expected = ("evalcheck: error: runs.json at $.runs: this is a recorded-runs file "
                "(--inference-out), not a {what} (score it with evalcheck run --replay runs.json, "
                "and give the results.json that run writes with --results)\n")
    out = run_cli(["compare", "runs.json", "r.json"], repo)
    assert (out.code, out.stderr) == (2, expected.format(what="baseline"))
    out = run_cli(["compare", "r.json", "runs.json"], repo)
    assert (out.code, out.stderr) == (2, expected.format(what="results file"))
    out = run_cli(["run", "evals", "--replay", "runs.json", "--baseline", "runs.json"], repo)
    assert (out.code, out.stderr) == (2, expected.format(what="baseline"))
