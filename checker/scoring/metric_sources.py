"""A private copy of the custom metrics' sources, made before any of the pull request's code
runs (docs/github-action.md#trust-model).

A custom metric named ``evals.metrics.fn`` is imported from its top-level package or module
(``evals/`` or ``evals.py`` in its origin folder: the nearest one holding it from the eval
file's folder up to the repository root, inputs/metric_origin.py). That package is copied, as it is
before setup-command and the agents run, into a fresh folder that only the checker can
write (readable by the metric worker's user), and so is every other top-level package or
module of the origin folder that the copied code imports (``import helpers``, ``from
shared.text import x``: read from the copied sources, transitively). Each origin folder has
a copy of its own (``copy_folder``), so that two agents' ``eval`` packages never meet; the
worker is told which copy each metric is imported from. The worker imports
from the copy only - the repository root is not on its path - so that what the agent or
setup-command writes into the working directory cannot change the metric that scores it;
a repository module the metric imports some other way (``importlib.import_module`` with a
computed name) is not found, and the metric's error says so. Symlinks are not copied (they
could lead anywhere); caches, version control and virtualenvs are left out; sources larger
than the bounds below are bad input.
"""

from __future__ import annotations

import ast
import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import InputError

if TYPE_CHECKING:
    from ..inputs.discover import EvalTarget

MAX_FILES = 5000
MAX_BYTES = 100 * 1024 * 1024
_LEFT_OUT = {"__pycache__", ".git", "node_modules", ".venv", "venv", ".tox", ".mypy_cache",
             ".pytest_cache"}


def copy_folder(sources: Path, root: Path, origin: Path | None) -> Path:
    """Where the copy of ``origin``'s packages is: ``sources`` itself for the repository
    root, else a subfolder of its own (a name no import can reach, so that two agents'
    ``eval`` packages never meet), the same for the checker and the worker."""
    if origin is None or origin == root:
        return sources
    return sources / ".origins" / hashlib.sha256(os.fsencode(origin)).hexdigest()[:16]


def copy_metric_sources(targets: Iterable[EvalTarget], root: Path) -> Path | None:
    """A private copy of the top-level packages of every custom metric of ``targets`` and
    of the repository's packages they import, one copy per origin folder
    (inputs/metric_origin.py: the repository root, or an agent's folder in a monorepo), each
    read from that folder only; None when there is none. The caller removes the folder when
    scoring is over."""
    by_origin: dict[Path, set[str]] = {}
    for t in targets:
        for m in t.config.metrics:
            path = m.custom_function_path
            if path and "." in path:
                origin = m.custom_function_origin or root
                by_origin.setdefault(origin, set()).add(path.split(".", 1)[0])
    if not by_origin:
        return None
    into = Path(tempfile.mkdtemp(prefix="evalcheck-metrics-"))
    try:
        os.chmod(into, 0o755)  # the worker's user reads it; only the checker writes it
        budget = [MAX_FILES, MAX_BYTES]
        for origin, tops in sorted(by_origin.items()):
            dest = copy_folder(into, root, origin)
            if dest != into:
                for folder in (dest.parent, dest):
                    folder.mkdir(exist_ok=True)
                    os.chmod(folder, 0o755)  # mkdir's mode is masked by the umask
            _copy_origin(origin, dest, sorted(tops), budget)
    except BaseException:
        shutil.rmtree(into, ignore_errors=True)
        raise
    return into


def _copy_origin(origin: Path, into: Path, wanted: list[str], budget: list[int]) -> None:
    """``wanted`` from ``origin`` into ``into``, with the packages of ``origin`` they import."""
    seen: set[str] = set()
    while wanted:
        top = wanted.pop()
        if top in seen or not top.isidentifier():
            continue  # not an identifier: an import of it fails anyway, with its own message
        seen.add(top)
        package, module = origin / top, origin / f"{top}.py"
        if _is(package, stat.S_ISDIR):
            _copy_tree(package, into / top, budget, top)
            copied = into / top
        elif _is(module, stat.S_ISREG):
            _copy_file(module, into / f"{top}.py", budget, top)
            copied = into / f"{top}.py"
        else:
            continue  # installed (site-packages) or missing: not the repository's
        wanted += sorted(imported_tops(copied) - seen)


def imported_tops(copied: Path) -> set[str]:
    """The top-level names of the absolute imports in the .py files under ``copied`` (read
    from the copy, never again from the working directory)."""
    files = [copied] if copied.is_file() else sorted(copied.rglob("*.py"))
    tops: set[str] = set()
    for path in files:
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))
        except (SyntaxError, ValueError):
            continue  # importing it fails with Python's own message
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                tops.update(alias.name.split(".", 1)[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                tops.add(node.module.split(".", 1)[0])
    return tops


def _is(path: Path, kind) -> bool:
    try:
        return kind(path.lstat().st_mode)  # a symlink is neither: not followed
    except OSError:
        return False


def _copy_tree(src: Path, dest: Path, budget: list[int], top: str) -> None:
    dest.mkdir(mode=0o755)
    stack = [(src, dest)]
    while stack:
        here, there = stack.pop()
        for entry in os.scandir(here):
            if entry.name in _LEFT_OUT:
                continue
            if entry.is_dir(follow_symlinks=False):
                (there / entry.name).mkdir(mode=0o755)
                stack.append((Path(entry.path), there / entry.name))
            elif entry.is_file(follow_symlinks=False):
                _copy_file(Path(entry.path), there / entry.name, budget, top)


def _copy_file(src: Path, dest: Path, budget: list[int], top: str) -> None:
    data = _read(src)
    budget[0] -= 1
    budget[1] -= len(data)
    if budget[0] < 0 or budget[1] < 0:
        raise InputError(f"the custom metrics' package '{top}' is larger than {MAX_FILES} files or "
                         f"{MAX_BYTES // (1024 * 1024)} MiB; it is copied before the agent runs",
                         file=str(src), fix="keep custom metrics in a small package of their own")
    dest.write_bytes(data)
    os.chmod(dest, 0o644)


def _read(src: Path) -> bytes:
    fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO swapped in: never block on it
            return b""
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(MAX_BYTES + 1)
    finally:
        os.close(fd)
