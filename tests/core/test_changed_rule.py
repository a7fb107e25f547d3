"""The --changed-since rule in pieces (checker/scale/depends.py, checker/inputs/git_changes.py):
which folder is an eval set's agent, which changed file re-runs what, git run hardened."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from changed_repo import build_monorepo, commit, git
from checker.errors import InputError
from checker.inputs.git_changes import changed_files
from checker.scale.depends import Dependencies, agent_folder, bridge_folder, rerun_reasons


@pytest.fixture
def tree(tmp_path: Path, monkeypatch) -> Path:
    for folder in ("agents/weather", "agents/shop/evals", "lib"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "agents" / "weather" / "agent.py").write_text("")
    (tmp_path / "agents" / "shop" / "root_agent.yaml").write_text("")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("command, folder", [
    ("evalcheck-adk agents/weather", "agents/weather"),
    ("evalcheck-adk --concurrent 4 agents/weather", "agents/weather"),
    ("/venv/bin/evalcheck-adk --one-session ./agents/shop", "agents/shop"),
    ("python -m evalcheck_adk_bridge agents/weather", "agents/weather"),
    ("python3 -m checker.bridges.adk agents/shop", "agents/shop"),
    ("evalcheck-adk agents/$EVALCHECK_EVAL_SET_ID", None),  # the shell picks: per eval set
    ("cd agents && evalcheck-adk weather", None),
    ("evalcheck-adk agents/nowhere", None),
    ("python agents/weather/agent.py", None),
    ("evalcheck-adk 'unclosed", None),
    (None, None),
])
def test_the_folder_the_bridge_loads(tree, command, folder):
    assert bridge_folder(command, tree) == folder


def test_the_agent_folder_an_eval_file_lies_in(tree):
    assert agent_folder(tree / "agents/weather/x.evalset.json", tree) == "agents/weather"
    assert agent_folder(tree / "agents/shop/evals/y.evalset.json", tree) == "agents/shop"
    assert agent_folder(tree / "lib/z.evalset.json", tree) is None
    (tree / "agent.py").write_text("")  # the repository root is never taken for one agent
    assert agent_folder(tree / "lib/z.evalset.json", tree) is None


def deps(own: str, agent: str | None) -> Dependencies:
    return Dependencies(own={own: "eval file"}, agent=(agent,) if agent is not None else None)


KEYS = ["weather", "shop", "loose"]
DEPS = [deps("agents/weather/w.evalset.json", "agents/weather"),
        deps("agents/shop/s.evalset.json", "agents/shop"),
        deps("evals/l.evalset.json", None)]


@pytest.mark.parametrize("changed, rerun", [
    ([], set()),
    (["agents/weather/w.evalset.json"], {"weather"}),
    (["evals/l.evalset.json"], {"loose"}),
    (["agents/weather/tools.py"], {"weather", "loose"}),  # loose's agent could be anywhere
    (["agents/weatherman/x.py"], set(KEYS)),  # a sibling folder is not the agent's
    (["lib/common.py"], set(KEYS)),
    (["agents/weather/w.evalset.json", "agents/shop/prompt.txt"], {"weather", "shop", "loose"}),
])
def test_which_changed_file_reruns_what(changed, rerun):
    assert set(rerun_reasons(KEYS, DEPS, changed)) == rerun


@pytest.mark.parametrize("changed, rerun", [
    (["agents/a/tools.py"], {"outer", "inner"}),  # the inner agent imports its parent's tools
    (["agents/a/sub/agent.py"], {"outer", "inner"}),  # it lies in the outer folder too
    (["agents/a/sub/x.evalset.json"], {"inner"}),
    (["agents/b/tools.py"], {"other"}),
])
def test_an_agent_inside_another_agents_folder_reads_that_folder_too(changed, rerun):
    keys = ["outer", "inner", "other"]
    nested = [deps("agents/a/o.evalset.json", "agents/a"), deps("agents/a/sub/x.evalset.json", "agents/a/sub"),
              deps("agents/b/b.evalset.json", "agents/b")]
    assert set(rerun_reasons(keys, nested, changed)) == rerun


def test_git_reads_the_repository_it_is_given_whatever_the_callers_git_variables(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    build_monorepo(repo)
    git(repo, "checkout", "-q", "-b", "pr")
    (repo / "lib" / "common.py").write_text("# changed\n")
    commit(repo, "lib")
    other = tmp_path / "other"
    build_monorepo(other)
    # A caller's GIT_DIR would point git at another repository; a GIT_EXTERNAL_DIFF would run.
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", str(tmp_path / "planted.sh"))
    (tmp_path / "planted.sh").write_text(f"#!/bin/sh\ntouch {tmp_path / 'ran'}\n")
    os.chmod(tmp_path / "planted.sh", 0o755)
    assert changed_files("main", repo) == ["lib/common.py"]
    assert not (tmp_path / "ran").exists()


def test_a_rename_counts_under_both_names_and_the_merge_base_is_the_start(tmp_path):
    repo = tmp_path / "repo"
    build_monorepo(repo)
    git(repo, "checkout", "-q", "-b", "pr")
    git(repo, "mv", "lib/common.py", "lib/shared.py")
    commit(repo, "rename")
    git(repo, "checkout", "-q", "main")  # main moves on after the branch: not the PR's change
    (repo / "README.md").write_text("main\n")
    commit(repo, "main moves on")
    git(repo, "checkout", "-q", "pr")
    assert changed_files("main", repo) == ["lib/common.py", "lib/shared.py"]


def test_a_hook_or_fsmonitor_of_the_repository_never_runs(tmp_path):
    repo = tmp_path / "repo"
    build_monorepo(repo)
    marker = tmp_path / "ran"
    script = tmp_path / "hook.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    os.chmod(script, 0o755)
    git(repo, "config", "core.fsmonitor", str(script))
    git(repo, "config", "core.hooksPath", str(tmp_path))
    (tmp_path / "post-checkout").write_text(script.read_text())
    os.chmod(tmp_path / "post-checkout", 0o755)
    (repo / "lib" / "common.py").write_text("# dirty\n")  # a work tree git would look at
    assert changed_files("HEAD", repo) == []
    assert not marker.exists()
    # The same settings do run with plain git (the test would see them if they ran).
    subprocess.run(["git", "-C", str(repo), "status", "--short"], capture_output=True, check=True)
    assert marker.exists()


def test_bad_refs_are_bad_input(tmp_path):
    repo = tmp_path / "repo"
    build_monorepo(repo)
    for ref, message in (("nope", "'nope' names no commit"), ("a b", "is not a git revision"),
                         ("--output=x", "is not a git revision"), ("", "is not a git revision")):
        with pytest.raises(InputError, match=message):
            changed_files(ref, repo)


def test_an_eval_sets_agent_is_the_mapping_then_the_bridges_folder_then_its_own_folder(tree):
    from types import SimpleNamespace

    from checker.agents.adk_command import read_bridge_command
    from checker.scale.depends import AgentMapping, dependencies

    (tree / "tests" / "eval").mkdir(parents=True)
    target = SimpleNamespace(loaded=SimpleNamespace(path=tree / "agents/weather/w.evalset.json"),
                             config=SimpleNamespace(path=tree / "tests/eval/eval_config.json"))
    found = dependencies(target, tree, [], None)
    assert (found.own, found.agent) == ({"agents/weather/w.evalset.json": "eval file",
                                         "tests/eval/eval_config.json": "criteria file"}, ("agents/weather",))
    shop = read_bridge_command("evalcheck-adk agents/shop")
    assert dependencies(target, tree, [], shop).agent == ("agents/shop",)
    mappings = [AgentMapping("agents", ("lib",)), AgentMapping("agents/weather", ("agents/weather", "lib")),
                AgentMapping("tests", ("tests",))]
    assert dependencies(target, tree, mappings, shop).agent == ("lib", "agents/weather")
    target.loaded.path = tree / "tests/eval/t.evalset.json"
    assert dependencies(target, tree, [], None).agent is None


@pytest.mark.parametrize("path", [
    "requirements.txt", "agents/weather/requirements.txt", "requirements-dev.in", "constraints.txt",
    "requirements/base.txt", "pyproject.toml", "agents/weather/pyproject.toml", "setup.cfg", "setup.py",
    "poetry.lock", "agents/weather/uv.lock", "Pipfile.lock", "package-lock.json",
    "agents/weather/local.pth", "sitecustomize.py",
    ".venv/lib/python3.12/site-packages/difflib.py", "agents/weather/venv/bin/activate",
    "lib/python3.12/site-packages/x/__init__.py", "env/pyvenv.cfg",
])
def test_an_environment_file_reruns_every_eval_set_wherever_it_lies(path):
    """One installed environment usually serves every agent: what changes it changes what
    each imports, even from inside one agent's folder."""
    reasons = rerun_reasons(KEYS, DEPS, [path])
    assert set(reasons) == set(KEYS)
    assert reasons["shop"] == f"{path} changed: an environment file, it can change what every agent imports"


@pytest.mark.parametrize("path", ["agents/weather/requirements_notes.md", "agents/weather/lockfile.py",
                                  "agents/weather/venvs.py"])
def test_files_named_like_environment_files_but_not_one_rerun_only_their_agent(path):
    assert set(rerun_reasons(KEYS, DEPS, [path])) == {"weather", "loose"}


DIFFLIB = ["agents/difflib/__init__.py", "agents/difflib/agent.py", "agents/difflib/d.evalset.json"]
SIBLINGS = ["weather", "shop", "difflib", "loose"]
SIBLING_DEPS = [deps("agents/weather/w.evalset.json", "agents/weather"),
                deps("agents/shop/s.evalset.json", "agents/shop"),
                deps("agents/difflib/d.evalset.json", "agents/difflib"),
                deps("evals/l.evalset.json", None)]


def test_a_new_folder_beside_agent_folders_reruns_every_sibling_agent():
    """A new agent agents/difflib/ (a package) shadows `import difflib` of agents/weather
    when one `adk api_server agents` puts agents/ on sys.path: its own files alone would
    re-run only it."""
    assert set(rerun_reasons(SIBLINGS, SIBLING_DEPS, DIFFLIB)) == {"difflib", "loose"}
    new = {"agents/difflib", *DIFFLIB}
    reasons = rerun_reasons(SIBLINGS, SIBLING_DEPS, DIFFLIB, added=new)
    assert set(reasons) == set(SIBLINGS)
    assert reasons["weather"] == ("agents/difflib is new beside its agent's folder agents/weather: "
                                  "it can shadow what the agent imports")
    assert reasons["difflib"] == "its agent's file agents/difflib/__init__.py changed"
    # Removed: an agent folder (or module) that shadowed a name no longer does.
    gone = rerun_reasons(SIBLINGS, SIBLING_DEPS, DIFFLIB, removed={"agents/difflib", *DIFFLIB})
    assert gone["shop"].startswith("agents/difflib was removed beside its agent's folder agents/shop")


@pytest.mark.parametrize("changed, added, rerun", [
    # A new file inside one agent's folder is beside none: that agent only.
    (["agents/weather/tools.py"], {"agents/weather/tools.py"}, {"weather", "loose"}),
    # Changed, not added: nothing new can shadow.
    (["agents/shop/agent.py"], set(), {"shop", "loose"}),
    # A new module directly in agents/ is outside every agent's files: everything, as before.
    (["agents/difflib.py"], {"agents/difflib.py"}, set(SIBLINGS)),
])
def test_what_is_not_new_beside_an_agent_folder_does_not_rerun_its_siblings(changed, added, rerun):
    assert set(rerun_reasons(SIBLINGS, SIBLING_DEPS, changed, added=added)) == rerun


def test_one_agent_server_is_one_agent_unless_agent_paths_say_otherwise():
    from checker.scale.depends import FOUND_FOLDER, one_server

    found = [Dependencies({"agents/weather/w.evalset.json": "eval file"}, ("agents/weather",), FOUND_FOLDER),
             Dependencies({"agents/shop/s.evalset.json": "eval file"}, ("agents/shop",), FOUND_FOLDER),
             Dependencies({"evals/m.evalset.json": "eval file"}, ("services/mapped",), "--agent-paths"),
             Dependencies({"evals/l.evalset.json": "eval file"}, None)]
    served = one_server(found)
    assert [d.agent for d in served] == [("agents/weather", "agents/shop"), ("agents/weather", "agents/shop"),
                                         ("services/mapped",), None]
    keys = ["weather", "shop", "mapped", "loose"]
    assert set(rerun_reasons(keys, served, ["agents/shop/agent.py"])) == {"weather", "shop", "loose"}
    assert set(rerun_reasons(keys, found, ["agents/shop/agent.py"])) == {"shop", "loose"}


def test_git_says_which_files_and_folders_came_and_went(tmp_path):
    from checker.inputs.git_changes import read_changes

    repo = tmp_path / "repo"
    build_monorepo(repo)
    git(repo, "checkout", "-q", "-b", "pr")
    (repo / "agents" / "difflib").mkdir()
    (repo / "agents" / "difflib" / "__init__.py").write_text("")
    (repo / "agents" / "weather" / "agent.py").write_text("# changed\n")
    git(repo, "rm", "-q", "-r", "lib")
    commit(repo, "difflib in, lib out")
    changes = read_changes("main", repo)
    assert changes.files == ["agents/difflib/__init__.py", "agents/weather/agent.py", "lib/common.py"]
    assert changes.added == {"agents/difflib", "agents/difflib/__init__.py"}
    assert changes.removed == {"lib", "lib/common.py"}


def test_with_the_bridge_over_a_folder_of_agents_an_eval_sets_agent_is_the_one_it_runs_on(tree):
    from types import SimpleNamespace

    from checker.agents.adk_command import read_bridge_command
    from checker.inputs.evalfile import CaseOutline
    from checker.scale.depends import dependencies

    def target(path: str, *apps: str | None, set_id: str = "s"):
        outlines = [CaseOutline(f"c{i}", 1, app) for i, app in enumerate(apps)]
        return SimpleNamespace(eval_set_id=set_id, case_ids=[o.eval_id for o in outlines],
                               loaded=SimpleNamespace(path=tree / path, case_outlines=lambda: outlines,
                                                      display_path=path, legacy=False, case_lines={},
                                                      case_ids=[o.eval_id for o in outlines]),
                               config=SimpleNamespace(path=None))

    bridge = read_bridge_command("evalcheck-adk agents")
    assert bridge.agents == ("shop", "weather")
    # The folder the eval file lies in, whatever its cases' app names say.
    found = dependencies(target("agents/weather/w.evalset.json", "shop"), tree, [], bridge)
    assert (found.agent, found.how) == (("agents/weather",), "the agent folder evalcheck-adk runs it on")
    # Else the agents its cases name (without one, its eval set id names it).
    assert dependencies(target("lib/x.evalset.json", "shop", None, set_id="weather"), tree, [],
                        bridge).agent == ("agents/shop", "agents/weather")
    with pytest.raises(InputError, match="eval case 'c0' runs on no agent of agents"):
        dependencies(target("lib/x.evalset.json", "nobody"), tree, [], bridge)
