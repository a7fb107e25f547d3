"""Where a custom metric is imported from: the folder holding its top-level package or module.

ADK users run ``adk eval`` from the agent's folder, so a monorepo's
``python/agents/x/eval/test_config.json`` names ``eval.custom_metrics.fn`` for
``python/agents/x/eval/custom_metrics.py``. The top-level name of the dotted path (``eval``)
is looked up from the eval file's folder upward to the repository root: the nearest folder
holding ``eval/`` or ``eval.py`` (not a symlink: the private copy does not follow them) is
the metric's origin, else the repository root. Two agents may both name
``eval.custom_metrics.fn``: each eval set gets the one of its own folder
(scoring/metric_sources.py copies each origin apart). Read before any of the pull request's
code runs, like the copy made from it."""

from __future__ import annotations

import dataclasses
import stat
from collections.abc import Sequence
from pathlib import Path

from .criteria import EvalConfig


def metric_origin(top: str, folders: Sequence[Path], root: Path) -> Path:
    """The first of ``folders`` (the eval file's folder, then each parent up to the root)
    holding ``top/`` or ``top.py``; the root when none does."""
    if top.isidentifier():
        for folder in folders:
            if _is(folder / top, stat.S_ISDIR) or _is(folder / f"{top}.py", stat.S_ISREG):
                return folder
    return root


def bind_origins(config: EvalConfig, folders: Sequence[Path], root: Path) -> EvalConfig:
    """``config`` with each custom metric's origin for an eval file in ``folders[0]``; the
    same object when every origin is the root (criteria files are shared between folders)."""
    metrics = []
    for m in config.metrics:
        path = m.custom_function_path
        if m.metric is None and path and "." in path and m.custom_function_source is None:
            origin = metric_origin(path.split(".", 1)[0], folders, root)
            if origin != root:
                m = dataclasses.replace(m, custom_function_origin=origin)
        metrics.append(m)
    if all(a is b for a, b in zip(metrics, config.metrics, strict=False)):
        return config
    return dataclasses.replace(config, metrics=tuple(metrics))


def _is(path: Path, kind) -> bool:
    try:
        return kind(path.lstat().st_mode)  # a symlink is neither: not followed
    except OSError:
        return False
