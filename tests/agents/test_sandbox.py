"""The Action's agent sandbox (checker/agents/sandbox.py) on this machine, as root, with a uid no
one else uses: hand-over and give-back of the working directory, processes that detach
killed, the judge cache guarded, the environment scrubbed. The container test
(tests/container/test_container_action.py) runs the same through the real image."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from checker.errors import InputError
from checker.agents.sandbox import AgentSandbox, _user_processes, scrub_environ

AGENT_UID = 48159  # no account needed: root may run a process as any uid
OWNER_UID = 48158

pytestmark = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="needs root (the Action's checker runs as root)")


@pytest.fixture
def workspace():
    root = Path(tempfile.mkdtemp(prefix="evalcheck-sandbox-"))
    root.chmod(0o755)
    ws = root / "workspace"
    (ws / ".git").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / "cache" / "ab").mkdir(parents=True)
    (ws / "cache" / "ab" / "entry.json").write_text("{}")
    (ws / "agent.py").write_text("print('hi')\n")
    for path in [ws, *ws.rglob("*")]:
        os.lchown(path, OWNER_UID, OWNER_UID)
    yield ws
    shutil.rmtree(root)


def make(ws: Path) -> AgentSandbox:
    return AgentSandbox(uid=AGENT_UID, gid=AGENT_UID, home="/tmp", workdir=ws, boundary=ws,
                        owner=(OWNER_UID, OWNER_UID), secrets=("tok-123",),
                        outputs=(ws / "evalcheck-report" / "results.json",), protected=(ws / "cache",))


def as_agent(sandbox: AgentSandbox, ws: Path, script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/bin/sh", "-c", script], cwd=ws, capture_output=True, text=True,
                          env=sandbox.environ({"PATH": os.environ["PATH"]}), timeout=30,
                          **sandbox.popen_kwargs())


def test_hand_over_and_give_back(workspace):
    sandbox = make(workspace)
    sandbox.hand_over()
    assert (workspace / "agent.py").stat().st_uid == AGENT_UID
    assert (workspace / ".git" / "config").stat().st_uid == OWNER_UID
    assert (workspace / "cache" / "ab" / "entry.json").stat().st_uid == OWNER_UID
    done = as_agent(sandbox, workspace, "echo made > made.txt && echo more >> agent.py && "
                    "(echo x >> .git/config || echo git-refused) && "
                    "(echo x > cache/ab/entry.json || echo cache-refused) && "
                    "setsid sleep 300 > /dev/null 2>&1 < /dev/null &")
    assert "git-refused" in done.stdout and "cache-refused" in done.stdout, done
    time.sleep(0.2)
    assert [pid for pid, zombie in _user_processes(AGENT_UID) if not zombie], "the detached sleep runs"
    sandbox.end()
    assert [pid for pid, zombie in _user_processes(AGENT_UID) if not zombie] == []
    strays = [p for p in [workspace, *workspace.rglob("*")] if p.lstat().st_uid != OWNER_UID]
    assert strays == []
    assert (workspace / "made.txt").read_text() == "made\n"


def test_a_replaced_judge_cache_is_bad_input(workspace):
    sandbox = make(workspace)
    sandbox.hand_over()
    done = as_agent(sandbox, workspace, "mv cache cache-old && mkdir -p cache/ab && echo forged > cache/ab/entry.json")
    assert done.returncode == 0, done
    with pytest.raises(InputError, match="was replaced while the agent ran"):
        sandbox.end()
    assert (workspace / "cache-old").stat().st_uid == OWNER_UID  # given back all the same


def test_output_symlinks_made_by_the_agent_are_not_followed(workspace, tmp_path):
    sandbox = make(workspace)
    sandbox.hand_over()
    as_agent(sandbox, workspace, "mkdir evalcheck-report && ln -s /etc/passwd evalcheck-report/results.json")
    sandbox.end()
    assert not (workspace / "evalcheck-report" / "results.json").exists()


def test_environment_scrubbed():
    env = {"PATH": "/bin", "GITHUB_OUTPUT": "/o", "GITHUB_ENV": "/e", "GITHUB_PATH": "/p",
           "GITHUB_STATE": "/s", "GITHUB_STEP_SUMMARY": "/x", "GITHUB_TOKEN": "t", "GH_TOKEN": "t",
           "INPUT_GITHUB-TOKEN": "tok-123", "ACTIONS_RUNTIME_TOKEN": "r", "ACTIONS_ID_TOKEN_REQUEST_URL": "u",
           "MY_COPY": "tok-123", "GOOGLE_API_KEY": "k", "GITHUB_SHA": "abc"}
    assert scrub_environ(env, ["tok-123"]) == {"PATH": "/bin", "GOOGLE_API_KEY": "k", "GITHUB_SHA": "abc"}


def test_a_judge_cache_made_by_the_agent_is_bad_input(workspace):
    shutil.rmtree(workspace / "cache")
    sandbox = make(workspace)
    sandbox.hand_over()
    as_agent(sandbox, workspace, "mkdir -p cache/ab && echo forged > cache/ab/entry.json")
    with pytest.raises(InputError, match="was replaced while the agent ran"):
        sandbox.end()


def test_outputs_the_agent_made_into_a_fifo_or_a_hard_link_are_replaced(workspace, tmp_path):
    """A write to a FIFO would hang the checker; one through a hard link would change
    another file: both are removed before evalcheck writes its outputs."""
    precious = tmp_path / "precious.txt"
    precious.write_text("keep")
    sandbox = AgentSandbox(uid=AGENT_UID, gid=AGENT_UID, home="/tmp", workdir=workspace,
                           boundary=workspace, owner=(OWNER_UID, OWNER_UID),
                           outputs=(workspace / "out" / "results.json", workspace / "out" / "report.md"))
    sandbox.hand_over()
    as_agent(sandbox, workspace, "mkdir out && mkfifo out/results.json")
    os.link(precious, workspace / "out" / "report.md")  # as if the agent could
    sandbox.end()
    assert not (workspace / "out" / "results.json").exists()
    assert not (workspace / "out" / "report.md").exists()
    assert precious.read_text() == "keep"


# --- issue 22 -------------------------------------------------------------------------------

TOKEN_HEADER = "AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzX3NlY3JldA=="


def test_git_is_unreadable_to_the_agent_while_it_runs_and_restored_after(workspace):
    """actions/checkout (persist-credentials: true, its default) writes the token into
    .git/config: the agent's user cannot read it, setup-command or agent or custom metric."""
    (workspace / ".git" / "config").write_text(
        '[http "https://github.com/"]\n\textraheader = ' + TOKEN_HEADER + "\n")
    (workspace / ".git").chmod(0o755)
    (workspace / ".git" / "config").chmod(0o644)
    sandbox = make(workspace)
    sandbox.begin(hand_over=False)  # replay mode: nothing handed over, .git locked all the same
    done = as_agent(sandbox, workspace, "cat .git/config; ls .git; git config --list 2>&1; true")
    assert "eC1hY2Nlc3Mt" not in done.stdout + done.stderr, done
    sandbox.close()
    assert stat.S_IMODE((workspace / ".git").stat().st_mode) == 0o755
    assert TOKEN_HEADER in (workspace / ".git" / "config").read_text()


def test_a_git_folder_the_agent_swapped_is_bad_input(workspace):
    sandbox = make(workspace)
    sandbox.begin()
    done = as_agent(sandbox, workspace, "mv .git .git-old && mkdir -p .git/hooks")
    assert done.returncode == 0, done
    with pytest.raises(InputError, match="was replaced while the agent ran"):
        sandbox.end()


def _deep(top: Path, depth: int, uid: int) -> None:
    """``depth`` nested folders under ``top`` (a path far past PATH_MAX), owned by ``uid``."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("dddd", dir_fd=fd)
            os.chown("dddd", uid, uid, dir_fd=fd)
            child = os.open("dddd", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        with open(os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o666, dir_fd=fd), "w") as fh:
            fh.write("x")
        os.chown("leaf.txt", uid, uid, dir_fd=fd)
    finally:
        os.close(fd)


def _owners(top: Path) -> set[int]:
    from checker.safety.tree import walk_tree

    found: set[int] = set()
    assert walk_tree(str(top), lambda fd, name, st: found.add(st.st_uid)) == []
    return found


def test_a_folder_1200_deep_past_path_max_is_given_back(workspace):
    """Issue 22: 1,200 nested folders crashed end() with a RecursionError (os.walk on Python
    3.11), and paths past PATH_MAX stayed the agent's; now every one is given back."""
    sandbox = make(workspace)
    sandbox.hand_over()
    _deep(workspace, 1200, AGENT_UID)
    try:
        sandbox.end()
        assert _owners(workspace) == {OWNER_UID}
        assert sandbox.problems == []
    finally:
        subprocess.run(["rm", "-rf", str(workspace / "dddd")], check=True)


def test_processes_of_the_agents_user_die_even_when_nothing_can_be_spawned(workspace, monkeypatch):
    """Issue 22: under a full pids limit the checker cannot fork; the kill must not need to."""
    sandbox = make(workspace)
    sandbox.hand_over()
    as_agent(sandbox, workspace, "setsid sleep 300 > /dev/null 2>&1 < /dev/null & "
                                 "setsid sh -c 'trap \"\" TERM INT HUP; sleep 300' > /dev/null 2>&1 < /dev/null &")
    time.sleep(0.2)
    assert len([p for p, zombie in _user_processes(AGENT_UID) if not zombie]) >= 2

    def no_more_processes(*args, **kwargs):
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(subprocess, "Popen", no_more_processes)
    monkeypatch.setattr(os, "fork", no_more_processes)
    monkeypatch.setattr(os, "posix_spawn", no_more_processes)
    sandbox.end()
    monkeypatch.undo()
    assert [p for p, zombie in _user_processes(AGENT_UID) if not zombie] == []


def test_a_process_that_survives_fails_the_run_loudly(workspace, monkeypatch):
    from checker.agents import sandbox as sandbox_module

    sandbox = make(workspace)
    sandbox.begin()
    as_agent(sandbox, workspace, "setsid sleep 300 > /dev/null 2>&1 < /dev/null &")
    time.sleep(0.2)
    real_kill = os.kill
    monkeypatch.setattr(os, "kill", lambda pid, sig: None)  # as if SIGKILL did not take
    try:
        with pytest.raises(sandbox_module.SurvivorError, match="survived SIGKILL"):
            sandbox_module.kill_user_processes(AGENT_UID, timeout=0.3)
    finally:
        monkeypatch.setattr(os, "kill", real_kill)
        sandbox_module.kill_user_processes(AGENT_UID)
