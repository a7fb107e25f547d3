"""Finding eval files, their case filters and their criteria (CONTRACT section 2)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..safety.confine import confined
from .criteria import DEFAULT_CRITERIA, EvalConfig, default_config, load_config
from ..errors import InputError
from .evalfile import LoadedEvalSet, load_eval_file

EVAL_SUFFIXES = (".evalset.json", "_evalset.json", ".test.json")
CONFIG_NAMES = ("test_config.json", "eval_config.json")
SKIP_DIRS = {".git", "node_modules", ".venv", "venv", "env", ".env", "__pycache__", "build",
             "dist", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
             "site-packages", ".eggs", "target", "out", ".adk"}


@dataclass
class EvalTarget:
    loaded: LoadedEvalSet
    config: EvalConfig
    case_ids: list[str]  # the cases to run, in file order

    @property
    def eval_set_id(self) -> str:
        return self.loaded.eval_set.eval_set_id


def find_repo_root(start: Path) -> Path:
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def display_path(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def report_path(path: Path | str) -> str:
    """A file named in a report (a baseline): relative to the repository root, as eval files
    are (in the Action, the workspace: never the container's /github/workspace/...), or as
    given when it lies outside."""
    return display_path(Path(path), find_repo_root(Path.cwd()))


def _duplicate_fix(one: str, other: str) -> str:
    fix = "give every eval set a unique id (a legacy file takes its file name)"
    legacy = [p for p in (one, other) if p.endswith(".test.json")]
    if len(legacy) == 1 and any(p.endswith(".evalset.json") for p in (one, other)):
        # `evalcheck migrate` (and ADK's) writes the new file beside the old one.
        fix = (f"if the .evalset.json was migrated from {legacy[0]}, delete {legacy[0]}; "
               f"else {fix}")
    return fix


def _skip_dir(path: Path) -> bool:
    name = path.name
    if name in SKIP_DIRS or name.endswith(".egg-info"):
        return True
    try:
        return os.path.lexists(path / "pyvenv.cfg")
    except OSError:
        return False  # unreadable: os.walk reports it


def is_eval_file(path: Path) -> bool:
    return path.name.endswith(EVAL_SUFFIXES)


def walk_eval_files(folder: Path) -> list[Path]:
    """Eval files under ``folder``, in a stable order; symlinked folders are not entered.
    A folder that cannot be read is bad input, not a silent gap in the gate."""
    if folder.resolve() == Path(folder.resolve().anchor):
        raise InputError("refusing to search the whole file system for eval files", file=str(folder),
                         fix="pass your repository, or the folder that holds the eval files")

    def unreadable(exc: OSError) -> None:
        raise InputError(f"cannot read this folder: {exc.strerror or exc}", file=exc.filename or str(folder),
                         fix="make it readable, or pass only the folders that hold eval files")

    found: list[Path] = []
    for current, dirs, files in os.walk(folder, onerror=unreadable):
        base = Path(current)
        dirs[:] = sorted(d for d in dirs if not _skip_dir(base / d))
        found.extend(base / f for f in sorted(files) if is_eval_file(base / f))
    return found


def split_selector(arg: str) -> tuple[str, list[str] | None]:
    """``path/x.evalset.json:case_a,case_b`` -> (path, [ids]); a plain path -> (path, None)."""
    if ":" in arg and not Path(arg).exists():
        head, _, tail = arg.partition(":")
        if len(head) == 1 and tail.startswith(("\\", "/")):  # a Windows drive letter
            return arg, None
        ids = [i.strip() for i in tail.split(":")[0].split(",") if i.strip()]
        return head, ids
    return arg, None


def find_config(eval_file: Path, root: Path) -> Path | None:
    """The criteria file of an eval file: in its folder, then each parent up to the
    repository root, the first ``test_config.json`` (ADK's name) or ``eval_config.json``
    (agent-starter-pack's ``tests/eval/eval_config.json``, which it passes to ``adk eval
    --config_file_path``); in one folder, ``test_config.json`` first."""
    for folder in _folders_up(eval_file, root):
        for name in CONFIG_NAMES:
            candidate = folder / name
            if candidate.is_file():
                return candidate
    return None


def _folders_up(eval_file: Path, root: Path) -> list[Path]:
    folder = eval_file.resolve().parent
    out = [folder]
    while folder != root and root in folder.parents:
        folder = folder.parent
        out.append(folder)
    return out


def _squash(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


_LOOKALIKES = {_squash(n): n for n in CONFIG_NAMES}


def config_lookalikes(eval_file: Path, root: Path) -> list[tuple[Path, str]]:
    """Files on the way up that look like a misnamed criteria file (``test-config.json``,
    ``testconfig.json``, ``Test_Config.json``): (file, the name it should have)."""
    found = []
    for folder in _folders_up(eval_file, root):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            meant = _LOOKALIKES.get(_squash(name))
            if meant and name != meant and (folder / name).is_file():
                found.append((folder / name, meant))
    return found


def default_criteria_note(eval_displays: list[str], lookalikes: list[tuple[str, str]]) -> str:
    """What a user reads when no criteria file applies: what was assumed, and a file that
    looks like a misnamed criteria file."""
    criteria = ", ".join(f"{k} {float(v)!r}" for k, v in DEFAULT_CRITERIA.items())
    files = ", ".join(eval_displays[:3])
    if len(eval_displays) > 3:
        files += f" and {len(eval_displays) - 3} more"
    note = f"no test_config.json beside {files}: ADK's default criteria ({criteria})"
    for shown, meant in lookalikes:
        note += f"; {shown} is not read: did you mean {meant}?"
    return note


def discover(args: list[str], *, root: Path, config_file: Path | None = None,
             initial_session: Path | None = None,
             notes: list[str] | None = None, confine: Path | None = None,
             outline_only: bool = False) -> list[EvalTarget]:
    """The eval files under ``args`` with their cases and criteria. ``initial_session`` is
    the initial session of every legacy file; what the user should know but is no error (an
    empty eval set skipped, a session dump's ignored keys) is appended to ``notes``. With
    ``confine`` (the Action's workspace), a file under it that is a symlink leading out of
    it is bad input, not followed. ``outline_only``: see load_eval_file (a shard loads its
    own cases once it knows them)."""
    notes = notes if notes is not None else []
    selected: dict[Path, list[str] | None] = {}
    for arg in args or ["."]:
        raw, ids = split_selector(arg)
        path = Path(raw)
        try:
            exists, is_file = path.exists(), path.is_file()
        except OSError as exc:  # a folder on the way that may not be entered
            raise InputError(f"cannot read this path: {exc.strerror or exc}", file=raw) from None
        if not exists:
            raise InputError("path not found", file=raw, fix="pass an eval file or a folder")
        files = [path] if is_file else walk_eval_files(path)
        if is_file and not is_eval_file(path) and not raw.endswith(".json"):
            raise InputError("not an eval file", file=raw,
                             fix="eval files end in .evalset.json, _evalset.json or .test.json")
        if ids is not None and path.is_dir():
            raise InputError("a case filter needs a file, not a folder", file=arg)
        for f in files:
            confined(f, confine, "this eval file")
            key = f.resolve()
            if key in selected and selected[key] is not None and ids is not None:
                selected[key] = list(dict.fromkeys((selected[key] or []) + ids))
            elif key in selected and (ids is None or selected[key] is None):
                selected[key] = None
            else:
                selected[key] = ids
    if not selected:
        shown = ", ".join(args or ["."])
        raise InputError("no eval files found", file=shown,
                         fix="eval files end in .evalset.json, _evalset.json or .test.json")

    shared_config = load_config(confined(config_file, confine, "the config file")) if config_file else None
    configs: dict[Path, EvalConfig] = {}
    targets: list[EvalTarget] = []
    seen_ids: dict[str, str] = {}
    legacy_files = 0
    empty: list[str] = []
    defaulted: dict[tuple[tuple[str, str], ...], list[str]] = {}  # lookalikes -> eval files
    for path, ids in selected.items():
        loaded = load_eval_file(path, display_path(path, root), initial_session, confine=confine,
                                outline_only=outline_only)
        notes.extend(n for n in loaded.notes if n not in notes)
        legacy_files += loaded.legacy
        if initial_session is not None and not loaded.legacy:
            notes.append(f"{loaded.display_path}: --initial-session not used: an EvalSet file "
                         "gives each case its initial session in session_input")
        if not loaded.case_ids and ids is None:
            empty.append(loaded.display_path)
            continue  # an empty eval set: noted, nothing to run
        set_id = loaded.eval_set.eval_set_id
        if set_id in seen_ids:
            raise InputError(f"eval_set_id '{set_id}' is also used by {seen_ids[set_id]}",
                             file=loaded.display_path, path="$.eval_set_id",
                             fix=_duplicate_fix(loaded.display_path, seen_ids[set_id]))
        seen_ids[set_id] = loaded.display_path
        all_ids = loaded.case_ids
        if ids is not None:
            unknown = [i for i in ids if i not in all_ids]
            if unknown:
                raise InputError(f"no eval case '{unknown[0]}' in this file", file=loaded.display_path,
                                 path="$.eval_cases", fix=("known cases: " + ", ".join(all_ids)) if all_ids
                                 else "the eval set has no eval cases")
            chosen = [i for i in all_ids if i in ids]
        else:
            chosen = all_ids
        if shared_config is not None:
            config = shared_config
        else:
            config_path = find_config(path, root)
            if config_path is None:
                config = configs.setdefault(Path(), default_config())
                alike = tuple((display_path(p, root), meant) for p, meant in config_lookalikes(path, root))
                defaulted.setdefault(alike, []).append(loaded.display_path)
            else:
                if config_path not in configs:
                    confined(config_path, confine, f"this {config_path.name}")
                    configs[config_path] = load_config(config_path, display_path(config_path, root))
                config = configs[config_path]
        targets.append(EvalTarget(loaded, config, chosen))
    for alike, shown in defaulted.items():
        notes.append(default_criteria_note(shown, list(alike)))
    if initial_session is not None and not legacy_files:
        raise InputError("--initial-session is for legacy eval files (.test.json query lists), "
                         "and none was selected", file=str(initial_session),
                         fix="an EvalSet file gives each case's initial session in its "
                             "session_input")
    if not targets and len(empty) == 1:
        raise InputError("the eval set has no eval cases: nothing to run", file=empty[0],
                         path="$.eval_cases", fix="add at least one eval case")
    if not targets:
        raise InputError(f"no eval cases to run: all {len(empty)} eval sets found are empty",
                         file=", ".join(args or ["."]), fix="add eval cases to the eval sets")
    return targets
