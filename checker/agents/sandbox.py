"""In the Action, the agent under test - the pull request's code - runs as another user.

The checker runs as root in the container; ``setup-command``, ``agent-command`` and
``agent-server-command`` run as the image's unprivileged ``evalcheck-agent`` user with an
environment that holds none of the runner's file-command paths, inputs, ``ACTIONS_*``
tokens or the GitHub token. That user owns the agent's environment (``/opt/agent``), its
home and, while the agents run, the working directory; it cannot write evalcheck's
installation, the runner's file-command files, ``.git`` or the judge cache, and cannot read
the checker's memory or ``/proc/<checker>/environ`` (another uid: the kernel refuses).
When the agents are done, every process of that user is killed, the working directory goes
back to the workspace's owner, and output paths the agent bent into symlinks are not
followed. Outside the Action (plain ``evalcheck run``) there is no sandbox: the agent runs
as the caller, with the caller's environment. See docs/github-action.md, "Trust model".
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pwd
import stat
import signal
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..safety.confine import unbend_output
from ..safety.tree import walk_tree
from ..errors import InputError
from .process import proc_files

AGENT_USER = "evalcheck-agent"

# What the agent's environment never holds: where later steps read outputs and
# environment from, the runner's own tokens, the action's inputs (the token among them).
SCRUBBED_NAMES = frozenset({"GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STATE",
                            "GITHUB_STEP_SUMMARY", "GITHUB_TOKEN", "GH_TOKEN"})
SCRUBBED_PREFIXES = ("INPUT_", "ACTIONS_")


def scrub_environ(env: Mapping[str, str], secrets: Iterable[str] = ()) -> dict[str, str]:
    """``env`` without the runner's file commands, inputs, ``ACTIONS_*`` and any variable
    whose value is one of ``secrets`` (the token passed under another name)."""
    values = {s for s in secrets if s}
    return {k: v for k, v in env.items()
            if k not in SCRUBBED_NAMES and not k.startswith(SCRUBBED_PREFIXES) and v not in values}


def make_undumpable() -> None:
    """No core dumps, no ptrace and /proc/<pid>/{environ,mem} readable only by root, even
    for a process of the same uid (defence in depth: the agent already has another uid)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0


@dataclass
class AgentSandbox:
    """Who agents run as in the Action, and the hand-over of the working directory."""

    uid: int
    gid: int
    home: str
    workdir: Path
    boundary: Path          # the workspace: outputs under it never lead out of it
    owner: tuple[int, int]  # the workspace's owner: gets every file back at the end
    secrets: tuple[str, ...] = ()
    outputs: tuple[Path, ...] = ()    # written by the checker after the agents: no symlinks
    protected: tuple[Path, ...] = ()  # read by the checker after the agents: never handed over
    _identity: dict[Path, tuple[int, int] | None] = field(default_factory=dict)
    _git_modes: dict[Path, int] = field(default_factory=dict)
    _problems: list[str] = field(default_factory=list)
    _ended: bool = False

    @classmethod
    def for_action(cls, workdir: Path, workspace: Path | None, *, secrets: Iterable[str] = (),
                   outputs: Iterable[Path | None] = (),
                   protected: Iterable[Path | None] = ()) -> AgentSandbox | None:
        """The sandbox of the Action's container; None where it cannot be had (not root, or
        no ``evalcheck-agent`` user: not evalcheck's image), and agents run as the caller."""
        if not hasattr(os, "geteuid") or os.geteuid() != 0:
            return None
        try:
            user = pwd.getpwnam(AGENT_USER)
        except KeyError:
            return None
        st = (workspace or workdir).stat()
        return cls(uid=user.pw_uid, gid=user.pw_gid, home=user.pw_dir, workdir=workdir.absolute(),
                   boundary=(workspace or workdir).absolute(),
                   owner=(st.st_uid, st.st_gid), secrets=tuple(s for s in secrets if s),
                   outputs=tuple(p.absolute() for p in outputs if p),
                   protected=tuple(p.absolute() for p in protected if p))

    # ------------------------------------------------------------ running agents

    def environ(self, env: Mapping[str, str]) -> dict[str, str]:
        out = scrub_environ(env, self.secrets)
        out.update(HOME=self.home, USER=AGENT_USER, LOGNAME=AGENT_USER)
        return out

    def popen_kwargs(self) -> dict:
        """For subprocess / asyncio.create_subprocess_exec: drop to the agent's uid and gid."""
        return {"user": self.uid, "group": self.gid, "extra_groups": []}

    # ------------------------------------------------------------ the working directory

    def _git_dirs(self) -> list[Path]:
        """The repository folders holding the checkout's credentials: actions/checkout
        (``persist-credentials``, the default) writes the token into ``.git/config``."""
        found = []
        for top in dict.fromkeys([self.boundary, *self._between()]):
            git = top / ".git"
            with contextlib.suppress(OSError):
                if not stat.S_ISLNK(git.lstat().st_mode):
                    found.append(git)
        return found

    def _between(self) -> list[Path]:
        """The working directory and its parents up to the workspace."""
        out, p = [], self.workdir
        while True:
            out.append(p)
            if p == self.boundary or p == p.parent:
                return out
            p = p.parent

    def begin(self, *, hand_over: bool = True) -> None:
        """Before any of the pull request's code runs (setup-command, agents, custom
        metrics): ``.git`` becomes unreadable to everyone but its owner and root (restored
        by ``close()``), and, with ``hand_over``, the working directory is given to the
        agent's user (not ``.git``, not what the checker reads after the agents), so that
        setup-command and the agent can write there."""
        make_undumpable()
        for git in self._git_dirs():
            st = git.lstat()
            self._git_modes[git] = stat.S_IMODE(st.st_mode)
            self._identity[git] = (st.st_dev, st.st_ino)
            os.chmod(git, stat.S_IMODE(st.st_mode) & 0o700)
        for p in self.protected:
            self._identity[p] = _identity(p)
        if not hand_over:
            return

        def give(fd: int | None, name: str, st: os.stat_result) -> None:
            if fd is not None and (name == ".git" or self._is_protected(fd, name)):
                return
            with contextlib.suppress(OSError):
                os.chown(name, self.uid, self.gid, dir_fd=fd, follow_symlinks=False)

        self._problems += walk_tree(str(self.workdir), give, self._not_entered)

    def hand_over(self) -> None:
        self.begin(hand_over=True)

    def _not_entered(self, fd: int, name: str) -> bool:
        return name == ".git" or self._is_protected(fd, name)

    def _is_protected(self, fd: int, name: str) -> bool:
        """Whether ``name`` in the folder open as ``fd`` is one of the protected paths
        (compared by the folder's inode: no path is built, however deep)."""
        if name not in {p.name for p in self.protected}:
            return False
        try:
            here = os.fstat(fd)
        except OSError:
            return False
        for p in self.protected:
            if p.name == name:
                with contextlib.suppress(OSError):
                    parent = p.parent.stat()
                    if (parent.st_dev, parent.st_ino) == (here.st_dev, here.st_ino):
                        return True
        return False

    def end(self) -> None:
        """After the last agent: kill every process of the agent's user, give the working
        directory back to the workspace's owner - with no write permission left for group
        and others, so that the agent's user, which still runs custom metrics, can write
        none of it - and refuse paths the agent bent."""
        if self._ended:
            return
        self._ended = True
        kill_user_processes(self.uid)

        def give_back(fd: int | None, name: str, st: os.stat_result) -> None:
            if st.st_uid != self.uid:
                return
            with contextlib.suppress(OSError):
                os.chown(name, *self.owner, dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISLNK(st.st_mode):  # e.g. a `chmod 777 .` of the agent's
                    os.chmod(name, stat.S_IMODE(st.st_mode) & ~0o022, dir_fd=fd)

        self._problems += walk_tree(str(self.workdir), give_back, lambda fd, name: name == ".git")
        for p, identity in self._identity.items():
            if _identity(p) != identity:  # replaced, removed, or made by the agent
                raise InputError("was replaced while the agent ran (the agent under test may not "
                                 "write it)", file=str(p), fix="the agent must leave this path alone")
        self._clear_outputs()

    def settle(self) -> None:
        """Kill every process of the agent's user and clear the outputs' paths: at the end
        of the agents, and again after scoring, which may have run custom metrics as that
        user (checker/scoring/custom_metric_worker.py) - nothing of theirs outlives it."""
        kill_user_processes(self.uid)
        self._clear_outputs()

    def close(self) -> None:
        """At the very end, whatever happened: nothing of the agent's user lives on, the
        working directory is the owner's again, and ``.git`` has its own mode back."""
        try:
            self.end()
        finally:
            kill_user_processes(self.uid)
            for git, mode in self._git_modes.items():
                with contextlib.suppress(OSError):
                    if _identity(git) == self._identity.get(git):
                        os.chmod(git, mode)
            self._git_modes.clear()

    @property
    def problems(self) -> list[str]:
        """Folders the hand-over or hand-back could not open (reported, never raised)."""
        return list(self._problems)

    def _clear_outputs(self) -> None:
        for out in self.outputs:
            unbend_output(out, self.boundary)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = path.lstat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _user_processes(uid: int) -> list[tuple[int, bool]]:
    """(pid, is_zombie) of every process with ``uid`` as its real, effective, saved or
    filesystem uid."""
    found = []
    for pid, status in proc_files("status"):
        fields = dict(line.split(":", 1) for line in status.decode("ascii", "replace").splitlines()
                      if ":" in line)
        uids = fields.get("Uid", "").split()
        if str(uid) in uids:
            found.append((pid, fields.get("State", "").strip().startswith("Z")))
    return found


class SurvivorError(InputError):
    """A process of the agent's user outlived SIGKILL: the run's outputs cannot be trusted."""


def kill_user_processes(uid: int, timeout: float = 5.0) -> None:
    """SIGKILL every process of ``uid`` - also those that left their process group (setsid,
    double fork) - from this (root) process, pid by pid, until none is left: nothing is
    spawned, so that a full pids limit (the agent's fork bomb) cannot stop it. Zombies of
    ours are reaped. Raises SurvivorError when one is still alive after ``timeout``."""
    if not os.path.isdir("/proc") or uid == os.getuid():
        return
    deadline = time.monotonic() + timeout
    while True:
        alive = []
        for pid, zombie in _user_processes(uid):
            if zombie:  # dead: its files are closed; reap it if it is ours
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)
                continue
            alive.append(pid)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if not alive:
            return
        if time.monotonic() > deadline:
            raise SurvivorError(f"{len(alive)} process(es) of the agent's user (uid {uid}) survived "
                                f"SIGKILL (pid {', '.join(map(str, alive[:5]))}): the run's outputs "
                                "are not trusted", fix="see docs/github-action.md#trust-model")
        time.sleep(0.01)


def unprivileged_sandbox(root: Path) -> AgentSandbox | None:
    """The agent's user for a checker running as root in evalcheck's image without the
    Action's sandbox (``evalcheck run`` in a Kubernetes Job): what custom metrics run as.
    None elsewhere (not root, or not evalcheck's image)."""
    return AgentSandbox.for_action(root, None)
