"""Where the Actions runner lets action.yml hold expressions, and with which contexts.

Transcribed from the runner's manifest schema (actions/runner src/Runner.Worker/action_yaml.json):
an expression is evaluated only where the schema names a context; anywhere else the runner fails
to load the action ("Unrecognized named-value"), and nektos/act says "expressions are not allowed
here". `yaml.safe_load` plus a permissive JSON schema cannot see this.
"""

from __future__ import annotations

import re

INPUT_DEFAULT = {"github", "strategy", "matrix", "job", "runner"}
INPUT_DEFAULT_FUNCTIONS = {"hashFiles"}
CONTAINER_ARGS_AND_ENV = {"inputs"}
OUTPUT_VALUE = {"github", "strategy", "matrix", "steps", "inputs", "job", "runner", "env"}
# Functions every expression may call (the runner's built-ins).
BUILTIN_FUNCTIONS = {"contains", "startsWith", "endsWith", "format", "join", "toJSON", "fromJSON"}
LITERALS = {"true", "false", "null"}

EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.S)
STRING_LITERAL = re.compile(r"'(?:[^']|'')*'")
NAME = re.compile(r"(?<![\w.\-])([A-Za-z_][\w\-]*)")


def allowed_at(path: tuple) -> tuple[set[str], set[str]] | None:
    """(contexts, extra functions) the runner gives the string at `path`, or None for no expression."""
    if len(path) == 3 and path[0] == "inputs" and path[2] == "default":
        return INPUT_DEFAULT, INPUT_DEFAULT_FUNCTIONS
    if len(path) >= 2 and path[0] == "runs" and path[1] in ("args", "env") and len(path) == 3:
        return CONTAINER_ARGS_AND_ENV, set()
    if len(path) == 3 and path[0] == "outputs" and path[2] == "value":
        return OUTPUT_VALUE, set()
    return None


def named_values(expression: str) -> tuple[set[str], set[str]]:
    """(named values, functions called) of one `${{ }}` body."""
    body = STRING_LITERAL.sub("''", expression)
    names, functions = set(), set()
    for match in NAME.finditer(body):
        name = match.group(1)
        if name in LITERALS:
            continue
        rest = body[match.end():].lstrip()
        (functions if rest.startswith("(") else names).add(name)
    return names, functions


def _strings(node, path=()):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _strings(value, (*path, index))
    elif isinstance(node, str):
        yield path, node


def manifest_problems(manifest: dict) -> list[str]:
    """Every expression the runner would refuse, as 'path: why'."""
    problems = []
    for path, text in _strings(manifest):
        expressions = EXPRESSION.findall(text)
        if not expressions:
            continue
        where = ".".join(map(str, path))
        allowed = allowed_at(path)
        if allowed is None:
            problems.append(f"{where}: expressions are not allowed here")
            continue
        contexts, functions = allowed
        for expression in expressions:
            names, called = named_values(expression)
            for name in sorted(names - contexts):
                problems.append(f"{where}: Unrecognized named-value: '{name}'")
            for name in sorted(called - functions - BUILTIN_FUNCTIONS):
                problems.append(f"{where}: Unrecognized function: '{name}'")
    return problems
