"""``evalcheck-adk agents`` over a repository of three real ADK agents (tests/adk_agent/
several_agents.py): each eval set runs on the agent ADK would use for it - the agent folder
its eval file lies in, else the agent its app name names - which the agents' own answers
prove, at --concurrency 1 and 8 and in shards; every agent loaded once, on first use; an
eval set under no agent is bad input (exit 2) before any agent starts."""

from __future__ import annotations

import asyncio
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from checker.agents.base import RunJob
from checker.agents.stdio import StdioRunner
from checker.models.evalset import EvalCase

from .helpers import PY, REPO

pytest.importorskip("google.adk")

sys.path.insert(0, str(REPO / "tests" / "adk_agent"))
from several_agents import AUTHORS, build, greeter_case, write_eval_set  # noqa: E402

BRIDGE = shlex.quote(str(Path(PY).parent / "evalcheck-adk"))
COMMAND = f"{BRIDGE} agents"
SETS = {"weather": "weather_app", "shop": "shop_app", "greetings": "greeter"}


def evalcheck(repo: Path, *args: str, log: Path | None = None) -> subprocess.CompletedProcess:
    env = None
    if log is not None:
        import os

        env = {**os.environ, "AGENT_IMPORT_LOG": str(log)}
    return subprocess.run([PY, "-c", "from checker.cli import main; main()", *args], cwd=repo,
                          capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("several") / "repo")


def authors(run: dict) -> set[str]:
    return {e["author"] for inv in run["invocations"]
            for e in inv["intermediateData"].get("invocationEvents", []) if "author" in e}


def check_each_set_ran_on_its_agent(results: dict, inference: dict, runs: int) -> None:
    assert results["passed"] is True
    cases = {s["evalSetId"]: {c["evalId"]: c["status"] for c in s["cases"]} for s in results["evalSets"]}
    assert set(cases) == set(SETS)
    assert all(status == "passed" for found in cases.values() for status in found.values())
    by_set: dict[str, set[str]] = {}
    for run in inference["runs"]:
        assert run.get("error") is None
        by_set.setdefault(run["evalSetId"], set()).update(authors(run))
        final = run["invocations"][-1]["finalResponse"]["parts"][0]["text"]
        if run["evalSetId"] == "greetings":
            assert final.endswith("I am the greeter.")
    # Who answered: each eval set's own agent and its sub-agent, never another agent.
    assert by_set["weather"] == AUTHORS["weather_app"]
    assert by_set["shop"] == AUTHORS["shop_app"]
    assert len(inference["runs"]) == runs * sum(len(c) for c in cases.values())


@pytest.mark.parametrize("concurrency", ["1", "8"])
def test_each_eval_set_runs_on_its_own_agent(repo, tmp_path, concurrency):
    results, inference, log = tmp_path / "r.json", tmp_path / "i.json", tmp_path / "imports"
    done = evalcheck(repo, "run", ".", "--agent-command", COMMAND, "--num-runs", "2",
                     "--concurrency", concurrency, "--results", str(results),
                     "--inference-out", str(inference), log=log)
    assert done.returncode == 0, done.stdout + done.stderr
    check_each_set_ran_on_its_agent(json.loads(results.read_text()),
                                    json.loads(inference.read_text()), runs=2)
    imported = [line.split() for line in log.read_text().splitlines()]
    # Each agent was loaded once (on its first run), all in one bridge process, which says
    # it serves every eval set ("evalSets": "any").
    assert sorted(name for name, _ in imported) == sorted(SETS.values())
    assert len({pid for _, pid in imported}) == 1


def test_shards_run_each_eval_set_on_its_own_agent(repo, tmp_path):
    parts = []
    for index in (1, 2):
        results, inference = tmp_path / f"r{index}.json", tmp_path / f"i{index}.json"
        done = evalcheck(repo, "run", ".", "--agent-command", COMMAND, "--num-runs", "1",
                         "--shard", f"{index}/2", "--results", str(results),
                         "--inference-out", str(inference))
        assert done.returncode == 0, done.stdout + done.stderr
        parts.append((results, json.loads(inference.read_text())))
    merged = tmp_path / "merged.json"
    done = evalcheck(repo, "merge", *(str(r) for r, _ in parts), "--results", str(merged))
    assert done.returncode == 0, done.stdout + done.stderr
    inference = {"runs": [run for _, i in parts for run in i["runs"]]}
    check_each_set_ran_on_its_agent(json.loads(merged.read_text()), inference, runs=1)
    assert all(i["runs"] for _, i in parts)  # both shards ran cases


def test_an_eval_set_under_no_agent_is_bad_input_naming_it(repo, tmp_path):
    stray = write_eval_set(repo / "tests" / "stray.evalset.json", "stray",
                           [greeter_case("hi_cy", "Cy"), greeter_case("hi_di", "Di", app_name="nobody")])
    try:
        done = evalcheck(repo, "run", ".", "--agent-command", COMMAND, "--num-runs", "1",
                         log=tmp_path / "imports")
    finally:
        stray.unlink()
        (stray.parent / "test_config.json").unlink()
    assert done.returncode == 2, done.stdout + done.stderr
    message = done.stderr
    assert "tests/stray.evalset.json" in message and "eval case 'hi_di'" in message
    assert "$.eval_cases[1].session_input.app_name" in message
    assert "agents found: greeter, shop_app, weather_app" in message
    assert message.count("has no agent") + message.count("runs on no agent") == 1
    assert not (tmp_path / "imports").exists()  # no agent started


def test_an_agent_that_fails_to_load_fails_only_its_own_runs(repo, tmp_path):
    broken = repo / "agents" / "broken"
    broken.mkdir()
    (broken / "agent.py").write_text("import no_such_module_anywhere\n")
    write_eval_set(broken / "evals" / "broken.evalset.json", "broken", [greeter_case("hi", "Ed")])
    results = tmp_path / "r.json"
    try:
        done = evalcheck(repo, "run", ".", "--agent-command", COMMAND, "--num-runs", "2",
                         "--concurrency", "8", "--results", str(results))
    finally:
        import shutil

        shutil.rmtree(broken)
    assert done.returncode == 1, done.stdout + done.stderr
    found = {s["evalSetId"]: s["cases"] for s in json.loads(results.read_text())["evalSets"]}
    assert [c["status"] for c in found["broken"]] == ["error"]
    errors = {r["error"] for r in found["broken"][0]["runs"]}
    assert all("cannot load the ADK agent in agents/broken" in e and "no_such_module_anywhere" in e
               for e in errors), errors
    assert all(c["status"] == "passed" for name in SETS for c in found[name])


def test_the_bridge_alone_names_the_agents_for_a_run_it_cannot_place(repo):
    """A command the checker does not read (e.g. through a script): the bridge itself fails
    the run with the agents it found."""
    runner = StdioRunner(f"{BRIDGE} {shlex.quote(str(repo / 'agents'))}", cwd=repo)
    case = EvalCase.model_validate(greeter_case("hi", "Fay", app_name="nobody"))

    async def go():
        try:
            return await runner.run(RunJob("lost", case, 1, turn_timeout=60,
                                           eval_file="evals/lost.evalset.json"))
        finally:
            await runner.aclose()
    run = asyncio.run(go())
    assert run.error is not None and "evals/lost.evalset.json runs on no agent of" in run.error
    assert "agents found: greeter, shop_app, weather_app" in run.error


def test_which_folder_is_one_agent_and_which_holds_several(tmp_path):
    from evalcheck_adk_bridge.folders import agent_for, agents_in

    def make(*files: str, text: str = "") -> Path:
        root = tmp_path / f"t{len(list(tmp_path.iterdir()))}"
        for name in files:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        return root

    # As ADK's AgentLoader: agent.py or root_agent.yaml in DIR make it one agent.
    assert agents_in(make("agent.py", "sub/agent.py")) == []
    assert agents_in(make("root_agent.yaml", "sub/agent.py")) == []
    # A package defining root_agent is one agent too, its subpackages its own modules.
    assert agents_in(make("__init__.py", "tools/__init__.py", text="root_agent = make()")) == []
    several = make("__init__.py", "b/root_agent.yaml", "a/agent.py", "c/__init__.py",
                   "lib/x.py", ".hidden/agent.py", "__pycache__/agent.py")
    assert agents_in(several) == ["a", "b", "c"]
    assert agents_in(make("README.md")) == []  # no agents: as one (ADK says what is missing)
    names = agents_in(several)
    # The folder the eval file lies in wins over the app name; else the app name.
    assert agent_for(several, names, several / "a" / "evals" / "x.evalset.json", "b") == "a"
    assert agent_for(several, names, several / "lib" / "x.evalset.json", "b") == "b"
    assert agent_for(several, names, tmp_path / "elsewhere.evalset.json", "c") == "c"
    assert agent_for(several, names, several / "a.evalset.json", None) is None
    assert agent_for(several, names, None, "lib") is None


def test_changed_since_reruns_only_the_eval_sets_of_the_agent_that_changed(tmp_path):
    """--changed-since reads each eval set's agent by the bridge's rule: a change in the shop
    agent re-runs the shop eval set only; the others are carried from main."""
    import os

    repo = build(tmp_path / "repo")

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "add", "-A")
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "main")
    main = tmp_path / "main.json"
    done = evalcheck(repo, "run", ".", "--agent-command", COMMAND, "--num-runs", "1",
                     "--results", str(main))
    assert done.returncode == 0, done.stdout + done.stderr
    agent = repo / "agents" / "shop_app" / "agent.py"
    agent.write_text(agent.read_text() + "\n# a comment\n")
    git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "shop: comment")
    results = tmp_path / "pr.json"
    log = tmp_path / "imports"
    done = evalcheck(repo, "run", ".", "--agent-command", COMMAND, "--num-runs", "1",
                     "--baseline", str(main), "--changed-since", "main~1", "--results", str(results),
                     log=log)
    assert done.returncode == 0, done.stdout + done.stderr
    found = json.loads(results.read_text())
    changes = {s["evalSetId"]: {c["change"] for c in s["cases"]} for s in found["evalSets"]}
    assert changes == {"shop": {"unchanged"}, "weather": {"carried"}, "greetings": {"carried"}}
    assert found["metadata"]["changedSince"]["rerun"] == [
        {"evalSet": "shop", "why": "its agent's file agents/shop_app/agent.py changed"}]
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["shop_app"]
