"""The Action's files, handed back to the steps after it, which run on the runner's host as its
user: paths in the outputs relative to the workspace, and what was written as root owned by
the workspace's owner (the judge cache: its folder's)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def relative_to_workspace(path: Path, workspace: Path | None) -> str:
    """Paths in outputs are for later steps, which run on the host: workspace-relative."""
    if workspace is not None:
        try:
            return str(path.resolve().relative_to(workspace.resolve()))
        except ValueError:
            pass
    return str(path)


def give_back(paths: list[Path], workspace: Path | None) -> None:
    """Files written as root into the workspace would be read-only for later steps (runner
    issue #1282): hand them to the workspace's owner."""
    if workspace is None or os.geteuid() != 0:
        return
    try:
        st = workspace.stat()
    except OSError:
        return
    for path in paths:
        for p in [path, *path.parents]:
            try:
                p.relative_to(workspace)
            except ValueError:
                break
            if p == workspace or not p.exists():
                continue
            try:
                os.chown(p, st.st_uid, st.st_gid)
            except OSError:
                pass


def give_cache_back(cache: Path | None) -> None:
    """The judge cache lives outside the workspace, under the runner's home, which
    actions/cache saves as the runner's user after this step: what was written there as
    root (readable by root alone) goes to the owner of the folder holding the cache."""
    if cache is None or os.geteuid() != 0:
        return
    from ..safety.tree import walk_tree

    try:
        owner = cache.parent.stat()
    except OSError:
        return

    def give(fd: int | None, name: str, st: os.stat_result) -> None:
        if st.st_uid == 0 and owner.st_uid != 0:
            with contextlib.suppress(OSError):
                os.chown(name, owner.st_uid, owner.st_gid, dir_fd=fd, follow_symlinks=False)

    if cache.is_dir():
        walk_tree(str(cache), give)
