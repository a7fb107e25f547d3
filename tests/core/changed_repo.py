"""A git repository of two ADK-style agents for the --changed-since tests (tests/core and the
Action's, tests/github): agents/weather and agents/shop, each with ``agent.py`` (a stdio
agent that logs every turn it answers), its eval set and test_config.json; lib/common.py,
which both import; a workflow file. shop's case 'bye' fails unless the environment's
BYE_ANSWER gives the expected answer (a flaky agent)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from corehelpers import case, evalset, invocation, write_json

AGENT = '''\
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib"))
import common
NAME = os.path.basename(os.path.dirname(os.path.abspath(__file__)))
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] != "user":
        continue
    with open(os.environ["AGENT_LOG"], "a") as log:
        log.write(f"{NAME} {os.environ['EVALCHECK_EVAL_ID']} {os.environ['EVALCHECK_RUN']}\\n")
    said = msg["content"]["parts"][0]["text"]
    # A flaky agent: the answer to "bye" comes from the environment when it is set.
    answer = os.environ.get("BYE_ANSWER") or common.greet() if said == "bye" else common.greet()
    print(json.dumps({"type": "response", "invocationId": msg["invocationId"],
                      "finalResponse": answer}), flush=True)
'''
CRITERIA = {"criteria": {"response_match_score": 0.8}}
# One command for both agents: each eval set's id names its agent's folder.
COMMAND = f"{shlex.quote(sys.executable)} agents/$EVALCHECK_EVAL_SET_ID/agent.py"
SETS = {"weather": [case("hi", invocation("hi", "Hello there!"))],
        "shop": [case("hello", invocation("hi", "Hello there!")),
                 case("bye", invocation("bye", "Goodbye, see you soon."))]}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def build_monorepo(repo: Path) -> str:
    """The repository at ``repo``, committed on main; returns main's commit."""
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "t")
    (repo / "lib").mkdir()
    (repo / "lib" / "common.py").write_text('def greet():\n    return "Hello there!"\n')
    for name, cases in SETS.items():
        folder = repo / "agents" / name
        folder.mkdir(parents=True)
        (folder / "agent.py").write_text(AGENT)
        write_json(folder / f"{name}.evalset.json", evalset(name, *cases))
        write_json(folder / "test_config.json", CRITERIA)
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "workflows" / "eval.yml").write_text("on: pull_request\n")
    return commit(repo, "main")


def ran(log: Path) -> set[str]:
    """The agents that answered since the last call, by their own log (which is then cleared)."""
    names = {line.split()[0] for line in log.read_text().splitlines()} if log.exists() else set()
    log.unlink(missing_ok=True)
    return names
