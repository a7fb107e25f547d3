"""The files a pull request changed: ``git diff --name-only REF...HEAD`` (--changed-since).

The repository is the pull request's code, and git reads settings from it: git runs here with
no hook, no fsmonitor command, no external diff or textconv, no pager and no ``GIT_*``
variable of the caller's (which could point it at another repository), on commits only (a
tree-to-tree diff: no working-tree filter runs). It is called before any of the pull
request's code runs (the Action: before setup-command), so what it reads was not rewritten.
"""

from __future__ import annotations

import os
import subprocess
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


def _git(root: Path, *args: str, missing: str | None = None) -> str:
    try:
        done = subprocess.run(git_command(root, *args), capture_output=True, env=_environ(),
                              timeout=GIT_TIMEOUT, stdin=subprocess.DEVNULL, check=False)
    except FileNotFoundError:
        raise InputError("--changed-since needs git, and git is not installed",
                         fix="install git, or leave --changed-since out to run every eval set") from None
    except subprocess.TimeoutExpired:
        raise InputError(f"git did not answer within {GIT_TIMEOUT:.0f} s", file=str(root)) from None
    if done.returncode != 0 and missing is not None:
        raise InputError(missing, file=str(root), fix=FIX)
    if done.returncode != 0:
        said = " ".join(done.stderr.decode("utf-8", "replace").split())[:300]
        raise InputError(f"git {args[0]} failed: {said or f'exit status {done.returncode}'}",
                         file=str(root), fix=FIX)
    return done.stdout.decode("utf-8", "replace")  # a name that is not UTF-8 matches no agent: all run


def changed_files(ref: str, root: Path) -> list[str]:
    """Paths (relative to the repository root, ``/``-separated) that differ between the merge
    base of ``ref`` and HEAD, and HEAD; a renamed file under both names. InputError when
    ``root`` is no git repository or ``ref`` names no commit there."""
    if not ref or ref.startswith("-") or any(ch.isspace() or ch == "\0" for ch in ref):
        raise InputError(f"--changed-since {ref!r} is not a git revision", fix=FIX)
    if not (root / ".git").exists():
        raise InputError("--changed-since: not a git repository (no .git folder)", file=str(root),
                         fix="run evalcheck in a git checkout of the repository")
    not_repo = "--changed-since: not a git repository git can read"
    top = _git(root, "rev-parse", "--show-toplevel", missing=not_repo).strip()
    if not top or Path(top).resolve() != root.resolve():  # git found another repository above
        raise InputError(not_repo, file=str(root), fix=FIX)
    # Each revision checked first: "unknown revision" names the one that is missing.
    for rev in (ref, "HEAD"):
        _git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}",
             missing=f"--changed-since: {rev!r} names no commit of this repository")
    out = _git(root, "diff", "--name-only", "-z", "--no-renames", "--no-ext-diff",
               "--no-textconv", "--ignore-submodules=none", f"{ref}...HEAD", "--")
    return sorted({p for p in out.split("\0") if p})
