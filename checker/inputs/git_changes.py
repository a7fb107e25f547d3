"""The files a pull request changed: ``git diff --name-only REF...HEAD`` (--changed-since).

The repository is the pull request's code, and git reads settings from it: git runs here with
no hook, no fsmonitor command, no external diff or textconv, no pager and no ``GIT_*``
variable of the caller's (which could point it at another repository), on commits only (a
tree-to-tree diff: no working-tree filter runs). It is called before any of the pull
request's code runs (the Action: before setup-command), so what it reads was not rewritten.
"""

from __future__ import annotations

import os
import re
import subprocess
from typing import Any
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

GIT_TIMEOUT = 60.0  # seconds: a diff of commits is fast; a hung git is not the run's to wait for
FIX = ("give a commit the repository has: a branch (origin/main), a tag or a SHA; in GitHub "
       "Actions, check out with fetch-depth: 0 (docs/changed-files.md)")


def git_command(root: Path, *args: str) -> list[str]:
    """git with the repository's own settings that run commands overridden."""
    return ["git", "-C", str(root), "--no-pager",
            "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
            "-c", f"safe.directory={root}", "-c", "diff.external=", "-c", "core.pager=cat",
            "-c", "core.quotePath=false", *args]


def _environ() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    return env


def run_git(root: Path, *args: str, missing: str | None = None, option: str = "--changed-since",
            fix: str = FIX, without: str = "leave --changed-since out to run every eval set",
            given: bytes | None = None) -> bytes:
    """git's output; InputError naming ``option`` when git is missing, hangs or fails
    (``missing``: the message when it fails, e.g. a revision that names no commit).
    ``given``: git's standard input (else none)."""
    stdin: dict[str, Any] = {"input": given} if given is not None else {"stdin": subprocess.DEVNULL}
    try:
        done = subprocess.run(git_command(root, *args), capture_output=True, env=_environ(),
                              timeout=GIT_TIMEOUT, check=False, **stdin)
    except FileNotFoundError:
        raise InputError(f"{option} needs git, and git is not installed",
                         fix=f"install git, or {without}") from None
    except subprocess.TimeoutExpired:
        raise InputError(f"git did not answer within {GIT_TIMEOUT:.0f} s", file=str(root)) from None
    if done.returncode != 0 and missing is not None:
        raise InputError(missing, file=str(root), fix=fix)
    if done.returncode != 0:
        said = " ".join(done.stderr.decode("utf-8", "replace").split())[:300]
        raise InputError(f"git {args[0]} failed: {said or f'exit status {done.returncode}'}",
                         file=str(root), fix=fix)
    return done.stdout


def _git(root: Path, *args: str, missing: str | None = None) -> str:
    # a name that is not UTF-8 matches no agent: all run
    return run_git(root, *args, missing=missing).decode("utf-8", "replace")


def check_revision(ref: str, option: str, fix: str = FIX) -> None:
    """A revision git reads as one, never as an option (``--output=...``) or several words."""
    if not ref or ref.startswith("-") or any(ch.isspace() or ch == "\0" for ch in ref):
        raise InputError(f"{option} {ref!r} is not a git revision", fix=fix)


def check_repository(root: Path, option: str, fix: str = FIX) -> None:
    """``root`` is the top of a git repository git can read (not a folder inside another)."""
    if not (root / ".git").exists():
        raise InputError(f"{option}: not a git repository (no .git folder)", file=str(root),
                         fix=fix if fix != FIX else "run evalcheck in a git checkout of the repository")
    not_repo = f"{option}: not a git repository git can read"
    top = run_git(root, "rev-parse", "--show-toplevel", missing=not_repo, option=option,
                  fix=fix).decode("utf-8", "replace").strip()
    if not top or Path(top).resolve() != root.resolve():  # git found another repository above
        raise InputError(not_repo, file=str(root), fix=fix)


def changed_files(ref: str, root: Path) -> list[str]:
    """Paths (relative to the repository root, ``/``-separated) that differ between the merge
    base of ``ref`` and HEAD, and HEAD; a renamed file under both names. InputError when
    ``root`` is no git repository or ``ref`` names no commit there."""
    check_revision(ref, "--changed-since")
    check_repository(root, "--changed-since")
    # Each revision checked first: "unknown revision" names the one that is missing.
    for rev in (ref, "HEAD"):
        _git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}",
             missing=f"--changed-since: {rev!r} names no commit of this repository")
    out = _git(root, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff",
               "--no-textconv", "--ignore-submodules=none", f"{ref}...HEAD", "--")
    return sorted({p for p in out.split("\0") if p})


@dataclass(frozen=True)
class Changes:
    """What a pull request changed since the merge base: the files, and which files and
    folders along their paths exist on one side only. A folder or module that comes or goes
    beside an agent's folder can shadow what the agent imports (scale/depends.py)."""

    files: list[str]
    added: frozenset[str] = frozenset()  # exist at HEAD only
    removed: frozenset[str] = frozenset()  # exist at the merge base only


def _prefixes(path: str) -> list[str]:
    """``a/b/c.py`` -> ``a``, ``a/b``, ``a/b/c.py``."""
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]


_FOUND = re.compile(rb"^[0-9a-f]{40,64} [a-z]+ [0-9]+$")


def _existing(root: Path, commit: str, paths: list[str]) -> set[str]:
    """Which of ``paths`` (no newline in them) name a file or folder in ``commit``: one
    ``git cat-file --batch-check`` for all, an answer a line, in order."""
    if not paths:
        return set()
    out = run_git(root, "cat-file", "--batch-check",
                  given="".join(f"{commit}:{p}\n" for p in paths).encode("utf-8"))
    answers = out.splitlines()
    if len(answers) != len(paths):
        raise InputError(f"git cat-file answered {len(answers)} lines for {len(paths)} paths",
                         file=str(root), fix=FIX)
    return {p for p, line in zip(paths, answers, strict=False) if _FOUND.match(line)}


def read_changes(ref: str, root: Path) -> Changes:
    """The files changed since the merge base of ``ref`` and HEAD (``changed_files``), and
    the files and folders along their paths that were added or removed."""
    files = changed_files(ref, root)
    base = _git(root, "merge-base", ref, "HEAD").strip()
    entries = sorted({e for f in files for e in _prefixes(f)})
    # A path git cannot be asked about on one line is taken as added: it re-runs more, not less.
    odd = {e for e in entries if "\n" in e}
    asked = [e for e in entries if e not in odd]
    at_base, at_head = _existing(root, base, asked), _existing(root, "HEAD", asked) | odd
    return Changes(files, frozenset(at_head - at_base), frozenset(at_base - at_head))


def tracked_files(root: Path, folder: Path) -> list[str]:
    """The files under ``folder`` that git tracks in ``root``'s index (``/``-separated,
    relative to the root). InputError when git cannot tell."""
    relative = Path(os.path.abspath(folder)).relative_to(os.path.abspath(root)).as_posix()
    check_repository(root, "the judge cache")
    out = run_git(root, "--literal-pathspecs", "ls-files", "-z", "--", relative or ".",
                  option="the judge cache")
    return sorted(p for p in out.decode("utf-8", "replace").split("\0") if p)
