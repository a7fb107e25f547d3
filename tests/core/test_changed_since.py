"""--changed-since (issue 26, point 3): a pull request re-runs only the eval sets it can change.

A real git repository with two ADK-style agent folders (``agent.py`` beside the eval set,
as ``adk eval`` expects), a shared module both import, and a workflow file. main is run
once for the baseline; then pull requests change one agent, the shared module, only an eval
file, the workflow. Which eval sets ran is read from the agents' own log, not the report.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from changed_repo import AGENT, COMMAND, build_monorepo, commit, git, ran
from corehelpers import case, evalset, invocation, run_cli, write_json



@pytest.fixture
def monorepo(tmp_path: Path, monkeypatch) -> Path:
    """main (tests/core/changed_repo.py) run once for the baseline, then a branch "pr"."""
    repo = tmp_path / "repo"
    build_monorepo(repo)
    monkeypatch.setenv("AGENT_LOG", str(tmp_path / "agent.log"))
    done = run_cli(["run", ".", "--agent-command", COMMAND, "--num-runs", "1",
                    "--results", str(tmp_path / "main.json")], repo)
    assert done.code == 1, done.output  # shop/bye fails on main
    assert ran(tmp_path / "agent.log") == {"weather", "shop"}
    git(repo, "checkout", "-q", "-b", "pr")
    return repo


def pr_run(repo: Path, *extra: str, fail_on: str = "regression"):
    out = repo.parent
    done = run_cli(["run", ".", "--agent-command", COMMAND, "--num-runs", "1", "--changed-since", "main",
                    "--baseline", str(out / "main.json"), "--results", str(out / "pr.json"),
                    "--markdown", str(out / "pr.md"), "--html", str(out / "pr.html"),
                    "--fail-on", fail_on, *extra], repo)
    results = json.loads((out / "pr.json").read_text()) if (out / "pr.json").exists() else None
    return done, results, (out / "pr.md").read_text() if (out / "pr.md").exists() else ""


def changes(results: dict) -> dict[str, set[str | None]]:
    return {s["evalSetId"]: {c.get("change") for c in s["cases"]} for s in results["evalSets"]}


def test_a_pr_that_changes_one_agent_reruns_only_its_eval_sets(monorepo):
    (monorepo / "agents" / "shop" / "agent.py").write_text(AGENT + "# faster\n")
    commit(monorepo, "shop: faster")
    done, results, markdown = pr_run(monorepo, "--junit", str(monorepo.parent / "pr.xml"))
    assert ran(monorepo.parent / "agent.log") == {"shop"}
    assert done.code == 0, done.output  # shop/bye fails, as on main: no regression
    assert changes(results) == {"weather": {"carried"}, "shop": {"unchanged"}}
    weather = next(s for s in results["evalSets"] if s["evalSetId"] == "weather")
    assert [(c["evalId"], c["status"]) for c in weather["cases"]] == [("hi", "passed")]
    assert results["summary"]["carried"] == 1 and results["comparison"]["summary"]["carried"] == 1
    # The carried eval set is in the results: nothing of main's is removed or outside the run.
    assert results["comparison"]["summary"]["removed"] == 0 and results["comparison"]["removed"] == []
    assert "outside" not in results["comparison"]["summary"]
    assert results["metadata"]["changedSince"]["carried"] == ["weather"]
    assert results["metadata"]["changedSince"]["rerun"] == [
        {"evalSet": "shop", "why": "its agent's file agents/shop/agent.py changed"}]
    # The comment: weather is carried, with main's verdict.
    assert "1 carried from main (not re-run: nothing it depends on changed)" in markdown
    assert "| hi | ✅ passed | ⏭️ carried |" in markdown
    assert "not re-run: nothing it depends on changed" in done.stderr
    html = (monorepo.parent / "pr.html").read_text()
    assert html.count('<span class="badge change-carried">carried</span>') == 1
    assert html.count("Carried from main, not re-run: nothing it depends on changed.") == 1
    # JUnit: a case passed on main is skipped here, not passed; bye ran and failed here.
    junit = ET.parse(monorepo.parent / "pr.xml").getroot()
    assert junit.get("skipped") == "1" and junit.get("failures") == "1"
    suite = next(s for s in junit.iter("testsuite") if s.get("name") == "weather")
    assert (suite.get("tests"), suite.get("skipped"), suite.get("failures")) == ("1", "1", "0")
    (hi,) = suite.iter("testcase")
    assert hi.get("time") == "0"  # main's run time is not this PR's
    assert [(e.tag, e.get("message")) for e in hi if e.tag != "properties"] == [
        ("skipped", "carried from main: passed on main, not re-run (nothing it depends on changed)")]
    shop = next(s for s in junit.iter("testsuite") if s.get("name") == "shop")
    assert shop.get("skipped") == "0" and shop.find("testcase/skipped") is None
    (failure,) = shop.iter("failure")
    assert not failure.get("message").startswith("carried from main")
    # Under fail-on: failure bye's own failure here fails the job.
    done, _, markdown = pr_run(monorepo, fail_on="failure")
    assert done.code == 1 and ran(monorepo.parent / "agent.log") == {"shop"}
    assert "1 of 3 cases did not pass (1 carried from main, not re-run)" in markdown


def test_a_case_that_failed_on_main_reruns_though_nothing_it_depends_on_changed(monorepo, monkeypatch):
    """Only passes are carried: shop/bye failed on main, so shop runs although the PR touched
    only weather, and the report says why. A flaky failure then clears (BYE_ANSWER: the
    agent answers right this time) and fail-on: failure passes; a real one fails here."""
    (monorepo / "agents" / "weather" / "agent.py").write_text(AGENT + "# faster\n")
    commit(monorepo, "weather: faster")
    why = "shop: nothing it depends on changed, but its case 'bye' failed on main (only passes are carried): it runs"
    done, results, markdown = pr_run(monorepo, fail_on="failure")
    assert ran(monorepo.parent / "agent.log") == {"weather", "shop"}
    assert done.code == 1, done.output  # bye fails again: this run's own verdict
    assert changes(results) == {"weather": {"unchanged"}, "shop": {"unchanged"}}
    assert "carried" not in results["summary"]
    assert why in results["metadata"]["changedSince"]["notes"] and f"evalcheck: note: {why}" in done.stderr
    assert {"evalSet": "shop", "why": "its case 'bye' failed on main (only passes are carried)"} in \
        results["metadata"]["changedSince"]["rerun"]
    assert why.replace("'", "\\'") in markdown.replace("'", "\\'")
    monkeypatch.setenv("BYE_ANSWER", "Goodbye, see you soon.")
    done, results, markdown = pr_run(monorepo, fail_on="failure")
    assert ran(monorepo.parent / "agent.log") == {"weather", "shop"}
    assert done.code == 0, done.output
    shop = next(s for s in results["evalSets"] if s["evalSetId"] == "shop")
    assert [(c["evalId"], c["status"], c["change"]) for c in shop["cases"]] == [
        ("hello", "passed", "unchanged"), ("bye", "passed", "unchanged")]


def test_a_pr_that_changes_a_shared_module_reruns_every_eval_set(monorepo):
    (monorepo / "lib" / "common.py").write_text('def greet():\n    return "Hello there!"  # same\n')
    commit(monorepo, "lib: comment")
    done, results, markdown = pr_run(monorepo)
    assert ran(monorepo.parent / "agent.log") == {"weather", "shop"}
    assert done.code == 0, done.output
    assert changes(results) == {"weather": {"unchanged"}, "shop": {"unchanged"}}
    assert "carried" not in results["summary"]
    assert {r["why"] for r in results["metadata"]["changedSince"]["rerun"]} == {
        "lib/common.py changed, outside every agent's files"}
    assert "carried" not in markdown


def test_a_pr_that_changes_only_an_eval_file_reruns_its_eval_set(monorepo):
    path = monorepo / "agents" / "shop" / "shop.evalset.json"
    write_json(path, evalset("shop", case("hello", invocation("hi", "Hello there!")),
                             case("bye", invocation("bye", "Hello there!"))))
    commit(monorepo, "shop: fix the expected answer")
    done, results, markdown = pr_run(monorepo, fail_on="failure")
    assert ran(monorepo.parent / "agent.log") == {"shop"}
    assert done.code == 0, done.output
    assert changes(results) == {"weather": {"carried"}, "shop": {"unchanged", "changed"}}
    assert results["metadata"]["changedSince"]["rerun"] == [
        {"evalSet": "shop", "why": "its eval file agents/shop/shop.evalset.json changed"}]
    assert "1 carried from main" in markdown


def test_a_pr_that_changes_the_workflow_reruns_every_eval_set(monorepo):
    (monorepo / ".github" / "workflows" / "eval.yml").write_text("on: [pull_request, push]\n")
    commit(monorepo, "ci")
    done, results, _ = pr_run(monorepo)
    assert ran(monorepo.parent / "agent.log") == {"weather", "shop"}
    assert changes(results) == {"weather": {"unchanged"}, "shop": {"unchanged"}}


def test_nothing_changed_carries_every_passing_eval_set_and_runs_no_agent_for_it(monorepo):
    done, results, markdown = pr_run(monorepo, fail_on="failure")
    assert ran(monorepo.parent / "agent.log") == {"shop"}  # shop/bye failed on main: it runs
    assert done.code == 1  # and fails again
    assert results["summary"] == {**results["summary"], "cases": 3, "passed": 2, "failed": 1, "carried": 1}
    git(monorepo, "checkout", "-q", "main")  # main drops bye; the PR starts from there
    (monorepo / "agents" / "shop" / "shop.evalset.json").write_text(json.dumps(evalset(
        "shop", case("hello", invocation("hi", "Hello there!")))))
    commit(monorepo, "shop: bye dropped")
    git(monorepo, "checkout", "-q", "pr")
    git(monorepo, "merge", "-q", "--ff-only", "main")
    out = monorepo.parent
    run_cli(["run", ".", "--agent-command", COMMAND, "--num-runs", "1",
             "--results", str(out / "main.json")], monorepo)  # every case passes on main now
    ran(out / "agent.log")
    done, results, _ = pr_run(monorepo, fail_on="failure")
    assert ran(out / "agent.log") == set() and done.code == 0, done.output
    assert results["summary"] == {**results["summary"], "cases": 2, "passed": 2, "carried": 2}
    assert "usage" not in results["summary"]  # no token was spent here


def test_shards_hold_the_carried_eval_sets_once_and_merge_keeps_them(monorepo):
    (monorepo / "agents" / "shop" / "agent.py").write_text(AGENT + "# faster\n")
    commit(monorepo, "shop: faster")
    out = monorepo.parent
    for index in (1, 2):
        done = run_cli(["run", ".", "--agent-command", COMMAND, "--num-runs", "1", "--changed-since", "main",
                        "--baseline", str(out / "main.json"), "--shard", f"{index}/2",
                        "--results", str(out / f"s{index}.json")], monorepo)
        assert done.code in (0, 1), done.output
    assert ran(out / "agent.log") == {"shop"}
    shards = [json.loads((out / f"s{i}.json").read_text()) for i in (1, 2)]
    # Every shard lists both eval sets; shard 1 holds the carried cases, after the cases run.
    assert [[s["evalSetId"] for s in r["evalSets"]] for r in shards] == [["shop", "weather"]] * 2
    assert changes(shards[0])["weather"] == {"carried"} and changes(shards[1])["weather"] == set()
    assert [r["shard"]["total"] for r in shards] == [3, 3]
    done = run_cli(["merge", str(out / "s1.json"), str(out / "s2.json"), "--baseline", str(out / "main.json"),
                    "--results", str(out / "merged.json"), "--markdown", str(out / "merged.md"),
                    "--fail-on", "regression"], monorepo)
    assert done.code == 0, done.output
    merged = json.loads((out / "merged.json").read_text())
    assert changes(merged) == {"weather": {"carried"}, "shop": {"unchanged"}}
    assert [c["evalId"] for s in merged["evalSets"] for c in s["cases"]] == ["hello", "bye", "hi"]
    assert merged["summary"]["carried"] == 1 and merged["comparison"]["summary"]["carried"] == 1
    assert merged["comparison"]["summary"]["removed"] == 0 and "outside" not in merged["comparison"]["summary"]
    assert "| hi | ✅ passed | ⏭️ carried |" in (out / "merged.md").read_text()
    # A shard that ran everything evaluated another selection: not merged with these.
    run_cli(["run", ".", "--agent-command", COMMAND, "--num-runs", "1", "--shard", "2/2",
             "--results", str(out / "all2.json")], monorepo)
    done = run_cli(["merge", str(out / "s1.json"), str(out / "all2.json"), "--results", str(out / "x.json")], monorepo)
    assert done.code == 2 and "evaluated another selection" in done.output, done.output


def test_an_eval_set_main_has_no_results_for_runs_and_the_report_says_why(monorepo):
    out = monorepo.parent
    git(monorepo, "checkout", "-q", "main")
    done = run_cli(["run", "agents/weather", "--agent-command", COMMAND, "--num-runs", "1",
                    "--results", str(out / "main.json")], monorepo)  # main's results: weather only
    git(monorepo, "checkout", "-q", "pr")
    ran(out / "agent.log")
    done, results, markdown = pr_run(monorepo, fail_on="failure")
    assert ran(out / "agent.log") == {"shop"}  # nothing changed: weather is carried, shop cannot be
    assert changes(results) == {"weather": {"carried"}, "shop": {"new"}}
    why = "shop: nothing it depends on changed, but main's results have no result for it: it runs"
    assert results["metadata"]["changedSince"]["notes"] == [why]
    assert why in done.stderr and why.replace("'", "\\'") in markdown.replace("'", "\\'")


def test_agent_paths_map_eval_files_to_agents_that_live_elsewhere(tmp_path, monkeypatch):
    """stdio agents under services/, eval sets under evals/: without a mapping a change of an
    agent is a change outside every agent folder (everything runs); with it, only its own."""
    repo = tmp_path / "repo"
    build_monorepo(repo)
    git(repo, "mv", "agents", "services")
    for name in ("weather", "shop"):  # no agent.py: nothing says which folder is an agent
        git(repo, "mv", f"services/{name}/agent.py", f"services/{name}/main.py")
        (repo / "evals" / name).mkdir(parents=True)
        for f in (f"{name}.evalset.json", "test_config.json"):
            git(repo, "mv", f"services/{name}/{f}", f"evals/{name}/{f}")
    commit(repo, "services and their evals apart")
    command = COMMAND.replace("agents/$EVALCHECK_EVAL_SET_ID/agent.py", "services/$EVALCHECK_EVAL_SET_ID/main.py")
    monkeypatch.setenv("AGENT_LOG", str(tmp_path / "agent.log"))
    base = run_cli(["run", ".", "--agent-command", command, "--num-runs", "1",
                    "--results", str(tmp_path / "main.json")], repo)
    assert base.code == 1, base.output
    ran(tmp_path / "agent.log")
    git(repo, "checkout", "-q", "-b", "pr")
    (repo / "services" / "shop" / "main.py").write_text(AGENT + "# cheaper\n")
    commit(repo, "shop: cheaper")
    args = ["run", ".", "--agent-command", command, "--num-runs", "1", "--changed-since", "main",
            "--baseline", str(tmp_path / "main.json"), "--results", str(tmp_path / "pr.json")]
    run_cli(args, repo)
    assert ran(tmp_path / "agent.log") == {"weather", "shop"}
    mapped = run_cli([*args, "--agent-paths", "evals/weather=services/weather,lib",
                      "--agent-paths", "evals/shop=services/shop,lib"], repo)
    assert mapped.code == 1, mapped.output  # shop/bye still fails
    assert ran(tmp_path / "agent.log") == {"shop"}
    results = json.loads((tmp_path / "pr.json").read_text())
    assert changes(results) == {"weather": {"carried"}, "shop": {"unchanged"}}


@pytest.mark.parametrize("extra, message", [
    (["--changed-since", "main"], "--changed-since needs --baseline"),
    (["--changed-since", "no-such-branch", "--baseline", "MAIN"], "'no-such-branch' names no commit of this repository"),
    (["--changed-since", "-x", "--baseline", "MAIN"], "--changed-since '-x' is not a git revision"),
    (["--changed-since", "main", "--baseline", "MAIN", "--agent-paths", "evals"], "--agent-paths 'evals' is not EVALS=PATH"),
    (["--changed-since", "main", "--baseline", "MAIN", "--agent-paths", "agents/shop=nowhere"], "nowhere not found"),
    (["--changed-since", "main", "--baseline", "MAIN", "--agent-paths", "agents/shop=/etc"], "/etc lies outside the repository"),
    (["--agent-paths", "agents/shop=agents/shop"], "--agent-paths goes with --changed-since"),
])
def test_bad_selection_input_exits_2_before_any_agent_runs(monorepo, extra, message):
    extra = [str(monorepo.parent / "main.json") if e == "MAIN" else e for e in extra]
    done = run_cli(["run", ".", "--agent-command", COMMAND, *extra], monorepo)
    assert done.code == 2 and message in done.output, done.output
    assert "Traceback" not in done.output
    assert ran(monorepo.parent / "agent.log") == set()


def test_outside_a_git_repository_is_bad_input(tmp_path, monkeypatch):
    repo = tmp_path / "plain"
    build_monorepo(repo)
    monkeypatch.setenv("AGENT_LOG", str(tmp_path / "agent.log"))
    run_cli(["run", ".", "--agent-command", COMMAND, "--num-runs", "1", "--results", str(tmp_path / "m.json")], repo)
    ran(tmp_path / "agent.log")
    import shutil

    shutil.rmtree(repo / ".git")
    (repo / ".git").mkdir()  # evalcheck's root marker, but no repository git can read
    done = run_cli(["run", ".", "--agent-command", COMMAND, "--changed-since", "main",
                    "--baseline", str(tmp_path / "m.json")], repo)
    assert done.code == 2 and "not a git repository git can read" in done.output, done.output
    assert ran(tmp_path / "agent.log") == set()


def test_a_replay_has_no_agent_to_select_for(monorepo):
    (monorepo.parent / "runs.json").write_text('{"version": 1, "runs": []}')
    done = run_cli(["run", ".", "--replay", str(monorepo.parent / "runs.json"), "--changed-since", "main",
                    "--baseline", str(monorepo.parent / "main.json")], monorepo)
    assert done.code == 2 and "with a replay no agent runs" in done.output, done.output


@pytest.mark.parametrize("edit, extra, why", [
    (lambda case: case.update(fingerprint="sha256:other"), [],
     "shop: nothing it depends on changed, but its case 'hello' is not what main evaluated "
     "(its data, criteria or judge differ): it runs"),
    (lambda case: case.update(status="not_evaluated"), [],
     "shop: nothing it depends on changed, but main did not evaluate its case 'hello': it runs"),
    (lambda case: None, ["--verdict", "majority"],
     "main's results were decided with the verdict rule 'mean', this run's is 'majority': every eval set runs"),
])
def test_main_results_that_cannot_stand_for_an_eval_set_make_it_run(monorepo, edit, extra, why):
    out = monorepo.parent
    main = json.loads((out / "main.json").read_text())
    shop = next(s for s in main["evalSets"] if s["evalSetId"] == "shop")
    edit(shop["cases"][0])
    (out / "main.json").write_text(json.dumps(main))
    (monorepo / "agents" / "weather" / "agent.py").write_text(AGENT + "# faster\n")
    commit(monorepo, "weather: faster")
    done, results, markdown = pr_run(monorepo, *extra)
    assert ran(out / "agent.log") == {"weather", "shop"}
    assert why in results["metadata"]["changedSince"]["notes"]
    assert f"evalcheck: note: {why}" in done.stderr
    assert "carried" not in json.dumps(results["evalSets"])


# weather's agent as ADK loads agents: the folder holding the agent folders on sys.path, so a
# new folder there named like a module it imports is imported instead.
WEATHER_ADK_STYLE = AGENT.replace("import common\n", (
    "import common\n"
    "sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))\n"
    "import difflib\n"
    "if not hasattr(difflib, 'SequenceMatcher'):\n"
    "    common.greet = lambda: 'difflib is not the one I know'\n"))


def test_a_new_agent_folder_that_shadows_a_siblings_import_reruns_the_sibling(monorepo, monkeypatch):
    """The PR adds only agents/difflib/ (a new agent, a package): weather's `import difflib`
    now imports it. Its own files would re-run only difflib and carry weather green from
    main; a full run fails weather. The new folder beside weather's re-runs weather."""
    out = monorepo.parent
    monkeypatch.setenv("BYE_ANSWER", "Goodbye, see you soon.")  # every case passes on main
    git(monorepo, "checkout", "-q", "main")
    (monorepo / "agents" / "weather" / "agent.py").write_text(WEATHER_ADK_STYLE)
    commit(monorepo, "weather imports difflib")
    main = run_cli(["run", ".", "--agent-command", COMMAND, "--num-runs", "1",
                    "--results", str(out / "main.json")], monorepo)
    assert main.code == 0, main.output
    ran(out / "agent.log")
    git(monorepo, "checkout", "-q", "pr")
    git(monorepo, "merge", "-q", "--ff-only", "main")
    folder = monorepo / "agents" / "difflib"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "agent.py").write_text(AGENT)
    write_json(folder / "difflib.evalset.json", evalset("difflib", case("hi", invocation("hi", "Hello there!"))))
    write_json(folder / "test_config.json", {"criteria": {"response_match_score": 0.8}})
    commit(monorepo, "a new agent: difflib")
    done, results, markdown = pr_run(monorepo, fail_on="failure")
    assert ran(out / "agent.log") == {"weather", "shop", "difflib"}  # every agent beside difflib
    assert done.code == 1, done.output
    weather = next(s for s in results["evalSets"] if s["evalSetId"] == "weather")
    assert [(c["evalId"], c["status"]) for c in weather["cases"]] == [("hi", "failed")]
    assert {"evalSet": "weather", "why": "agents/difflib is new beside its agent's folder agents/weather: "
            "it can shadow what the agent imports"} in results["metadata"]["changedSince"]["rerun"]
    assert results["metadata"]["changedSince"]["carried"] == []
    # The same PR run whole fails weather the same way: carrying it would have hidden that.
    whole = run_cli(["run", ".", "--agent-command", COMMAND, "--num-runs", "1"], monorepo)
    assert whole.code == 1 and "weather.evalset.json" in whole.output, whole.output


def test_an_environment_file_in_one_agents_folder_reruns_every_eval_set(monorepo, monkeypatch):
    monkeypatch.setenv("BYE_ANSWER", "Goodbye, see you soon.")
    (monorepo / "agents" / "shop" / "requirements.txt").write_text("google-adk==2.13.0\n")
    commit(monorepo, "shop: pin adk")
    done, results, _ = pr_run(monorepo, fail_on="failure")
    assert ran(monorepo.parent / "agent.log") == {"weather", "shop"}
    assert done.code == 0, done.output
    assert {"evalSet": "weather", "why": "agents/shop/requirements.txt changed: an environment file, "
            "it can change what every agent imports"} in results["metadata"]["changedSince"]["rerun"]


TINY_SERVER = Path(__file__).resolve().parents[1] / "agents" / "agents" / "tiny_api_server.py"


def test_one_agent_server_reruns_everything_it_serves_unless_agent_paths_say_otherwise(tmp_path):
    """Two agent folders served by one --agent-url server (one process, one sys.modules): a
    change in shop's folder re-runs weather too; --agent-paths mapping each eval file to its
    own folder says they are apart, and weather is carried."""
    import shlex
    import socket
    import sys

    repo = tmp_path / "repo"
    build_monorepo(repo)
    for name in ("weather", "shop"):  # the tiny server answers "answer for None": every case passes
        write_json(repo / "agents" / name / f"{name}.evalset.json",
                   evalset(name, case("hi", invocation("hi", "answer for None"))))
    commit(repo, "evals for the server")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ["--agent-url", f"http://127.0.0.1:{port}", "--app-name", "tiny", "--agent-server-command",
              f"{shlex.quote(sys.executable)} {shlex.quote(str(TINY_SERVER))} {port} {tmp_path / 'pids'}"]
    main = run_cli(["run", ".", *server, "--num-runs", "1", "--results", str(tmp_path / "main.json")], repo)
    assert main.code == 0, main.output
    git(repo, "checkout", "-q", "-b", "pr")
    (repo / "agents" / "shop" / "agent.py").write_text(AGENT + "# cheaper\n")
    commit(repo, "shop: cheaper")
    args = ["run", ".", *server, "--num-runs", "1", "--changed-since", "main",
            "--baseline", str(tmp_path / "main.json"), "--results", str(tmp_path / "pr.json")]
    done = run_cli(args, repo)
    assert done.code == 0, done.output
    results = json.loads((tmp_path / "pr.json").read_text())
    assert changes(results) == {"weather": {"unchanged"}, "shop": {"unchanged"}}
    assert {r["evalSet"] for r in results["metadata"]["changedSince"]["rerun"]} == {"weather", "shop"}
    mapped = run_cli([*args, "--agent-paths", "agents/weather=agents/weather",
                      "--agent-paths", "agents/shop=agents/shop"], repo)
    assert mapped.code == 0, mapped.output
    results = json.loads((tmp_path / "pr.json").read_text())
    assert changes(results) == {"weather": {"carried"}, "shop": {"unchanged"}}
