"""Finding eval files, their case filters and their criteria (CONTRACT section 2)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..safety.confine import confined
from .criteria import DEFAULT_CRITERIA, EvalConfig, default_config, load_config
from ..errors import InputError
from ..models.setkey import ambiguous_ids, set_key
from .agents_cli import dataset_config
from .evalfile import LoadedEvalSet, load_eval_file
from .metric_origin import bind_origins

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
    # The file's cases a case filter (`file:a,b`) left out: not this run's, never "removed".
    unselected: list[str] = field(default_factory=list)
    # What runs, results and baselines index this eval set by: its id, or its id and path
    # when another selected file has the same id (checker/models/setkey.py).
    key: str = ""

    def __post_init__(self) -> None:
        self.key = self.key or self.eval_set_id

    @property
    def eval_set_id(self) -> str:
        return self.loaded.eval_set.eval_set_id

    @property
    def path(self) -> str | None:
        """The eval file as written in results and recorded runs when its id needs it."""
        return self.loaded.display_path if self.key != self.eval_set_id else None


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
    given when it lies outside. Its path as written (not where a symbolic link leads): the
    name the pull request's claims give it (inputs/pr_files.py)."""
    import os

    root = find_repo_root(Path.cwd())
    try:
        return Path(os.path.abspath(path)).relative_to(root).as_posix()
    except ValueError:
        return display_path(Path(path), root)


def _migrated_twice(targets: list[EvalTarget], ambiguous: set[str]) -> list[str]:
    """A legacy file and an eval set of the same id in one folder: both are evaluated (told
    apart by path), but it is likely `evalcheck migrate` (or ADK's) output beside its source."""
    notes = []
    for set_id in sorted(ambiguous):
        paths = [t.loaded.display_path for t in targets if t.eval_set_id == set_id]
        legacy = [p for p in paths if p.endswith(".test.json")]
        new = [p for p in paths if not p.endswith(".test.json")]
        for old in legacy:
            twin = next((p for p in new if Path(p).parent == Path(old).parent), None)
            if twin is not None:
                notes.append(f"{old} and {twin} share the eval set id '{set_id}': both are "
                             f"evaluated; if {twin} was migrated from {old}, delete {old}")
    return notes


def _skip_dir(path: Path) -> bool:
    name = path.name
    if name in SKIP_DIRS or name.endswith(".egg-info"):
        return True
    try:
        return os.path.lexists(path / "pyvenv.cfg")
    except OSError:
        return False  # unreadable: os.walk reports it


def is_eval_file(path: Path) -> bool:
    """ADK's eval files by name; an agents-cli dataset by place (checker/inputs/agents_cli.py)."""
    return path.name.endswith(EVAL_SUFFIXES) or dataset_config(path) is not None


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


@dataclass(frozen=True)
class _Reading:
    """What every eval file of one ``discover`` is read with."""

    root: Path
    shared_config: EvalConfig | None  # --config: the criteria of every eval file
    initial_session: Path | None
    confine: Path | None
    outline_only: bool
    thresholds: dict[str, float]
    # The criteria files read so far, by path (Path() for the defaults): each is read once.
    configs: dict[Path, EvalConfig] = field(default_factory=dict)


@dataclass(frozen=True)
class _FileRead:
    """One eval file read: its target, or None (an empty eval set, or ``problem``), and what
    the user should know of it (said even when a later step found a problem)."""

    target: EvalTarget | None
    notes: list[str] = field(default_factory=list)
    empty: str | None = None  # the file shown, when its eval set has no cases
    # The misnamed criteria files beside it, when no criteria file applies (ADK's defaults).
    defaulted: tuple[tuple[str, str], ...] | None = None
    problem: InputError | None = None


def _target(path: Path, ids: list[str] | None, reading: _Reading) -> _FileRead:
    """One eval file with its cases and criteria."""
    agents_cli = dataset_config(path)
    if agents_cli is not None:  # its eval_config.yaml is its criteria, whatever --config says
        return _FileRead(_agents_cli_target(path, agents_cli, ids, reading))
    loaded = load_eval_file(path, display_path(path, reading.root), reading.initial_session,
                            confine=reading.confine, outline_only=reading.outline_only)
    notes = list(loaded.notes)
    if reading.initial_session is not None and not loaded.legacy:
        notes.append(f"{loaded.display_path}: --initial-session not used: an EvalSet file "
                     "gives each case its initial session in session_input")
    if not loaded.case_ids and ids is None:
        return _FileRead(None, notes, empty=loaded.display_path)  # an empty eval set: noted, nothing to run
    try:
        chosen = _chosen_cases(loaded, ids)
        config, defaulted = _criteria_of(path, reading)
    except InputError as exc:
        return _FileRead(None, notes, problem=exc)
    target = EvalTarget(loaded, bind_origins(config, _folders_up(path, reading.root), reading.root), chosen,
                        unselected=[i for i in loaded.case_ids if i not in set(chosen)])
    return _FileRead(target, notes, defaulted=defaulted)


def _chosen_cases(loaded: LoadedEvalSet, ids: list[str] | None) -> list[str]:
    """The cases of a case filter (``file:a,b``) in file order, all without one; a case the
    file lacks is bad input."""
    all_ids = loaded.case_ids
    if ids is None:
        return all_ids
    unknown = [i for i in ids if i not in all_ids]
    if unknown:
        raise InputError(f"no eval case '{unknown[0]}' in this file", file=loaded.display_path,
                         path="$.eval_cases", fix=("known cases: " + ", ".join(all_ids)) if all_ids
                         else "the eval set has no eval cases")
    return [i for i in all_ids if i in ids]


def _criteria_of(path: Path, reading: _Reading) -> tuple[EvalConfig, tuple[tuple[str, str], ...] | None]:
    """An eval file's criteria: --config's, its criteria file's, or ADK's defaults - then with
    the misnamed criteria files beside it (shown, meant)."""
    root, configs = reading.root, reading.configs
    if reading.shared_config is not None:
        return reading.shared_config, None
    config_path = find_config(path, root)
    if config_path is None:
        alike = tuple((display_path(p, root), meant) for p, meant in config_lookalikes(path, root))
        return configs.setdefault(Path(), default_config()), alike
    if config_path not in configs:
        confined(config_path, reading.confine, f"this {config_path.name}")
        configs[config_path] = load_config(config_path, display_path(config_path, root))
    return configs[config_path], None


def _agents_cli_target(path: Path, config_path: Path, ids: list[str] | None, reading: _Reading) -> EvalTarget:
    from .agents_cli import check_references, load_agents_cli_config, load_dataset

    root, configs, confine = reading.root, reading.configs, reading.confine
    display = display_path(path, root)
    eval_set, lines = load_dataset(path, display)
    loaded = LoadedEvalSet(eval_set, path, display, lines)
    unknown = [i for i in ids or [] if i not in loaded.case_ids]
    if unknown:
        raise InputError(f"no eval case '{unknown[0]}' in this file", file=display, path="$.eval_cases",
                         fix="known cases: " + ", ".join(loaded.case_ids))
    if config_path not in configs:
        confined(config_path, confine, f"this {config_path.name}")
        configs[config_path] = load_agents_cli_config(config_path, display_path(config_path, root),
                                                      reading.thresholds, confine)
    check_references(eval_set, configs[config_path], display, lines)
    chosen = [i for i in loaded.case_ids if ids is None or i in ids]
    return EvalTarget(loaded, configs[config_path], chosen,
                      unselected=[i for i in loaded.case_ids if i not in set(chosen)])


def unused_thresholds(thresholds: dict[str, float], targets: list[EvalTarget]) -> None:
    """--threshold naming no metric of a selected agents-cli dataset is bad input."""
    named = {m.name for t in targets if dataset_config(t.loaded.path) is not None for m in t.config.metrics}
    for name in thresholds:
        if name not in named:
            raise InputError(f"--threshold {name}: no metric of that name in the agents-cli "
                             "datasets selected" + (f" (their metrics: {', '.join(sorted(named))})"
                                                     if named else " (none was selected)"),
                             fix="--threshold is for metrics of agents-cli's eval_config.yaml; "
                                 "ADK's test_config.json has its own thresholds")


@dataclass(frozen=True)
class Discovery:
    """What ``discover`` found: the eval files to run, what the user should know but is no
    error (an empty eval set skipped, a session dump's ignored keys), and the eval files that
    could not be read (with ``keep_going``: the others still run)."""

    targets: list[EvalTarget]
    notes: list[str] = field(default_factory=list)
    problems: list[InputError] = field(default_factory=list)


def discover(args: list[str], *, root: Path, config_file: Path | None = None,
             initial_session: Path | None = None, confine: Path | None = None,
             outline_only: bool = False, keep_going: bool = False,
             thresholds: dict[str, float] | None = None) -> Discovery:
    """The eval files under ``args`` with their cases and criteria. ``initial_session`` is
    the initial session of every legacy file. With ``confine`` (the Action's workspace), a
    file under it that is a symlink leading out of it is bad input, not followed.
    ``outline_only``: see load_eval_file (a shard loads its own cases once it knows them).

    With ``keep_going``, an eval file that cannot be read (or whose criteria file cannot) is
    one of the ``problems`` and the others are still returned: one bad file does not hide the
    rest (the run reports it and exits 2 at the end). Without it, the first problem is raised."""
    selected = select_eval_files(args, confine)
    shared_config = load_config(confined(config_file, confine, "the config file")) if config_file else None
    reading = _Reading(root, shared_config, initial_session, confine, outline_only, thresholds or {})
    found = Discovery([])
    legacy_files = 0
    empty: list[str] = []
    defaulted: dict[tuple[tuple[str, str], ...], list[str]] = {}  # lookalikes -> eval files
    for path, ids in selected.items():
        try:
            read = _target(path, ids, reading)
        except InputError as exc:
            read = _FileRead(None, problem=exc)
        found.notes.extend(n for n in read.notes if n not in found.notes)
        if read.problem is not None:
            if not keep_going:
                raise read.problem
            found.problems.append(read.problem)
            continue
        if read.empty is not None:
            empty.append(read.empty)
        if read.target is None:
            continue
        if read.defaulted is not None:
            defaulted.setdefault(read.defaulted, []).append(read.target.loaded.display_path)
        legacy_files += read.target.loaded.legacy
        found.targets.append(read.target)
    _key_targets(found)
    for alike, displayed in defaulted.items():
        found.notes.append(default_criteria_note(displayed, list(alike)))
    _check_something_runs(found.targets, args, initial_session, legacy_files, empty, thresholds)
    return found


def select_eval_files(args: list[str], confine: Path | None) -> dict[Path, list[str] | None]:
    """The eval files ``args`` name (files, folders, ``file:case,case`` filters), each once by
    its resolved path, with the cases chosen (None: all of them)."""
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
    return selected


def _key_targets(found: Discovery) -> None:
    """Key the targets (a monorepo: two agents' eval sets may share an id); no eval file
    read at all is bad input."""
    targets, problems = found.targets, found.problems
    ambiguous = ambiguous_ids((t.eval_set_id, t.loaded.display_path) for t in targets)
    for target in targets:
        target.key = set_key(target.eval_set_id, target.loaded.display_path, ambiguous)
    found.notes.extend(_migrated_twice(targets, ambiguous))
    if problems and not targets:
        if len(problems) == 1:
            raise problems[0]
        raise InputError(f"none of the {len(problems)} eval files could be read: "
                         + "; ".join(str(p) for p in problems[:10]))


def _check_something_runs(targets: list[EvalTarget], args: list[str], initial_session: Path | None,
                          legacy_files: int, empty: list[str], thresholds: dict[str, float] | None) -> None:
    """Options that apply to none of the files found, and nothing to run, are bad input."""
    if initial_session is not None and not legacy_files:
        raise InputError("--initial-session is for legacy eval files (.test.json query lists), "
                         "and none was selected", file=str(initial_session),
                         fix="an EvalSet file gives each case's initial session in its "
                             "session_input")
    if thresholds:
        unused_thresholds(thresholds, targets)
    if not targets and len(empty) == 1:
        raise InputError("the eval set has no eval cases: nothing to run", file=empty[0],
                         path="$.eval_cases", fix="add at least one eval case")
    if not targets:
        raise InputError(f"no eval cases to run: all {len(empty)} eval sets found are empty",
                         file=", ".join(args or ["."]), fix="add eval cases to the eval sets")
