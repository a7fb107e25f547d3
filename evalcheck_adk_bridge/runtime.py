"""How the bridge's process runs, beside serving the protocol: ADK's eval retry plugin loaded
without ADK's evaluation package, the cyclic collector set for serving runs, and the end of
the process without the interpreter's teardown. Standard library only, until google-adk is
imported."""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib.machinery
import importlib.util
import os
import sys
from typing import IO, Any, NoReturn

RETRY_MODULE = "google.adk.evaluation._retry_options_utils"


@functools.cache
def retry_plugin() -> Any:
    """ADK's EnsureRetryOptionsPlugin (None when this ADK has none), from its own module
    alone: the ordinary import runs google/adk/evaluation/__init__.py, which imports
    AgentEvaluator and every eval model (about 0.2 s of CPU at each start) for a plugin that
    needs none of them. The module is ADK's, found on ADK's own package path and run under
    its own name (its relative imports reach ADK's agents, models and plugins); a later
    import of google.adk.evaluation finds it there."""
    module = sys.modules.get(RETRY_MODULE)
    if module is None:
        import google.adk

        folders = [os.path.join(folder, "evaluation") for folder in google.adk.__path__]
        spec = importlib.machinery.PathFinder.find_spec(RETRY_MODULE, folders)
        if spec is None or spec.loader is None:
            return None
        module = importlib.util.module_from_spec(spec)
        sys.modules[RETRY_MODULE] = module  # as an import would (inspect and pickle look there)
        try:
            spec.loader.exec_module(module)
        except ImportError:
            del sys.modules[RETRY_MODULE]
            return None
    return getattr(module, "EnsureRetryOptionsPlugin", None)


def eval_plugins() -> list[Any]:
    """ADK's inference adds model-call retries; so does the bridge (retries.py: the same
    calls and attempts, after the delay the service asks for, told to the checker), with
    ADK's own plugin after it for the calls it leaves (streaming ones)."""
    from .retries import refusal_retries

    plugin = retry_plugin()
    return [refusal_retries()] + ([] if plugin is None else [plugin(name="ensure_retry_options")])


# Allocations between two collections of the youngest generation (CPython's default: 700).
GC_THRESHOLD = 100_000


def no_collections() -> None:
    """No cyclic collection while google-adk and the agent load: its full passes over the
    growing heap took some 0.08 s of the second or so before the first run (imports make
    little cyclic garbage). fewer_collections turns it back on."""
    gc.disable()


def fewer_collections() -> None:
    """The cyclic collector, on again and set for serving runs: what is loaded by now (google-adk, the
    agent: some 150,000 objects) moves to the permanent generation, which collections do not
    scan, and the youngest generation is collected after 100,000 allocations, not 700. At
    CPython's defaults the collector's passes over all of ADK took 15-25% of the CPU of each
    run (a run allocates tens of thousands of objects). It still runs, so reference cycles
    the agent makes are freed; an object loaded by now is kept for the process's life."""
    gc.freeze()
    threshold, *older = gc.get_threshold()
    gc.set_threshold(max(threshold, GC_THRESHOLD), *older)
    gc.enable()


def open_files(objects: list[Any]) -> list[Any]:
    """The buffered files among ``objects`` (some 200,000 once google-adk is loaded): their
    types picked first, then the objects of those types, in C loops (isinstance on each
    object took 70 ms of the end of every process; this, 30 ms)."""
    import io
    import itertools

    kinds = {kind for kind in set(map(type, objects))
             if issubclass(kind, (io.TextIOWrapper, io.BufferedWriter, io.BufferedRandom))}
    return list(itertools.compress(objects, map(kinds.__contains__, map(type, objects))))


def writing_descriptors(spared: set[int]) -> bool:
    """Whether a descriptor of this process besides ``spared`` is open for writing on a file
    or a pipe (sockets and the event loop's own, such as epoll's, aside): only then may a
    file object hold data that an exit must write. Linux tells (/proc/self/fdinfo); where
    it cannot be read, True."""
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return True
    for name in names:
        if int(name) in spared:
            continue
        try:
            if os.readlink(f"/proc/self/fd/{name}").startswith(("socket:", "anon_inode:")):
                continue
            with open(f"/proc/self/fdinfo/{name}", encoding="ascii") as info:
                flags = next(int(line.split()[1], 8) for line in info if line.startswith("flags:"))
        except FileNotFoundError:
            continue  # closed since it was listed (the listing's own descriptor)
        except (OSError, ValueError, IndexError, StopIteration):
            return True
        if flags & os.O_ACCMODE != os.O_RDONLY:
            return True
    return False


def end_process(code: int, out: IO[str]) -> NoReturn:
    """The runs are over: end the process without the interpreter's teardown. Unloading
    google-adk, the agent and what they hold costs about 0.5 s of CPU, and the checker waits
    for this process to exit before it scores. What an exit must still do is done first:
    the exit handlers (logging's flush, telemetry exporters, the agent's own), then what the
    agent printed and every file it left open are flushed, as their finalizers would. The
    search for open files looks at every object (0.1 s after a suite's runs): it is made
    only when some descriptor is open for writing besides standard output, standard error
    and the protocol's."""
    import atexit

    atexit._run_exitfuncs()
    streams = [sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__]
    spared = {0, 1, 2}
    with contextlib.suppress(Exception):
        spared.add(out.fileno())
    if writing_descriptors(spared):
        gc.unfreeze()  # gc.get_objects() leaves out the frozen (fewer_collections)
        streams += open_files(gc.get_objects())
    for stream in streams:
        with contextlib.suppress(Exception):
            if stream is not None and not stream.closed:
                stream.flush()
    with contextlib.suppress(Exception):
        out.flush()
    os._exit(code)
