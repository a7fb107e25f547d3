"""The parts of checker/ in pipeline order: a part imports only parts below it (docs/architecture.md,
"The layers", draws the same order). Every import counts: at the top of a module, inside a function
(lazy) or under ``if TYPE_CHECKING`` (type-only), read from the source (test_import_cycles.py).

KNOWN lists the imports against the order that issue 42 has not taken out yet, each with what
takes it out. The list only shrinks: an import against the order that is not on it fails, and so
does an entry whose import is gone (delete the entry)."""

from __future__ import annotations

from test_import_cycles import import_graph

# Bottom to top. A part of checker/ is a top-level module or package; action/github and
# action/publish_target (publishing to GitHub) are a part of their own below the commands, the
# rest of action/ (the Action's entry and inputs) a command like cli.py.
ORDER: tuple[tuple[str, ...], ...] = (
    ("errors", "version", "models", "safety", "aio", "limiter"),  # the foundation
    ("judges",),
    ("simulation",),
    ("metrics",),
    ("inputs",),        # read inputs
    ("agents",),        # run
    ("scoring",),       # score
    ("compare",),       # compare
    ("scale",),         # plan's shards and changed files, merging
    ("report",),        # write
    ("action.github", "action.publish_target"),
    ("commands", "options", "option_checks"),  # conductors of several stages, the run's options
    ("action", "cli", "bridges"),              # entry points
)

KNOWN: set[tuple[str, str]] = set()  # every import against the order is taken out

LEVEL = {part: level for level, parts in enumerate(ORDER) for part in parts}


def part_of(module: str) -> str:
    names = module.split(".")[1:]
    if names[:2] in (["action", "github"], ["action", "publish_target"]):
        return ".".join(names[:2])
    return names[0] if names else ""


def against_the_order(graph: dict[str, dict[str, int]]) -> dict[tuple[str, str], int]:
    """(module, module it imports) -> line, for every import of a part above the importer's."""
    return {(module, target): line for module, edges in graph.items() for target, line in edges.items()
            if LEVEL[part_of(target)] > LEVEL[part_of(module)]}


def test_every_part_has_a_place_in_the_order():
    parts = {part_of(module) for module in import_graph()}
    assert parts <= set(LEVEL), f"not in ORDER: {sorted(parts - set(LEVEL))}"


def test_no_part_imports_one_above_it():
    found = against_the_order(import_graph())
    new = [f"{a} -> {b} (line {line})" for (a, b), line in sorted(found.items()) if (a, b) not in KNOWN]
    assert not new, "imports against the package order (tests/core/test_package_order.py):\n" + "\n".join(new)


def test_the_known_exceptions_only_shrink():
    gone = sorted(KNOWN - set(against_the_order(import_graph())))
    assert not gone, f"no longer imported, delete from KNOWN: {gone}"


def test_a_backward_import_is_found():
    graph = {"checker.inputs.replay": {"checker.scoring.pipeline": 23},  # inputs below scoring
             "checker.scoring.case": {"checker.inputs.fingerprint": 15}}  # forward: fine
    assert against_the_order(graph) == {("checker.inputs.replay", "checker.scoring.pipeline"): 23}
