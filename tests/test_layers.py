"""The layers' dependencies point one way, and no module imports itself back through others.

Every import counts, at module level or inside a function: an import placed in a function hides
a cycle from ruff and mypy, not from this test.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "sessions_app"

# Lower layers first; a module may import from its own layer and from the layers before it.
# core/ is pure: it imports nothing of the app but core/ (test_purity keeps Django out of it).
LAYERS = ["core", "llm", "base", "access", "store", "render", "live", "web", "top"]
BASE = {"errors", "models", "events", "fanout"}  # the app's root modules that every layer may use
TOP = {"apps", "admin", "management", "templatetags", "migrations"}  # Django's entry points


def layer_of(module: str) -> str:
    part = module.split(".")[1]
    if part in BASE:
        return "base"
    if part in TOP:
        return "top"
    return part


def modules() -> dict[str, Path]:
    found = {}
    for path in APP.rglob("*.py"):
        parts = path.relative_to(APP.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports(path: Path, known: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """The app's modules this file imports (anywhere in it), with the line of each import."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if not node.module.startswith("sessions_app"):
                continue
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                yield (name if name in known else node.module), node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("sessions_app"):
                    yield alias.name, node.lineno


def graph() -> dict[str, set[str]]:
    known = modules()
    edges: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        for target, _ in imports(path, known):
            while target not in known:  # a package's attribute: the package itself
                target = target.rpartition(".")[0]
            if target != name and target != "sessions_app":
                edges[name].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
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


def test_no_import_cycles():
    assert cycles(graph()) == []


def test_the_cycle_finder_finds_one():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_layers_depend_only_on_the_layers_before_them():
    wrong = []
    for source, targets in graph().items():
        if source.count(".") < 1:
            continue
        rank = LAYERS.index(layer_of(source))
        for target in targets:
            target_layer = layer_of(target)
            if source.split(".")[1] == "core" and target_layer != "core":
                wrong.append(f"{source} -> {target} (core is pure)")
            elif LAYERS.index(target_layer) > rank:
                wrong.append(f"{source} -> {target}")
    assert wrong == []


def test_every_module_is_in_a_layer():
    assert {layer_of(name) for name in modules() if name.count(".")} <= set(LAYERS)
