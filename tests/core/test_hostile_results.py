"""Results files read back are held to the writer's limits (issue 39 point 4): a tool's name
is cut as its arguments are, and a shard or a side of ``compare`` crafted with more
trajectories, turns, calls and longer names, arguments or answers than evalcheck writes is
cut the writer's way as it is read, before the merge, the comparison or a report uses it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from checker.models.behaviour import MAX_ARGS, MAX_CALLS, MAX_NAME, MAX_RESPONSE, MAX_TRAJECTORIES, MAX_TURNS
from corehelpers import call, case, evalset, invocation, replay, run_cli, write_json

ROOM = 40  # the cut's mark: "… [1,234 more characters]"
ANSWER = "sunny in Paris"


def _suite(repo: Path, cases: int = 4) -> list[str]:
    ids = [f"c{n}" for n in range(cases)]
    write_json(repo / "evals/w.evalset.json", evalset("w", *[
        case(i, invocation("weather?", ANSWER, [call("weather", city="Paris")])) for i in ids]))
    write_json(repo / "evals/test_config.json",
               {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5}})
    return ids


def _hostile_trajectories() -> list[dict[str, Any]]:
    """More of everything than the writer keeps, and one of each too long."""
    def turn(t: int) -> dict[str, Any]:
        calls = [{"name": f"tool{c}", "args": {"n": c}} for c in range(MAX_CALLS + 5)]
        if t == 0:
            calls[0] = {"name": "n" * 20_000, "args": {"q": "x" * 5_000}, "extra": "y" * 1000}
        return {"calls": calls, "response": ("word " * 48_000) if t == 0 else ANSWER}
    return [{"runs": [1], "turns": [turn(t) for t in range(MAX_TURNS + 5)] + [{"calls": [{"name": f"v{k}"}]}]}
            for k in range(MAX_TRAJECTORIES + 3)]


def _assert_bounded(results: dict[str, Any], where: str) -> None:
    for eval_set in results["evalSets"]:
        for c in eval_set["cases"]:
            found = c.get("trajectories") or []
            assert len(found) <= MAX_TRAJECTORIES, where
            for trajectory in found:
                assert len(trajectory["turns"]) <= MAX_TURNS, where
                for turn in trajectory["turns"]:
                    assert len(turn["calls"]) <= MAX_CALLS, where
                    assert len(turn.get("response") or "") <= MAX_RESPONSE + ROOM, where
                    for made in turn["calls"]:
                        assert set(made) == {"name", "args"}, where
                        assert len(made["name"]) <= MAX_NAME + ROOM, where
                        assert len(json.dumps(made["args"])) <= MAX_ARGS + 2 * ROOM, where


def test_a_tools_name_is_cut_as_its_arguments_are(tmp_path):
    """45 KiB names made a results file 48x larger."""
    repo = tmp_path
    _suite(repo, 1)
    write_json(repo / "runs.json", replay(("w", "c0", 1, [invocation("weather?", ANSWER, [
        call("n" * 45_000, city="Paris")])])))
    out = run_cli(["run", "evals", "--replay", "runs.json", "--results", "r.json"], repo)
    assert out.code == 1, out.output  # the tool's name is not weather's
    results = json.loads((repo / "r.json").read_text())
    name = results["evalSets"][0]["cases"][0]["trajectories"][0]["turns"][0]["calls"][0]["name"]
    assert name == "n" * MAX_NAME + "\u2026 [44,872 more characters]"
    _assert_bounded(results, "written")


def _shards(repo: Path) -> list[str]:
    ids = _suite(repo)
    answered = [invocation("weather?", ANSWER, [call("weather", city="Paris")])]
    write_json(repo / "runs.json", replay(*[("w", i, r, answered) for i in ids for r in (1, 2)]))
    for n in (1, 2):
        out = run_cli(["run", "evals", "--replay", "runs.json", "--shard", f"{n}/2", "--results", f"s{n}.json"], repo)
        assert out.code == 0, out.output
    return ["s1.json", "s2.json"]


def _make_hostile(path: Path) -> None:
    results = json.loads(path.read_text())
    for c in results["evalSets"][0]["cases"]:
        c["trajectories"] = _hostile_trajectories()
        c["freshTrajectories"] = _hostile_trajectories()
    path.write_text(json.dumps(results))


def test_a_hostile_shard_is_cut_to_the_writers_limits_as_it_is_read_by_merge(tmp_path):
    repo = tmp_path
    files = _shards(repo)
    honest = run_cli(["merge", *files, "--results", "honest.json"], repo)
    assert honest.code == 0, honest.output
    control = json.loads((repo / "honest.json").read_text())
    shards = [json.loads((repo / f).read_text()) for f in files]
    # The honest control: what the shards wrote is read back unchanged.
    by_id = {c["evalId"]: c["trajectories"] for s in shards for c in s["evalSets"][0]["cases"]}
    assert {c["evalId"]: c["trajectories"] for c in control["evalSets"][0]["cases"]} == by_id

    _make_hostile(repo / "s1.json")
    hostile = run_cli(["merge", *files, "--results", "merged.json", "--markdown", "merged.md"], repo)
    assert hostile.code == 0, hostile.output
    merged = json.loads((repo / "merged.json").read_text())
    _assert_bounded(merged, "merged")
    first = merged["evalSets"][0]["cases"][0]["trajectories"][0]["turns"][0]
    assert first["calls"][0]["name"] == "n" * MAX_NAME + "\u2026 [19,872 more characters]"
    assert first["response"].endswith("\u2026 [239,000 more characters]")
    assert (repo / "merged.json").stat().st_size < (repo / "s1.json").stat().st_size / 5


def test_a_hostile_side_of_compare_is_cut_to_the_writers_limits_as_it_is_read(tmp_path):
    repo = tmp_path
    _shards(repo)
    assert run_cli(["merge", "s1.json", "s2.json", "--results", "base.json"], repo).code == 0
    head = json.loads((repo / "base.json").read_text())
    for c in head["evalSets"][0]["cases"]:
        c["trajectories"] = _hostile_trajectories()
    write_json(repo / "head.json", head, indent=None)
    out = run_cli(["compare", "base.json", "head.json", "--results", "out.json", "--markdown", "out.md"], repo)
    assert out.code == 0, out.output
    compared = json.loads((repo / "out.json").read_text())
    _assert_bounded(compared, "compared")
    for c in compared["evalSets"][0]["cases"]:
        for shown in (c["behaviour"]["baseline"], c["behaviour"]["here"]):
            assert len(shown["turns"]) <= MAX_TURNS
            assert all(len(t["calls"]) <= MAX_CALLS for t in shown["turns"])
    assert (repo / "out.md").stat().st_size < 65_536


def test_the_word_diff_is_made_once_per_case_however_often_the_comment_is_fitted(tmp_path, monkeypatch):
    """Fitting the comment renders the report again and again; each case's answers are
    diffed once (they were diffed again at each attempt)."""
    import difflib

    from checker.models.results import Results
    from checker.report import behaviour
    from checker.report.markdown import render_within

    repo = tmp_path
    _shards(repo)
    assert run_cli(["merge", "s1.json", "s2.json", "--results", "base.json"], repo).code == 0
    head = json.loads((repo / "base.json").read_text())
    for n, c in enumerate(head["evalSets"][0]["cases"]):
        c["trajectories"] = [{"runs": [1, 2], "turns": [{"calls": [{"name": "search", "args": {}}],
                                                         "response": f"case {n}: " + "other words " * 300}]}]
    write_json(repo / "head.json", head, indent=None)
    assert run_cli(["compare", "base.json", "head.json", "--results", "out.json"], repo).code == 0
    results = Results.model_validate_json((repo / "out.json").read_bytes())
    diffs = []

    class Counted(difflib.SequenceMatcher):
        def __init__(self, *args, **kwargs):
            diffs.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(behaviour.difflib, "SequenceMatcher", Counted)
    getattr(behaviour._diffed, "cache_clear", lambda: None)()  # diffs made by earlier tests
    renders = []
    real = render_within.__globals__["render_markdown"]
    monkeypatch.setitem(render_within.__globals__, "render_markdown",
                        lambda *a, **k: renders.append(1) or real(*a, **k))
    text, omitted = render_within(results, 1500, len)
    assert len(renders) > 3 and omitted  # fitted: several attempts, something left out
    assert len(diffs) == len(results.eval_sets[0].cases) == 4


def test_the_word_diff_is_bounded_in_words():
    from checker.report.behaviour import MAX_DIFF_WORDS, word_diff

    before = " ".join(f"a{i}" for i in range(20_000))
    after = " ".join(f"b{i}" for i in range(20_000))
    diff = word_diff(before, after)
    assert sum(len(text.split()) for _, text in diff.parts) == 2 * MAX_DIFF_WORDS
    assert diff.words_hidden == 40_000 - 2 * MAX_DIFF_WORDS
    assert word_diff("one two", "one three").parts == [("=", "one"), ("-", "two"), ("+", "three")]


def test_a_shard_nested_too_deep_is_bad_input_naming_the_file(tmp_path):
    """Arguments nested 150 levels are cut as any long arguments; past the 200 levels any
    JSON evalcheck reads may nest, the shard is refused, never a RecursionError."""
    repo = tmp_path
    files = _shards(repo)
    text = (repo / "s1.json").read_text()
    results = json.loads(text)
    results["evalSets"][0]["cases"][0]["trajectories"][0]["turns"][0]["calls"][0]["args"] = {"deep": "@DEEP@"}
    (repo / "s1.json").write_text(json.dumps(results).replace('"@DEEP@"', "[" * 5000 + "1" + "]" * 5000))
    out = run_cli(["merge", *files, "--results", "merged.json"], repo)
    assert out.code == 2 and not (repo / "merged.json").exists(), out.output
    assert "evalcheck: error: s1.json: " in out.stderr and "nested more than 200 levels deep" in out.stderr
    assert "Traceback" not in out.stderr
