"""The layout shows the design: no import cycles among virtbench's modules (counting imports
made inside functions too), and no layer reaches up into one above it."""

from __future__ import annotations

import ast
from pathlib import Path

import virtbench
from virtbench.runtimes import BUILTIN

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
    """module -> the virtbench modules it imports, anywhere in its text, and the packages
    that importing them runs first (a package's `__init__` runs before any module of it
    loads), but for the importer's own packages."""

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
                    graph[mod].update(_with_packages(owner(name), mod, mods))
        graph[mod].discard(mod)
    return graph


def _with_packages(dep: str, importer: str, mods: dict[str, Path]) -> set[str]:
    """`dep` and each package above it that `importer` is not itself inside."""
    found = {dep}
    parts = dep.split(".")
    for n in range(2, len(parts)):
        package = ".".join(parts[:n])
        if package in mods and not importer.startswith(package + "."):
            found.add(package)
    return found


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


# The pipeline's layers, lowest first: a package may import its own modules and those of
# the packages before it, never one after it. The top level holds only what every layer
# uses (errors, naming, paths, discovery).
LAYERS = [
    "top",  # errors, naming, paths, discovery
    "host",  # processes, cgroups, sysctl, the run's lock and ledger, facts, doctor
    "analysis",  # statistics, significance, fits, order effects
    "store",  # samples and runs, stored
    "figure",  # what a figure is, as the types and workloads declare theirs
    "measure",  # probe, memory, quiet, sampler, topology
    "workloads",  # what runs inside an instance
    "artifacts",  # workloads packaged for a runtime family
    "runtimes",  # drivers
    "loadgen",  # where a serving workload's client runs: here, or a load generator
    "tables",  # what every spec table shares, as each experiment type's model uses it
    "experiments",  # the experiment types: each declares its model, figures and procedure
    "metrics",  # the registry of every figure, from the types and the workloads
    "spec",  # a spec, validated
    "run",  # the runner, preflight, resume, plan, clean-up
    "report",  # tables, answers, plots, compare, export
    "site",  # every run of a store as a static site: testbeds, leaderboards, trends
    "fleet",  # many hosts
    "cli",  # the command
]
TOP = {
    "virtbench",
    "virtbench.__main__",
    "virtbench.errors",
    "virtbench.naming",
    "virtbench.paths",
    "virtbench.discovery",
}
DATA = {"catalog"}  # packages of data files only: they import nothing


def layer(mod: str) -> str:
    """The layer a module is in: the longest entry of LAYERS its name starts with."""
    if mod == "virtbench.__main__":  # `python -m virtbench`: the command itself
        return "cli"
    if mod in TOP:
        return "top"
    rest = mod.removeprefix("virtbench.")
    return max((x for x in LAYERS if rest == x or rest.startswith(x + ".")), key=len, default="")


def test_every_package_has_its_layer_and_the_top_holds_five_modules():
    mods = modules()
    top = sorted(m for m in mods if m.count(".") == 1 and (ROOT / f"{m.split('.')[1]}.py").exists())
    assert top == sorted(TOP - {"virtbench"}), "only errors, naming, paths, discovery at the top"
    packages = {m.split(".")[1] for m in mods if m not in TOP}
    assert packages - DATA <= set(LAYERS), "a package without a layer in LAYERS"
    assert all(layer(m) for m in mods if m not in TOP and m.split(".")[1] not in DATA)


def test_no_layer_reaches_up():
    graph = imports(modules())
    rank = {name: i for i, name in enumerate(LAYERS)}
    wrong = [
        f"{mod} ({layer(mod)}) imports {dep} ({layer(dep)})"
        for mod, deps in graph.items()
        for dep in deps
        if rank.get(layer(dep), -1) > rank.get(layer(mod), len(LAYERS))
    ]
    assert wrong == []


def test_the_layer_check_sees_an_upward_import():
    rank = {name: i for i, name in enumerate(LAYERS)}
    assert rank[layer("virtbench.cli.run")] > rank[layer("virtbench.run.runner")]
    assert rank[layer("virtbench.host.proc")] < rank[layer("virtbench.runtimes.oci.crun")]
    assert layer("virtbench.errors") == "top" and rank["top"] == 0
    assert layer("virtbench.figure") == "figure" and layer("virtbench.metrics") == "metrics"
    assert rank["figure"] < rank["experiments"] < rank["metrics"]


# The runtimes' families, lowest first: the shared core (runtimes/*.py: the Runtime base,
# the capabilities, observing, launching, the network, what engines leave) imports no
# family; a family imports the core, its own modules and the families listed before it.
FAMILIES = [
    "core",
    "process",  # native, and what runs the workload as a host process tree: bwrap, nspawn
    "oci",  # runc, crun, youki, runsc on bundles
    "engines",  # docker, podman
    "lxc",  # lxc, lxd
    "vm",  # qemu, firecracker, cloud-hypervisor (their VMM runs as native's process does)
]
FAMILY_MAY_USE = {"vm": {"process"}}


def family(mod: str) -> str:
    """The runtimes' family a module of virtbench.runtimes is in."""
    parts = mod.split(".")[2:]
    return parts[0] if parts and parts[0] in FAMILIES[1:] else "core"


def family_crossings(graph: dict[str, set[str]]) -> list[str]:
    """Imports between runtimes' families that FAMILY_MAY_USE does not allow."""
    runtimes = {m: deps for m, deps in graph.items() if m.startswith("virtbench.runtimes")}
    return [
        f"{mod} ({family(mod)}) imports {dep} ({family(dep)})"
        for mod, deps in runtimes.items()
        for dep in deps
        if (
            dep.startswith("virtbench.runtimes.")
            and family(dep) not in {"core", family(mod)} | FAMILY_MAY_USE.get(family(mod), set())
        )
        or (family(mod) == "core" and family(dep) != "core")
    ]


def test_runtimes_are_grouped_by_family_and_no_family_reaches_across():
    mods = modules()
    graph = imports(mods)
    assert family_crossings(graph) == []
    packages = {
        m.split(".")[2] for m in mods if m.count(".") >= 3 and m.startswith("virtbench.runtimes.")
    }
    assert packages == set(FAMILIES) - {"core"}, "a subpackage of runtimes/ that is no family"
    flat = [
        m
        for m in mods
        if m.count(".") == 2 and m.startswith("virtbench.runtimes.") and family(m) == "core"
    ]
    assert len(flat) <= 14, f"the shared core grows back into a flat room: {flat}"
    for name, driver in BUILTIN.items():
        assert family(driver.split(":")[0]) != "core", f"{name}'s driver is in no family"


def test_the_family_check_sees_a_crossing():
    graph = {
        "virtbench.runtimes.lxc.lxd": {"virtbench.runtimes.engines.base"},
        "virtbench.runtimes.base": {"virtbench.runtimes.vm.qemu"},
        "virtbench.runtimes.vm.base": {"virtbench.runtimes.process.native"},
    }
    assert family_crossings(graph) == [
        "virtbench.runtimes.lxc.lxd (lxc) imports virtbench.runtimes.engines.base (engines)",
        "virtbench.runtimes.base (core) imports virtbench.runtimes.vm.qemu (vm)",
    ]


def private_imports(mods: dict[str, Path]) -> list[str]:
    """`from virtbench.x import _name`, and `mod._name` on a virtbench module bound by an
    import, anywhere outside the module that defines the name."""
    found = []
    for mod, path in mods.items():
        tree = ast.parse(path.read_text())
        bound: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("virtbench"):
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        found.append(f"{mod}: from {node.module} import {a.name}")
                    if f"{node.module}.{a.name}" in mods:
                        bound[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, ast.Import):
                bound.update({a.asname: a.name for a in node.names if a.asname and a.name in mods})
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and bound.get(node.value.id, mod) != mod
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                found.append(f"{mod}: {node.value.id}.{node.attr}")
    return found


def test_no_module_uses_another_modules_private_names(tmp_path):
    assert private_imports(modules()) == []
    (tmp_path / "a.py").write_text("from virtbench.b import _hidden\nfrom virtbench import c\n")
    (tmp_path / "c.py").write_text("from virtbench import a as m\nm._x\n")
    fake = {"virtbench.a": tmp_path / "a.py", "virtbench.c": tmp_path / "c.py"}
    assert private_imports(fake) == [
        "virtbench.a: from virtbench.b import _hidden",
        "virtbench.c: m._x",
    ]


def driver_privates(mods: dict[str, Path]) -> list[str]:
    """`rt._name` or `self.rt._name`: a capability or anything else reaching into a
    driver's private parts rather than the public methods it declares."""
    found = []
    for mod, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
                continue
            holder = node.value
            name = holder.attr if isinstance(holder, ast.Attribute) else getattr(holder, "id", "")
            if name == "rt" and not node.attr.startswith("__"):
                found.append(f"{mod}: rt.{node.attr}")
    return found


def test_capabilities_reach_a_driver_only_through_its_public_methods(tmp_path):
    assert driver_privates(modules()) == []
    (tmp_path / "a.py").write_text("def f(self, rt):\n    rt._x()\n    self.rt._qmp(1)\n")
    assert driver_privates({"virtbench.a": tmp_path / "a.py"}) == [
        "virtbench.a: rt._x",
        "virtbench.a: rt._qmp",
    ]


# Imported first, in an interpreter of its own, then asked for every registry: what each
# registry holds, and that nothing raised, whatever module was imported first.
