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
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..safety.confine import unbend_output
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
    _identity: dict[Path, tuple[int, int]] = field(default_factory=dict)
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

    def _skipped(self, path: Path) -> bool:
        return path.name == ".git" or any(path == p for p in self.protected)

    def hand_over(self) -> None:
        """Give the working directory to the agent's user (not ``.git``, not what the checker
        reads after the agents), so that setup-command and the agent can write there."""
        make_undumpable()
        for p in self.protected:
            self._identity[p] = _identity(p)
        for path in _walk(self.workdir, self._skipped):
            with contextlib.suppress(OSError):
                os.chown(path, self.uid, self.gid, follow_symlinks=False)

    def end(self) -> None:
        """After the last agent: kill every process of the agent's user, give the working
        directory back to the workspace's owner - with no write permission left for group
        and others, so that the agent's user, which still runs custom metrics, can write
        none of it - and refuse paths the agent bent."""
        if self._ended:
            return
        self._ended = True
        kill_user_processes(self.uid, self.popen_kwargs())
        for path in _walk(self.workdir, lambda p: p.name == ".git"):
            with contextlib.suppress(OSError):
                st = os.lstat(path)
                if st.st_uid == self.uid:
                    os.chown(path, *self.owner, follow_symlinks=False)
                    if not stat.S_ISLNK(st.st_mode):  # e.g. a `chmod 777 .` of the agent's
                        os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o022)
        for p, identity in self._identity.items():
            if _identity(p) != identity:  # replaced, removed, or made by the agent
                raise InputError("was replaced while the agent ran (the agent under test may not "
                                 "write it)", file=str(p), fix="the agent must leave this path alone")
        self._clear_outputs()

    def settle(self) -> None:
        """Kill every process of the agent's user and clear the outputs' paths: at the end
        of the agents, and again after scoring, which may have run custom metrics as that
        user (checker/scoring/custom_metric_worker.py) - nothing of theirs outlives it."""
        kill_user_processes(self.uid, self.popen_kwargs())
        self._clear_outputs()

    def _clear_outputs(self) -> None:
        for out in self.outputs:
            unbend_output(out, self.boundary)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = path.lstat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _walk(top: Path, skip) -> Iterable[str]:
    """``top`` and everything under it, symlinks not followed, ``skip``ped folders left out."""
    yield str(top)
    for current, dirs, files in os.walk(top, followlinks=False):
        base = Path(current)
        dirs[:] = [d for d in dirs if not skip(base / d)]
        for name in (*dirs, *files):
            if not skip(base / name):
                yield str(base / name)


def _user_processes(uid: int) -> list[tuple[int, bool]]:
    """(pid, is_zombie) of every process whose real uid is ``uid``."""
    found = []
    for pid, status in proc_files("status"):
        fields = dict(line.split(":", 1) for line in status.decode("ascii", "replace").splitlines()
                      if ":" in line)
        uids = fields.get("Uid", "").split()
        if uids and int(uids[0]) == uid:
            found.append((pid, fields.get("State", "").strip().startswith("Z")))
    return found


def kill_user_processes(uid: int, as_user: dict, timeout: float = 5.0) -> None:
    """SIGKILL every process of ``uid`` - also those that left their process group (setsid,
    double fork) - with kill(-1) as that user, until none is left; reap our zombies."""
    if not os.path.isdir("/proc"):
        return
    deadline = time.monotonic() + timeout
    while True:
        # kill -9 -1 as the agent's user: every process it may signal, i.e. its own. At
        # least once: a process may hide from /proc scans, not from kill(-1).
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(["/bin/sh", "-c", "kill -9 -1"], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=5,
                           check=False, **as_user)
        time.sleep(0.05)
        left = _user_processes(uid)
        for pid, zombie in left:
            if zombie:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)
        if not [pid for pid, zombie in left if not zombie] or time.monotonic() > deadline:
            return
