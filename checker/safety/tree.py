"""Walking a folder the agent under test wrote, without recursion and without long paths.

The agent decides the tree's shape: thousands of nested folders (Python 3.11's ``os.walk``
recurses and raises RecursionError past about 1,000 levels), and paths longer than
PATH_MAX (4,096 bytes), which no call taking a whole path can reach. ``walk_tree`` keeps
its own stack and reaches every entry relative to its folder's open descriptor (``openat``
style), never following a symlink, so that it visits everything, however deep. A folder
that cannot be opened is reported back, not raised, so that a hand-back always completes.
"""

from __future__ import annotations

import contextlib
import os
import resource
import stat
from collections.abc import Callable

# visit(dir_fd, name, lstat) for every entry; dir_fd None for the top folder itself
Visit = Callable[[int | None, str, os.stat_result], None]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def _more_descriptors() -> None:
    """One descriptor is open per level of depth: allow as many as the hard limit does."""
    with contextlib.suppress(ValueError, OSError):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard == resource.RLIM_INFINITY or hard > soft:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def walk_tree(top: str, visit: Visit, skip: Callable[[int, str], bool] = lambda fd, name: False
              ) -> list[str]:
    """Visit ``top`` and every entry under it, depth first, symlinks not followed; a folder
    ``name`` in the folder open as ``fd`` for which ``skip(fd, name)`` is true is
    visited itself but not entered. Returns what could not be walked (folders that could not be opened)."""
    problems: list[str] = []
    try:
        top_fd = os.open(top, _DIR_FLAGS)
    except OSError as exc:
        return [f"{top}: {exc.strerror or exc}"]
    visit(None, top, os.fstat(top_fd))
    _more_descriptors()
    # (fd of the folder, names left to visit in it, its depth, its path for messages)
    stack: list[tuple[int, list[str], int, str]] = [(top_fd, _names(top_fd), 1, top)]
    try:
        while stack:
            fd, names, depth, where = stack[-1]
            if not names:
                os.close(fd)
                stack.pop()
                continue
            name = names.pop()
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue  # gone meanwhile
            visit(fd, name, st)
            if not stat.S_ISDIR(st.st_mode) or skip(fd, name):
                continue
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                problems.append(f"{where}/{name}: {exc.strerror or exc}")
                continue
            # a message names the first levels only: the whole path may be megabytes long
            stack.append((child, _names(child), depth + 1,
                          f"{where}/{name}" if len(where) < 200 else where))
    finally:
        for fd, *_ in stack:
            with contextlib.suppress(OSError):
                os.close(fd)
    return problems


def _names(fd: int) -> list[str]:
    try:
        return os.listdir(fd)
    except OSError:
        return []
