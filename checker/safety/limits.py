"""Upper bounds on what one run may ask for, and the one check of a run's options against them.

A gate runs on every pull request: a typo (``--num-runs 100000``) or a hostile input must be
a clear error before anything starts, not hours of runs or memory that grows until the job
dies. The numbers are documented in docs/limits.md; other options that count runs per case
(``--max-runs``) use ``MAX_RUNS`` too.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..errors import InputError
from .surrogates import repair

MAX_RUNS = 100              # runs of one eval case (--num-runs, --max-runs)
MAX_TURN_TIMEOUT = 86_400.0  # seconds for one user turn: a day is finite and beyond any real turn
MAX_JSON_DEPTH = 200        # nesting of eval files and agent replies (ADK writes < 20)
MAX_SCORED_CHARS = 1_000_000  # characters of one run's invocations (as JSON) a metric scores


def scored_size_problem(invocations_json: str) -> str | None:
    """Why one run's invocations are too large to score (ROUGE, judges: minutes and gigabytes
    for tens of megabytes of distinct words), or None. The run is then an errored run."""
    if len(invocations_json) <= MAX_SCORED_CHARS:
        return None
    return (f"the agent's answers in this run hold {len(invocations_json):,} characters, above the "
            f"{MAX_SCORED_CHARS:,} a run may have scored (docs/limits.md)")


def check_runs(name: str, value: int) -> int:
    """``value`` runs per case for option ``name`` (``num-runs``, ``max-runs``), or an InputError."""
    if value < 1:
        raise InputError(f"{name} must be at least 1, got {value}")
    if value > MAX_RUNS:
        raise InputError(f"{name} is {value}, above the maximum of {MAX_RUNS} runs per eval case",
                         fix=f"use at most {MAX_RUNS}; to tell a rare failure apart, see docs/limits.md")
    return value


def check_turn_timeout(value: float, name: str = "turn-timeout") -> float:
    """A finite, positive number of seconds, at most ``MAX_TURN_TIMEOUT``."""
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"{name} must be a finite number of seconds above 0, got {value}",
                         fix=f"e.g. 300; at most {MAX_TURN_TIMEOUT:g}")
    if value > MAX_TURN_TIMEOUT:
        raise InputError(f"{name} is {value:g} s, above the maximum of {MAX_TURN_TIMEOUT:g} s (a day)",
                         fix="a turn that takes longer is a hung agent")
    return value


class JsonTooDeep(ValueError):
    """JSON nested deeper than ``MAX_JSON_DEPTH``; ``loc`` is where (keys and indexes)."""

    def __init__(self, loc: tuple = ()):
        super().__init__(f"JSON nested more than {MAX_JSON_DEPTH} levels deep")
        self.loc = loc


def too_deep(value: object, limit: int = MAX_JSON_DEPTH) -> tuple | None:
    """Location of the first object or list nested more than ``limit`` levels deep, else
    None. Iterative: no recursion however deep the value."""
    stack: list[tuple[object, int, tuple]] = [(value, 1, ())]
    while stack:
        node, depth, loc = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else None
        if items is None:
            continue
        if depth > limit:
            return loc
        for key, child in items:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1, (*loc, key)))
    return None


def count_keys(value: object, limit: int = MAX_JSON_DEPTH) -> int:
    """The number of keys of every object in ``value``; JsonTooDeep (at ``too_deep``'s
    location) when an object or list is nested more than ``limit`` levels deep. A level at a
    time, with no location kept: the walk of a large file that is not too deep costs less."""
    level = [value] if isinstance(value, (dict, list)) else []
    keys, depth = 0, 0
    while level:
        depth += 1
        if depth > limit:
            raise JsonTooDeep(too_deep(value, limit) or ())
        below: list[dict[Any, Any] | list[Any]] = []
        for node in level:
            children = node.values() if isinstance(node, dict) else node
            if isinstance(node, dict):
                keys += len(node)
            below += [child for child in children if isinstance(child, (dict, list))]
        level = below
    return keys


def loads_bounded(text: str | bytes, **kwargs: object) -> object:
    """``json.loads`` that raises JsonTooDeep - not RecursionError, and not later a
    serialisation error on the results file - for JSON nested deeper than MAX_JSON_DEPTH,
    and replaces lone surrogates (checker/safety/surrogates.py): its callers read untrusted JSON."""
    try:
        value = json.loads(text, **kwargs)  # type: ignore[arg-type]
    except RecursionError:
        raise JsonTooDeep() from None
    count_keys(value)
    return repair(value, text)


FDS_PER_RUN = 8    # pipes, a pidfd and a socket or two of one agent run, with room to start it
FD_RESERVE = 64    # the checker's own files, judge connections, the event loop


def fd_concurrency(wanted: int) -> tuple[int, str | None]:
    """Runs that may be in flight under the open-file limit (``ulimit -n``): the soft limit is
    first raised towards the hard one; when that is still too low, fewer runs at once and a
    warning saying so. Running out of descriptors anyway fails only the runs it hits."""
    try:
        import resource
    except ImportError:  # not POSIX
        return wanted, None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = FD_RESERVE + FDS_PER_RUN * wanted
    infinite = resource.RLIM_INFINITY
    if soft != infinite and soft < needed and (hard == infinite or hard > soft):
        target = needed if hard == infinite else min(needed, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    if soft == infinite or soft >= needed:
        return wanted, None
    allowed = max(1, (soft - FD_RESERVE) // FDS_PER_RUN)
    return allowed, (f"concurrency {wanted} needs about {needed} open files, but the limit "
                     f"(ulimit -n) is {soft}: running {allowed} at once")
