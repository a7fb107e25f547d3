"""A file as the base branch has it (the quarantine file): read with git from the merge base
of REF and HEAD, never from the work tree, which is the pull request's.

git runs hardened as for --changed-since (inputs/git_changes.py: no hook, fsmonitor, filter
or caller's ``GIT_*`` variable); the blob is read by its object id (``cat-file blob``: no
smudge filter or textconv runs). Called before any of the pull request's code runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from .git_changes import check_repository, check_revision, run_git

MAX_BYTES = 1 << 20  # a settings file; more is not one
REGULAR = ("100644", "100755")


@dataclass(frozen=True)
class BaseFile:
    commit: str  # the merge base it was read at (full SHA)
    path: str  # relative to the repository root, "/"-separated
    data: bytes | None  # None: the merge base has no such file


def file_at_merge_base(ref: str, root: Path, path: str, *, option: str, fix: str,
                       limit: int = MAX_BYTES) -> BaseFile:
    """``path`` as the merge base of ``ref`` and HEAD has it. InputError (naming ``option``,
    with ``fix``) when ``root`` is no git repository, ``ref`` names no commit there, the two
    have no merge base (a shallow checkout), or the path there is not a regular file (of at
    most ``limit`` bytes)."""
    check_revision(ref, option, fix)
    check_repository(root, option, fix)
    for rev in (ref, "HEAD"):  # each checked first: the message names the one missing
        run_git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}",
                missing=f"{option}: {rev!r} names no commit of this repository", option=option, fix=fix)
    base = run_git(root, "merge-base", ref, "HEAD", option=option, fix=fix,
                   missing=f"{option}: {ref!r} and HEAD have no common commit in this checkout"
                   ).decode("ascii", "replace").strip()
    entry = _tree_entry(root, base, path, option=option, fix=fix)
    if entry is None:
        return BaseFile(base, path, None)
    mode, kind, oid = entry
    where = f"{path} at the merge base {base[:12]}"
    if kind != "blob" or mode not in REGULAR:
        what = "a symbolic link" if mode == "120000" else f"a {kind or 'thing'} (mode {mode})"
        raise InputError(f"{where} is {what}, not a file", file=path,
                         fix=f"make {path} a plain file on the base branch")
    size = run_git(root, "cat-file", "-s", oid, option=option, fix=fix).strip()
    if not size.isdigit() or int(size) > limit:
        raise InputError(f"{where} is {size.decode('ascii', 'replace')} bytes, more than the "
                         f"{limit} evalcheck reads", file=path, fix=f"shorten {path}")
    return BaseFile(base, path, run_git(root, "cat-file", "blob", oid, option=option, fix=fix))


def tracked_at_head(root: Path, path: str, *, option: str, fix: str) -> bool:
    """Whether HEAD's tree holds ``path`` (relative to the root): a file of the checkout,
    not one a step of the workflow put beside it. InputError when git cannot tell."""
    check_repository(root, option, fix)
    return _tree_entry(root, "HEAD", path, option=option, fix=fix) is not None


def _tree_entry(root: Path, commit: str, path: str, *, option: str, fix: str) -> tuple[str, str, str] | None:
    """(mode, type, object id) of ``path`` in ``commit``'s tree; None when it has none."""
    listed = run_git(root, "ls-tree", "-z", "--full-tree", commit, "--", path, option=option, fix=fix)
    entry = listed.split(b"\0", 1)[0].decode("utf-8", "replace")
    if not entry:
        return None
    info, _, _ = entry.partition("\t")
    mode, kind, oid = (info.split() + ["", "", ""])[:3]
    return mode, kind, oid
