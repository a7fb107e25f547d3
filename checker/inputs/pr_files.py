"""Files of the repository that the gate reads and the change under test can write: a
baseline file committed to the repository, the replay file.

The checkout is the pull request's (the Action's workspace, or ``--base REF`` on the command
line): a file git tracks there is what the pull request says it is. Compared with the base
commit (the merge base of the base ref and HEAD, read with hardened git, before any of the
pull request's code runs: inputs/git_base.py), it is unchanged, changed or added by the
pull request. A file git does not track was put there by a step of the workflow (restored
by actions/cache, say) and is used as given; so is one outside the repository.

Whatever the path: one reached through a symbolic link in the checkout (a folder or the file
itself, ``..`` after a link included), or through a link or submodule HEAD's tree holds, is
the pull request's file even though git tracks nothing at the path as written (the link is
what it committed): it is compared with the base commit's version like any tracked file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .git_base import LINK, BaseFile, file_at_merge_base, tree_path
from .git_changes import check_repository
from ..errors import InputError
from ..models.results import PullRequestFile
from ..safety.confine import lies_inside

MAX_BASE_BYTES = 256 << 20  # a results file; the automatic baseline's artifact is capped alike
FIX = ("the base commit must be in the checkout: in GitHub Actions check out with fetch-depth: 0 "
       "(actions/checkout); on the command line fetch the --base revision")
REPOSITORY_FIX = ("on a pull request a file of the checkout is the pull request's unless git says it "
                  "is not: check out with git (actions/checkout), or keep the file outside the workspace")


@dataclass(frozen=True)
class RepoFile:
    """A file the gate reads that git tracks in the checkout, against the base commit."""

    path: Path   # as given
    shown: str   # relative to the repository root, "/"-separated
    change: Literal["unchanged", "changed", "added"]  # by the change under test
    base: BaseFile  # its version at the merge base
    via: str | None = None  # the symbolic link (or submodule) the path goes through, if any


def _relative(path: Path, root: Path) -> str | None:
    if not lies_inside(path, root):
        return None
    return Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix()


def bent_in_checkout(path: Path, root: Path, shown: str) -> str | None:
    """The first part of ``path`` under ``root`` that is a symbolic link in the checkout (the
    real path then differs from the written one: a linked folder, a linked file, ``..``
    after a link), or None."""
    real_root = os.path.realpath(root)
    if os.path.realpath(path) == os.path.join(real_root, *shown.split("/")):
        return None
    walked = Path(os.getcwd()) / path.anchor if path.is_absolute() else Path(os.getcwd())
    for part in path.parts[1 if path.is_absolute() else 0:]:
        walked = walked / part  # as written: "sub/.." is where sub leads, then up
        inside = _relative(walked, root)
        if part not in (".", "..") and inside and walked.is_symlink():
            return f"{inside}, a symbolic link in the checkout"
    real = os.path.realpath(path)
    where = _relative(Path(real), Path(real_root))
    return f"a symbolic link: its real path is {where if where is not None else real}"


def tracked_file(path: Path, root: Path, base_ref: str | None, what: str) -> RepoFile | None:
    """``path`` against the merge base of ``base_ref`` and HEAD, with the base commit's
    version; None when there is no base (a push, a plain run) or the file is not the
    checkout's (outside the repository, or not tracked at HEAD, with no link on its way).
    InputError (naming ``what``) when git cannot tell, e.g. the base commit is not in a
    shallow checkout, or when the base commit's path goes through a link."""
    shown = _relative(path, root)
    if base_ref is None or shown is None:
        return None
    option = f"{what} {shown}"
    check_repository(root, option, REPOSITORY_FIX)
    via = bent_in_checkout(path, root, shown)
    head = tree_path(root, "HEAD", shown, option=option, fix=FIX)
    via = via or (f"{head.bent} in HEAD" if head.bent else None)
    if via is None and head.entry is not None and head.entry[0] == LINK:
        via = f"{shown}, a symbolic link in HEAD"
    if head.entry is None and via is None:
        return None
    base = file_at_merge_base(base_ref, root, shown, option=option, fix=FIX, limit=MAX_BASE_BYTES)
    if base.data is None:
        return RepoFile(path, shown, "added", base, via)
    try:
        mine = path.read_bytes()
    except OSError:
        mine = None  # gone or unreadable: reading it later says so
    return RepoFile(path, shown, "unchanged" if mine == base.data else "changed", base, via)


def replay_claim(path: Path | None, root: Path, base_ref: str | None) -> PullRequestFile | None:
    """What to say of a replay file the change under test added or changed: the verdict is
    then of its own recordings, not of a run of its agent. None when it did neither, or when
    there is nothing to compare with (no base, no git repository, a file not in it); when
    the base commit is missing (a shallow checkout), that the recordings may be its own."""
    if path is None or base_ref is None or _relative(path, root) is None:
        return None
    try:
        check_repository(root, "the replay file", REPOSITORY_FIX)
    except InputError:
        return None  # no repository: nothing tells the checkout's files from the workflow's
    shown = _relative(path, root) or str(path)
    try:
        tracked = tracked_file(path, root, base_ref, "the replay file")
    except InputError:
        return PullRequestFile(kind="replay", path=shown, change="unknown",
                               said=f"replay file {shown}: whether this PR changed it is unknown (its "
                                    "base commit is not in the checkout; fetch-depth: 0 tells), so "
                                    "the verdict may be of the PR's own recordings")
    if tracked is None or tracked.change == "unchanged":
        return None
    via = f" (through {tracked.via})" if tracked.via else ""
    return PullRequestFile(kind="replay", path=shown, change=tracked.change,
                           base_commit=tracked.base.commit,
                           said=f"replay file {shown} {tracked.change} by this PR{via}: the verdict "
                                "is the PR's own recordings, not a run of its agent")
