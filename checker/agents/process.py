"""Agent processes: one process group each, bounded output capture, a kill that leaves nothing.

Every agent (or agent server) runs as ``/bin/sh -c CMD`` leading a new process group, so
its pid is also its process-group id and everything it starts stays in that group unless
it calls setsid/setpgid itself. Killing the group (SIGTERM, then SIGKILL after a grace period) is how we
make sure no child outlives its run.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import sys
import time
import warnings
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

READ_CHUNK = 1 << 16


class RunsAs(Protocol):
    """Who a process runs as (agents.sandbox.AgentSandbox in the Action's container)."""

    def environ(self, env: Mapping[str, str]) -> dict[str, str]: ...

    def popen_kwargs(self) -> dict[str, Any]: ...


CUT_MARK = "\u2026".encode()


class OutputTail:
    """The last lines of a stream, bounded in memory however much the process writes."""

    def __init__(self, max_lines: int = 20, max_bytes: int = 2048):
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self._lines: deque[str] = deque(maxlen=max_lines)
        self._partial = bytearray()

    def feed(self, data: bytes) -> None:
        self._partial += data
        *complete, rest = self._partial.split(b"\n")
        for line in complete[-self.max_lines:]:
            self._add(bytes(line))
        # An unterminated line is kept only up to the byte budget (its start marked cut).
        if len(rest) > self.max_bytes:
            rest = bytearray(CUT_MARK + rest[-(self.max_bytes - len(CUT_MARK)):])
        self._partial = bytearray(rest)

    def add_line(self, text: str) -> None:
        self._lines.append(text if len(text) <= self.max_bytes else "\u2026" + text[-(self.max_bytes - 1):])

    def _add(self, line: bytes) -> None:
        if len(line) > self.max_bytes:
            line = CUT_MARK + line[-(self.max_bytes - len(CUT_MARK)):]
        self._lines.append(line.decode("utf-8", "replace").rstrip("\r"))

    def text(self) -> str | None:
        """The tail; where it was cut, ``…`` marks the cut (a secret cut through there is
        still found by the redactor, checker/safety/redact.py)."""
        lines = list(self._lines)
        if self._partial:
            lines.append(self._partial.decode("utf-8", "replace"))
        lines = [line for line in lines if line.strip()][-self.max_lines:]
        out = "\n".join(lines)
        if len(out.encode()) > self.max_bytes:
            out = "\u2026" + out.encode()[-(self.max_bytes - len(CUT_MARK)):].decode("utf-8", "ignore")
        return out or None


async def read_lines(stream: asyncio.StreamReader, max_line: int,
                     on_line: Callable[[bytes], Awaitable[None]],
                     on_overlong: Callable[[bytes], Awaitable[None]]) -> None:
    """Split a stream into lines without ever holding more than ``max_line`` bytes of one.

    A longer line is reported once with its first bytes, and the rest of it is skipped.
    """
    buf = bytearray()
    skipping = False
    while chunk := await stream.read(READ_CHUNK):
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                if not skipping:
                    buf += chunk[start:]
                    if len(buf) > max_line:
                        head = bytes(buf[:200])
                        buf.clear()
                        skipping = True
                        await on_overlong(head)
                break
            if skipping:
                skipping = False
            else:
                buf += chunk[start:nl]
                await on_line(bytes(buf))
            buf.clear()
            start = nl + 1
    if buf and not skipping:
        await on_line(bytes(buf))


async def spawn(command: str, *, cwd: Path | None, env: Mapping[str, str],
                stdin: bool = True, merge_stderr: bool = False,
                sandbox: RunsAs | None = None) -> asyncio.subprocess.Process:
    """Start ``/bin/sh -c command`` as the leader of a new process group.

    With a ``sandbox`` (the Action's container), as the sandbox's unprivileged user with a
    scrubbed environment; without (plain ``evalcheck run``), as the caller with ``env``.
    """
    extra: dict = {}
    if sandbox is not None:
        env = sandbox.environ(env)
        extra = sandbox.popen_kwargs()
    return await asyncio.create_subprocess_exec(
        "/bin/sh", "-c", command,
        stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT if merge_stderr else asyncio.subprocess.PIPE,
        # A group of its own, as start_new_session would give, but setpgid lets Python
        # start the child with vfork: several times cheaper than fork for a big checker.
        # Not the terminal's foreground group either, so Ctrl-C reaches only the checker.
        cwd=str(cwd) if cwd else None, env=dict(env), process_group=0,
        limit=READ_CHUNK * 4, **extra)


def proc_files(name: str) -> Iterator[tuple[int, bytes]]:
    """(pid, content of /proc/<pid>/``name``) of every process still there to be read."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/{name}", "rb") as f:
                yield int(entry.name), f.read()
        except OSError:
            continue


def _group_processes(pgid: int) -> list[tuple[int, bytes, int]]:
    """(pid, state, ppid) of every process of group ``pgid``, read from /proc."""
    members = []
    for pid, stat in proc_files("stat"):
        # Fields after the parenthesised command: state ppid pgrp ...
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 2 and int(fields[2]) == pgid:
            members.append((pid, fields[0], int(fields[1])))
    return members


def _group_exists(pgid: int) -> bool:
    """Whether any process (zombies included) is in the group: one cheap syscall, which
    spares the /proc scan in the common case of an agent that left nothing behind."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def live_group_members(pgid: int) -> list[int]:
    """Pids of the processes of group ``pgid`` that are alive (zombies excluded)."""
    if not _group_exists(pgid):
        return []
    if not os.path.isdir("/proc"):  # not Linux: someone in the group answers a signal
        return [pgid]
    return [pid for pid, state, _ in _group_processes(pgid) if state not in (b"Z", b"X")]


@contextlib.contextmanager
def pidfd_child_watcher() -> Iterator[None]:
    """On Python 3.11, have the running loop learn of child exits through pidfds, as 3.12
    does by default, instead of a thread blocked in waitpid per child (a thread start per
    agent run; about a third of the checker's CPU per run at concurrency 16). Nested in
    another on the same loop, it leaves the outer one in place: a watcher closed while a
    child it watches still runs never learns of its exit (``proc.wait()`` waits forever)."""
    if sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
        yield
        return
    try:  # the kernel or a container's seccomp profile may refuse pidfds
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        policy = asyncio.get_event_loop_policy()
        previous = policy._watcher  # type: ignore[attr-defined]  # None until first used
        nested = isinstance(previous, asyncio.PidfdChildWatcher) and \
            previous._loop is asyncio.get_running_loop()  # type: ignore[attr-defined]
    if nested:  # the outer one watches this loop until every child it knows of exited
        yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        watcher = asyncio.PidfdChildWatcher()
        watcher.attach_loop(asyncio.get_running_loop())
        policy.set_child_watcher(watcher)
    try:
        yield
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            policy._watcher = previous  # type: ignore[attr-defined]
            watcher.close()


def become_subreaper() -> None:
    """Have orphaned agent children re-parented to us rather than to PID 1, so that we
    can reap them: a container's PID 1 is often not an init and would leave zombies."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


async def reap_orphans(pgid: int, leader: int, timeout: float = 1.0) -> None:
    """Reap the exited processes of the group that were re-parented to us. Only those:
    the event loop's child watcher waits for the leader itself.

    A dead process's zombie children reach us only once their parent's exit completes,
    which may be just after we look: so look again until only the leader is left.
    """
    if not os.path.isdir("/proc"):
        return
    me = os.getpid()
    deadline = time.monotonic() + timeout
    delay = 0.001
    while _group_exists(pgid):
        others = [(pid, state, ppid) for pid, state, ppid in _group_processes(pgid) if pid != leader]
        if not others:
            return
        for pid, state, ppid in others:
            if state == b"Z" and ppid == me:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, os.WNOHANG)
        if time.monotonic() >= deadline:
            return
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def kill_now(pgid: int) -> None:
    """SIGKILL whatever of group ``pgid`` is still alive, at once (a close cut short)."""
    if live_group_members(pgid):
        _signal_group(pgid, signal.SIGKILL)


async def _wait_group_gone(pgid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    delay = 0.002
    while live_group_members(pgid):
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)
    return True


async def kill_group(pgid: int, grace: float = 2.0) -> None:
    """SIGTERM the whole group, then SIGKILL whatever is still alive after ``grace``
    seconds, then reap the group's orphans. ``pgid`` is also the leader's pid."""
    if live_group_members(pgid):
        _signal_group(pgid, signal.SIGTERM)
        if not await _wait_group_gone(pgid, grace):
            _signal_group(pgid, signal.SIGKILL)
            await _wait_group_gone(pgid, 5.0)
    await reap_orphans(pgid, leader=pgid)


async def wait_exit(proc: asyncio.subprocess.Process) -> int:
    """The exit status of ``proc``, as soon as it exits.

    Not ``proc.wait()``: on newer Pythons that also waits for the pipes to close, which a
    background child holding stdout would delay forever.
    """
    if proc.returncode is None and hasattr(os, "pidfd_open"):
        # A pidfd becomes readable when the process exits, without reaping it (the
        # event loop's child watcher does that and sets returncode).
        try:
            fd = os.pidfd_open(proc.pid)
        except OSError:
            fd = -1
        if fd >= 0:
            loop = asyncio.get_running_loop()
            exited = loop.create_future()

            def note_exit() -> None:
                if not exited.done():
                    exited.set_result(None)

            loop.add_reader(fd, note_exit)
            try:
                if proc.returncode is None:
                    await exited
                    # Read the status without reaping (WNOWAIT): no wait for the watcher.
                    info = os.waitid(os.P_PIDFD, fd, os.WEXITED | os.WNOWAIT)
                    if info is not None and proc.returncode is None:
                        exited_normally = info.si_code == os.CLD_EXITED
                        return info.si_status if exited_normally else -info.si_status
            except (OSError, AttributeError):
                pass  # already reaped by the watcher, or no P_PIDFD: returncode follows
            finally:
                loop.remove_reader(fd)
                os.close(fd)
    delay = 0.0005
    while proc.returncode is None:
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.02)
    return proc.returncode


def _exited(pid: int) -> bool:
    """Whether our child ``pid`` has exited, without reaping it (the event loop's child
    watcher does that)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True
    except (OSError, AttributeError):  # no waitid here
        return False


async def reap(proc: asyncio.subprocess.Process, timeout: float = 5.0) -> None:
    """Make sure the direct child is reaped and its pipes are closed."""
    with contextlib.suppress(ProcessLookupError):
        # Not kill() on an exited child: Popen.send_signal() polls first, which reaps it
        # behind the child watcher's back ("exit status already read" on stderr).
        if proc.returncode is None and not _exited(proc.pid):
            proc.kill()
    with contextlib.suppress(asyncio.TimeoutError, ProcessLookupError):
        await asyncio.wait_for(wait_exit(proc), timeout)
    transport = getattr(proc, "_transport", None)
    if transport is not None:  # close pipes still held open by an escaped grandchild
        transport.close()


def describe_status(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"
