"""The layout shows the design: no import cycles among virtbench's modules (counting imports
made inside functions too), and no layer reaches up into one above it."""

from __future__ import annotations

import ast
from pathlib import Path

import virtbench

ROOT = Path(virtbench.__file__).parent


def modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the virtbench modules it imports, anywhere in its text."""

    def owner(name: str) -> str:
        while name not in mods:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{up}.{base}" if base else up
                names = [f"{base}.{a.name}" for a in node.names] or [base]
            else:
                continue
            for name in names:
                if name.split(".")[0] == "virtbench":
                    graph[mod].add(owner(name))
        graph[mod].discard(mod)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_itself_back():
    graph = imports(modules())
    assert len(graph) > 100 and graph["virtbench.cli.run"], "the walk found the modules"
    assert cycles(graph) == []


# lower layer -> the layers above it, which it must not import
LAYERS = {
    "virtbench.store": ("virtbench.cli", "virtbench.report", "virtbench.runner",
                        "virtbench.experiments", "virtbench.runtimes"),
    "virtbench.runtimes": ("virtbench.cli", "virtbench.cleanup", "virtbench.report",
                           "virtbench.runner", "virtbench.experiments", "virtbench.store"),
    "virtbench.report": ("virtbench.cli", "virtbench.runner", "virtbench.runtimes"),
    "virtbench.experiments": ("virtbench.cli", "virtbench.report"),
}  # fmt: skip


def test_no_layer_reaches_up():
    graph = imports(modules())
    wrong = [
        f"{mod} imports {dep}"
        for mod, deps in graph.items()
        for layer, above in LAYERS.items()
        if mod == layer or mod.startswith(layer + ".")
        for dep in deps
        if any(dep == a or dep.startswith(a + ".") for a in above)
    ]
    assert wrong == []
