"""What an eval set depends on, for --changed-since (docs/changed-files.md): its eval file, its
criteria file and its agent's files.

An eval set's agent is, in this order:
1. the paths an ``--agent-paths EVALS=PATH[,PATH...]`` mapping gives eval files under EVALS;
2. when the agent command is ``evalcheck-adk [...] DIR``, the agent the bridge runs it on:
   DIR when it is one agent folder, else the agent folder of DIR its eval file lies in or its
   cases' app name names (checker/agents/adk_command.py);
3. the ADK agent folder the eval file lies in: the nearest folder above it, below the
   repository root, that holds ``agent.py`` or ``root_agent.yaml`` (where ``adk eval`` and
   ``adk web`` expect an agent's eval sets);
4. not known: then any change but another eval set's own eval or criteria file re-runs it.

With ``--agent-url`` one server runs every agent in one process: the eval sets whose agent
was found by its folder (3.) depend on all those folders. Carrying assumes agents are
isolated, so what can change what an agent imports re-runs it: an environment file re-runs
every eval set, and a file or folder added or removed beside an agent's folder re-runs
every agent in that folder (``rerun_reasons``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..agents.adk_command import BridgeFolder, read_bridge_command
from ..errors import InputError

if TYPE_CHECKING:
    from ..inputs.discover import EvalTarget

AGENT_MARKERS = ("agent.py", "root_agent.yaml")  # what ADK's AgentLoader loads a folder by
FOUND_FOLDER = "the ADK agent folder it lies in"
SERVED = "every agent folder the server at --agent-url serves (one process)"


@dataclass(frozen=True)
class AgentMapping:
    """One ``--agent-paths`` entry: eval files at or under ``evals`` have their agent in ``paths``
    (all relative to the repository root, ``/``-separated)."""

    evals: str
    paths: tuple[str, ...]


@dataclass
class Dependencies:
    """The files one eval set depends on (relative to the repository root)."""

    own: dict[str, str] = field(default_factory=dict)  # path -> "eval file" / "criteria file"
    agent: tuple[str, ...] | None = None  # files or folders; None: not known
    how: str = ""  # how the agent was found, for the report


def _relative(path: Path, root: Path) -> str | None:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def under(path: str, prefix: str) -> bool:
    """``path`` is ``prefix`` or lies in the folder ``prefix`` ("" is the whole repository)."""
    return prefix in ("", ".") or path == prefix or path.startswith(prefix.rstrip("/") + "/")


def parse_agent_paths(values: Sequence[str], root: Path, source: str = "--agent-paths") -> list[AgentMapping]:
    """``EVALS=PATH[,PATH...]`` entries (relative to the working directory), each path an
    existing file or folder in the repository; anything else is bad input."""
    mappings = []
    fix = "e.g. --agent-paths evals/weather=services/weather,lib/weather_tools.py"
    for value in values:
        evals, sep, paths = value.partition("=")
        named = [p.strip() for p in paths.split(",") if p.strip()]
        if not sep or not evals.strip() or not named:
            raise InputError(f"{source} {value!r} is not EVALS=PATH[,PATH...]", fix=fix)
        found = []
        for raw in (evals.strip(), *named):
            path = Path(raw)
            relative = _relative(path, root)
            if relative is None:
                raise InputError(f"{source} {value!r}: {raw} lies outside the repository ({root})",
                                 fix="name files and folders of the repository")
            if not path.exists():
                raise InputError(f"{source} {value!r}: {raw} not found (paths are relative to the "
                                 "working directory)", fix=fix)
            found.append("" if relative == "." else relative)
        mappings.append(AgentMapping(found[0], tuple(found[1:])))
    return mappings


def bridge_folder(command: str | None, root: Path) -> str | None:
    """The folder an ``evalcheck-adk [--one-session | --concurrent N] DIR`` command (or
    ``python -m evalcheck_adk_bridge DIR``) loads, relative to the repository root; None for
    any other command, or one the shell would expand or chain."""
    bridge = read_bridge_command(command)
    return None if bridge is None else _in_repository(bridge.path, root)


def _in_repository(path: Path, root: Path) -> str | None:
    found = _relative(path, root)
    return None if found is None else ("" if found == "." else found)


def bridge_agent_folders(bridge: BridgeFolder, target: EvalTarget, root: Path) -> tuple[str, ...] | None:
    """The folders of the agents the bridge runs the target on (relative to the repository
    root): DIR when it is one agent, else the agents of DIR the target's cases run on."""
    found = [_in_repository(bridge.path / name if name else bridge.path, root)
             for name in bridge.agents_of(target)]
    return None if None in found else tuple(f for f in found if f is not None)


def agent_folder(eval_file: Path, root: Path) -> str | None:
    """The nearest folder at or above the eval file's, below the repository root, that ADK
    would load as an agent (``agent.py``, ``root_agent.yaml``)."""
    root = root.resolve()
    folder = eval_file.resolve().parent
    while folder != root and root in folder.parents:
        if any((folder / marker).is_file() for marker in AGENT_MARKERS):
            return _relative(folder, root)
        folder = folder.parent
    return None


def dependencies(target: EvalTarget, root: Path, mappings: Sequence[AgentMapping],
                 bridge: BridgeFolder | None) -> Dependencies:
    deps = Dependencies()
    eval_file = _relative(target.loaded.path, root)
    if eval_file is not None:
        deps.own[eval_file] = "eval file"
    if target.config.path is not None:
        criteria = _relative(target.config.path, root)
        if criteria is not None:
            deps.own[criteria] = "criteria file"
    mapped = [p for m in mappings if eval_file is not None and under(eval_file, m.evals) for p in m.paths]
    if mapped:
        deps.agent, deps.how = tuple(dict.fromkeys(mapped)), "--agent-paths"
    elif bridge is not None and (folders := bridge_agent_folders(bridge, target, root)) is not None:
        deps.agent = folders
        deps.how = ("the agent folder evalcheck-adk runs it on" if bridge.agents
                    else "the folder evalcheck-adk loads")
    else:
        folder = agent_folder(target.loaded.path, root)
        if folder is not None:
            deps.agent, deps.how = (folder,), FOUND_FOLDER
    return deps


# Files that make or describe the environment every agent imports from: a change to one
# re-runs every eval set, wherever it lies (one installed environment usually serves all).
ENVIRONMENT_NAMES = frozenset({
    "pyproject.toml", "setup.cfg", "setup.py", "Pipfile", "Pipfile.lock", "poetry.lock", "uv.lock",
    "pdm.lock", "environment.yml", "environment.yaml", "conda-lock.yml", ".python-version",
    "package.json", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml",
    "bun.lockb", "pyvenv.cfg", "sitecustomize.py", "usercustomize.py"})
ENVIRONMENT_FOLDERS = frozenset({"site-packages", "dist-packages", ".venv", "venv", "__pypackages__",
                                 "node_modules", "requirements"})


def environment_file(path: str) -> bool:
    """A requirements, pyproject, setup or lock file, a ``.pth`` file, or anything in a
    virtual environment or site-packages kept in the tree."""
    *folders, name = path.split("/")
    return (name in ENVIRONMENT_NAMES or name.endswith((".pth", ".lock"))
            or (name.startswith(("requirements", "constraints")) and name.endswith((".txt", ".in")))
            or any(f in ENVIRONMENT_FOLDERS for f in folders))


def one_server(deps: Sequence[Dependencies]) -> list[Dependencies]:
    """With ``--agent-url`` every agent runs in one server process, where one agent's
    imports reach the others (one ``sys.modules``): each eval set whose agent was found by
    its folder depends on all such folders. ``--agent-paths`` mappings stand as given."""
    folders = tuple(dict.fromkeys(p for d in deps if d.how == FOUND_FOLDER for p in d.agent or ()))
    return [Dependencies(d.own, folders, SERVED) if d.how == FOUND_FOLDER else d for d in deps]


def _parent(path: str) -> str:
    return path.rpartition("/")[0]


def rerun_reasons(keys: Sequence[str], deps: Sequence[Dependencies], changed: Sequence[str],  # noqa: C901 -- a branch a change kind
                  added: Collection[str] = frozenset(), removed: Collection[str] = frozenset()) -> dict[str, str]:
    """Why each eval set must run again (key -> reason); an eval set not named depends on
    nothing that changed. A changed file that is an eval set's own eval or criteria file
    re-runs that eval set; an environment file (requirements, pyproject, lock files, .pth,
    a venv in the tree) re-runs every eval set; one in agents' folders re-runs their eval
    sets (and those whose agent is not known); any other file re-runs every eval set. An
    agent whose folder lies inside another agent's folder reads that folder too (ADK puts
    the parent on sys.path; a package runs its parents' __init__.py): a file changed there
    re-runs both. A file or folder ``added`` or ``removed`` beside an agent's folder - in
    the folder that holds it, which ADK puts on sys.path - can shadow what that agent
    imports (a new ``agents/difflib/`` and ``import difflib``): it re-runs every agent
    there."""
    reasons: dict[str, str] = {}
    folders = {p for d in deps if d.agent is not None for p in d.agent}
    reach = [None if d.agent is None else
             {p for p in folders if any(under(a, p) for a in d.agent)} for d in deps]
    beside: dict[str, list[tuple[str, str]]] = {}  # folder -> (eval set, its agent's path there)
    for key, d in zip(keys, deps, strict=False):
        for path in d.agent or ():
            if path:  # the repository root has nothing beside it
                beside.setdefault(_parent(path), []).append((key, path))

    def mark(key: str, why: str) -> None:
        reasons.setdefault(key, why)

    for path in changed:
        parts = path.split("/")
        for entry in ("/".join(parts[:i]) for i in range(1, len(parts) + 1)):
            came = "is new" if entry in added else "was removed" if entry in removed else None
            for key, agent in beside.get(_parent(entry), []) if came else ():
                if entry != agent:
                    mark(key, f"{entry} {came} beside its agent's folder {agent}: it can shadow "
                              "what the agent imports")
        owners = [(k, d.own[path]) for k, d in zip(keys, deps, strict=False) if path in d.own]
        if owners:
            for key, kind in owners:
                mark(key, f"its {kind} {path} changed")
            continue
        if environment_file(path):
            for key in keys:
                mark(key, f"{path} changed: an environment file, it can change what every agent imports")
            continue
        agents = [k for k, r in zip(keys, reach, strict=False) if r is not None and any(under(path, p) for p in r)]
        if not agents:
            for key in keys:
                mark(key, f"{path} changed, outside every agent's files")
            continue
        for key in agents:
            mark(key, f"its agent's file {path} changed")
        for key, d in zip(keys, deps, strict=False):
            if d.agent is None:
                mark(key, f"{path} changed, and its agent's files are not known")
    return reasons
