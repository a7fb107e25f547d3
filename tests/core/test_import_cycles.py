"""No import circle in checker/: every import counts, at the top of a module, inside a
function (lazy) or under ``if TYPE_CHECKING`` (type-only), read from the source (AST)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def modules() -> dict[str, Path]:
    """Dotted name -> file, for every module and package of checker/."""
    found = {}
    for path in sorted((ROOT / "checker").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def import_graph() -> dict[str, dict[str, int]]:
    """Module -> {module of checker/ it imports: line of the first such import}."""
    known = modules()

    def resolve(name: str) -> str | None:  # the module itself, or the package whose name it is in
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, dict[str, int]] = {}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = graph.setdefault(name, {})
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):  # every level, every branch
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - node.level + 1]
                    module = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    module = node.module or ""
                targets = [module, *(f"{module}.{alias.name}" for alias in node.names)]
            else:
                continue
            for target in targets:
                resolved = resolve(target) if target.split(".")[0] == "checker" else None
                if resolved is not None and resolved != name:
                    edges.setdefault(resolved, node.lineno)
    return graph


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph.get(start, ())))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph.get(child, ()))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def describe(graph: dict[str, dict[str, int]], circle: list[str]) -> str:
    return "; ".join(f"{a} -> {b} (line {line})" for a in circle
                     for b, line in graph[a].items() if b in circle)


def test_no_module_imports_itself_back():
    graph = import_graph()
    found = circles(graph)
    assert not found, "\n".join(describe(graph, circle) for circle in found)


def test_the_graph_sees_lazy_and_type_only_imports():
    graph = import_graph()
    assert "checker.agents.collect" in graph["checker.commands.run"]  # inside run_cases
    assert "checker.compare.adaptive" in graph["checker.commands.run"]  # under TYPE_CHECKING too
    assert "checker.judges.client" in graph["checker.judges.limits"]  # at the top
    assert "checker.safety.output" in graph["checker.report.writes"]  # relative, two dots


def test_the_check_finds_a_circle():
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {"a": 4}}
    assert circles(graph) == [["a", "b", "c"]]


FOUNDATION = ("checker.errors", "checker.version", "checker.models", "checker.safety")


def test_the_foundation_imports_no_stage():
    """errors, version, the models and the safety layer are below every stage package
    (docs/architecture.md): they import each other only, so no stage can circle through them."""
    graph = import_graph()
    upward = [f"{module} -> {target} (line {line})" for module, edges in graph.items()
              if module.startswith(FOUNDATION) for target, line in edges.items()
              if not target.startswith(FOUNDATION)]
    assert not upward, "\n".join(upward)
