"""A file as the base branch has it: read with git from a commit's tree, never from the work
tree, which is the pull request's. The quarantine file is read at the base commit itself
(the tip of the base branch: an entry main removed never comes back); a baseline or replay
file is compared at the merge base of the base ref and HEAD (what the change under test did
to it: inputs/pr_files.py).

git runs hardened as for --changed-since (inputs/git_changes.py: no hook, fsmonitor, filter
or caller's ``GIT_*`` variable); the blob is read by its object id (``cat-file blob``: no
smudge filter or textconv runs). A path is resolved against the commit's tree one folder at
a time: a symbolic link (or a submodule) on the way is never followed. Called before any of
the pull request's code runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from .git_changes import check_repository, check_revision, run_git

MAX_BYTES = 1 << 20  # a settings file; more is not one
REGULAR = ("100644", "100755")
LINK, GITLINK = "120000", "160000"


@dataclass(frozen=True)
class BaseFile:
    commit: str  # the commit it was read at (full SHA)
    path: str  # relative to the repository root, "/"-separated
    data: bytes | None  # None: that commit has no such file


@dataclass(frozen=True)
class TreePath:
    """What a commit's tree has at a path, folder by folder."""

    entry: tuple[str, str, str] | None  # (mode, type, object id) of the path itself; None: none
    bent: str | None = None  # the first folder on the way that is a symbolic link, a submodule
    # or a file: the path's content is then whatever that leads to, not a file of the tree


def _verified(root: Path, rev: str, option: str, fix: str) -> None:
    run_git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}",
            missing=f"{option}: {rev!r} names no commit of this repository", option=option, fix=fix)


def file_at_merge_base(ref: str, root: Path, path: str, *, option: str, fix: str,
                       limit: int = MAX_BYTES) -> BaseFile:
    """``path`` as the merge base of ``ref`` and HEAD has it. InputError (naming ``option``,
    with ``fix``) when ``root`` is no git repository, ``ref`` names no commit there, the two
    have no merge base (a shallow checkout), or the path there is not a regular file (of at
    most ``limit`` bytes) reached through folders."""
    check_revision(ref, option, fix)
    check_repository(root, option, fix)
    for rev in (ref, "HEAD"):  # each checked first: the message names the one missing
        _verified(root, rev, option, fix)
    base = run_git(root, "merge-base", ref, "HEAD", option=option, fix=fix,
                   missing=f"{option}: {ref!r} and HEAD have no common commit in this checkout"
                   ).decode("ascii", "replace").strip()
    return _read(root, base, path, f"the merge base {base[:12]}", option=option, fix=fix, limit=limit)


def file_at_commit(ref: str, root: Path, path: str, *, option: str, fix: str,
                   limit: int = MAX_BYTES) -> BaseFile:
    """``path`` as the commit ``ref`` names has it (the base branch's tip, not the fork
    point the pull request chose). InputError as for ``file_at_merge_base``."""
    check_revision(ref, option, fix)
    check_repository(root, option, fix)
    _verified(root, ref, option, fix)
    commit = run_git(root, "rev-parse", "--verify", "--end-of-options", f"{ref}^{{commit}}",
                     option=option, fix=fix).decode("ascii", "replace").strip()
    return _read(root, commit, path, commit[:12], option=option, fix=fix, limit=limit)


def _read(root: Path, commit: str, path: str, at: str, *, option: str, fix: str, limit: int) -> BaseFile:
    found = tree_path(root, commit, path, option=option, fix=fix)
    where = f"{path} at {at}"
    if found.bent is not None:
        raise InputError(f"{where} is reached through {found.bent}, not a folder", file=path,
                         fix=f"make each folder of {path} a plain folder on the base branch")
    if found.entry is None:
        return BaseFile(commit, path, None)
    mode, kind, oid = found.entry
    if kind != "blob" or mode not in REGULAR:
        what = "a symbolic link" if mode == LINK else f"a {kind or 'thing'} (mode {mode})"
        raise InputError(f"{where} is {what}, not a file", file=path,
                         fix=f"make {path} a plain file on the base branch")
    size = run_git(root, "cat-file", "-s", oid, option=option, fix=fix).strip()
    if not size.isdigit() or int(size) > limit:
        raise InputError(f"{where} is {size.decode('ascii', 'replace')} bytes, more than the "
                         f"{limit} evalcheck reads", file=path, fix=f"shorten {path}")
    return BaseFile(commit, path, run_git(root, "cat-file", "blob", oid, option=option, fix=fix))


def tree_path(root: Path, commit: str, path: str, *, option: str, fix: str) -> TreePath:
    """``path`` (relative to the root, "/"-separated) in ``commit``'s tree, each of its
    folders looked at: one ``ls-tree`` naming every prefix lists the deepest entry of each
    that exists (a folder on the way is descended, not listed; a link or file there is)."""
    parts = [p for p in path.split("/") if p]
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    listed = run_git(root, "ls-tree", "-z", "--full-tree", commit, "--", *prefixes, option=option, fix=fix)
    entries: dict[str, tuple[str, str, str]] = {}
    for line in listed.split(b"\0"):
        info, tab, name = line.decode("utf-8", "replace").partition("\t")
        if tab:
            mode, kind, oid = (info.split() + ["", "", ""])[:3]
            entries[name] = (mode, kind, oid)
    for prefix in prefixes[:-1]:
        entry = entries.get(prefix)
        if entry is None:
            continue  # a folder (descended) or nothing (then neither is the path)
        mode, kind, _ = entry
        if kind != "tree":
            what = ("a symbolic link" if mode == LINK else "a submodule" if mode == GITLINK
                    else f"a {kind or 'thing'} (mode {mode})")
            return TreePath(None, bent=f"{prefix}, {what}")
    return TreePath(entries.get(prefixes[-1]) if prefixes else None)
