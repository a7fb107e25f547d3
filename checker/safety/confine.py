"""In the Action, files under the workspace are the pull request's: a symlink there must not
lead evalcheck (running as root) to read or write outside the workspace.

A path the workflow names outside the workspace (an absolute path) is the workflow
author's choice and is used as given; a path inside the workspace that resolves outside it
- a symlink the pull request committed, or one the agent made - is not followed, and a path
an eval or config file names (``custom_function_file: /any/path``) is the pull request's
choice: outside the workspace it is refused, however it is spelt. Plain ``evalcheck run``
passes no boundary (``--confine DIR`` gives one) and follows paths like any command-line tool.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..errors import InputError


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def lies_inside(path: Path, root: Path) -> bool:
    """Whether ``path`` is in ``root``, as spelt or once symlinks are resolved."""
    return (_inside(os.path.abspath(path), os.path.abspath(root))
            or _inside(os.path.realpath(path), os.path.realpath(root)))


def confined(path: Path, root: Path | None, what: str = "this path", *,
             named_in: str | None = None) -> Path:
    """``path``, or an InputError when it lies in ``root`` but resolves outside it. With
    ``named_in`` (the file that names it: the pull request's), a path outside ``root`` is
    an InputError too."""
    if root is None:
        return path
    lexical, boundary = os.path.abspath(path), os.path.abspath(root)
    if not _inside(lexical, boundary) and named_in is not None:
        raise InputError(f"{what} ({lexical}) lies outside the workspace: a file that eval and "
                         "config files name is read only inside it in the Action (and with "
                         "--confine)", file=named_in,
                         fix=f"keep the file in the repository, named relative to {named_in}")
    if not _inside(lexical, boundary):
        return path
    real = os.path.realpath(lexical)
    if not _inside(real, os.path.realpath(boundary)):
        raise InputError(f"{what} is a symlink to {real}, outside the workspace: not followed "
                         "in the Action", file=str(path),
                         fix="keep the file in the repository instead of linking to it")
    return path


def unbend_output(path: Path, root: Path) -> None:
    """Before evalcheck writes an output under ``root``: whatever is in its place that a
    write would go through or hang on - a symlink, a hard link to another file, a FIFO or
    socket - is removed (a fresh file is written), and a folder on its way that leads
    outside is an error."""
    if not _inside(os.path.abspath(path), os.path.abspath(root)):
        return
    try:
        st = path.lstat()
    except OSError:
        st = None
    if st is not None and (stat.S_ISLNK(st.st_mode) or stat.S_ISFIFO(st.st_mode)
                           or stat.S_ISSOCK(st.st_mode)
                           or (stat.S_ISREG(st.st_mode) and st.st_nlink > 1)):
        path.unlink()
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    confined(parent, root, "the folder of this output")


CACHE_IN_CHECKOUT = ("is inside the workspace, where the change under test can commit cache "
                     "entries: their answers would be taken as the judge's verdicts")


def check_judge_cache_outside(cache: Path | None, workspace: Path | None, name: str, fix: str) -> None:
    """A judge cache inside the checkout of an untrusted change (the Action's workspace,
    --confine's folder) is bad input: an entry it committed, keyed as the checker computes
    keys, would be a "cache hit" for its own answers (checker/judges/cache.py)."""
    if cache is not None and workspace is not None and lies_inside(cache, workspace):
        raise InputError(f"{name}: {cache} {CACHE_IN_CHECKOUT}", fix=fix)
