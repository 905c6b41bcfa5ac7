"""Every registry found by walking a package (the experiment types, the workloads, the
report's views) and the metric registry put together from them holds the same whatever
module is imported first, and nothing reads a registry while its modules import."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import virtbench

# What the registries hold, printed as JSON, once `sys.argv[1]` was imported first
FIRST = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
from virtbench import experiments, metrics, workloads
from virtbench.report import views
print(json.dumps([experiments.names(), workloads.names(), len(metrics.registry()),
                  sorted(views._declared())]))
"""
# An interpreter that has imported the third-party libraries virtbench uses, and none of
# virtbench (so the order of virtbench's own imports is each child's), then runs FIRST in
# a forked child per module named on its standard input: a line of JSON each, [module,
# FIRST's output or "" and the child's last line of error]. A child costs a fork, not an
# interpreter's start-up and numpy's and pydantic's imports.
SERVER = """
import contextlib, io, json, os, sys, traceback
import numpy, psutil, pydantic, rich.console, rich.table, typer
assert not [m for m in sys.modules if m.split(".")[0] == "virtbench"]
FIRST = sys.argv[1]
for line in sys.stdin:
    module = line.strip()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        out, code = io.StringIO(), 0
        try:
            sys.argv = ["-c", module]
            with contextlib.redirect_stdout(out):
                exec(FIRST, {"__name__": "__main__"})
        except BaseException:
            out, code = io.StringIO(traceback.format_exc().strip().splitlines()[-1]), 1
        os.write(write, json.dumps([code, out.getvalue()]).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as got:
        answer = got.read()
    os.waitpid(pid, 0)
    print(json.dumps([module, *json.loads(answer or b'[1, "the child died"]')]), flush=True)
"""


def registry_packages() -> list[str]:
    """Every module of the packages whose registries are found by walking them, and of
    the packages they import while they are (spec, metrics)."""
    root = Path(virtbench.__file__).parent
    out = ["virtbench.discovery"]
    for package in ("experiments", "workloads", "metrics", "spec", "report/views"):
        for path in sorted((root / package).glob("*.py")):
            dotted = f"virtbench.{package.replace('/', '.')}"
            out.append(dotted if path.stem == "__init__" else f"{dotted}.{path.stem}")
    return out


def test_every_registry_is_whole_whatever_module_is_imported_first():
    """Each module of the registries' packages imported first, alone, in a process of its
    own (forked from one that holds no virtbench module: SERVER): every registry then
    holds the same, full contents (a registry filled as a
    side effect of what was imported first once dropped `exec` when exec.py came first,
    and raised a circular ImportError when pause.py did)."""
    import json
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    from virtbench import experiments, metrics, workloads
    from virtbench.report import views

    whole = [
        experiments.names(),
        workloads.names(),
        len(metrics.registry()),
        sorted(views._declared()),
    ]
    assert len(whole[0]) >= 11 and len(whole[1]) >= 17 and len(whole[3]) >= 11

    def served(modules: list[str]) -> list[tuple[str, str]]:
        res = subprocess.run(
            [sys.executable, "-c", SERVER, FIRST],
            input="\n".join(modules) + "\n",
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert res.returncode == 0, res.stderr
        out = []
        for line in res.stdout.splitlines():
            module, failed, said = json.loads(line)
            if failed:
                out.append((module, said.strip() or "failed, saying nothing"))
            elif json.loads(said) != whole:
                out.append((module, f"registries differ: {said}"))
        answered = [json.loads(line)[0] for line in res.stdout.splitlines()]
        assert answered == modules, "the server did not answer for every module"
        return out

    modules = registry_packages()
    assert "virtbench.experiments.exec" in modules and "virtbench.report.views.boot" in modules
    halves = [modules[0::2], modules[1::2]]  # a server on each of two CPUs
    with ThreadPoolExecutor(max_workers=2) as pool:
        broken = [found for half in pool.map(served, halves) for found in half]
    assert not broken, broken


def test_a_registry_read_while_its_modules_import_is_an_error(tmp_path, monkeypatch):
    """The check can fail: a module that reads its package's registry while the walk is
    importing it gets a DiscoveryError, never a registry missing itself."""
    import importlib
    import sys

    from virtbench.discovery import DiscoveryError

    registry = (
        "from virtbench import discovery\n"
        "def every():\n"
        "    return discovery.declared(__name__, __path__, 'VALUE', int)\n"
    )
    for name, second in (
        ("vbok", "VALUE = 2\n"),
        ("vbbad", "import vbbad\nvbbad.every()\nVALUE = 2\n"),
    ):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(registry)
        (tmp_path / name / "a.py").write_text("VALUE = 1\n")
        (tmp_path / name / "b.py").write_text(second)
    monkeypatch.syspath_prepend(str(tmp_path))
    names = ("vbok", "vbok.a", "vbok.b", "vbbad", "vbbad.a", "vbbad.b")
    try:
        assert importlib.import_module("vbok").every() == [1, 2]
        with pytest.raises(DiscoveryError, match=r"vbbad's registry was read while"):
            importlib.import_module("vbbad").every()
    finally:
        for name in names:
            sys.modules.pop(name, None)


REGISTRY_READS = {"types", "names", "get", "every", "measuring", "registry", "declared"}
REGISTRIES = {"experiments", "workloads", "metrics", "views", "discovery"}


def import_time_reads(source: str) -> list[int]:
    """The lines of `source` that call a registry's reader (`experiments.types()`, ...)
    in code that runs as the module is imported: outside any function or lambda."""
    found = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return
        func = node.func if isinstance(node, ast.Call) else None
        if (
            isinstance(func, ast.Attribute)
            and func.attr in REGISTRY_READS
            and isinstance(func.value, ast.Name)
            and func.value.id in REGISTRIES
        ):
            found.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return found


def test_no_module_of_a_walked_package_reads_a_registry_as_it_is_imported():
    """What the walk cannot see at run time (a module imported first, alone, that reads
    its package's registry at import), this sees in the text: no statement that runs at
    import in experiments/, workloads/ or report/views/ calls a registry's reader."""
    assert import_time_reads(
        "X = experiments.types()\nclass A:\n    y = [workloads.every()]\n"
        "    def f(self):\n        return metrics.registry()\nZ = lambda: views.names()\n"
    ) == [1, 3]
    root = Path(virtbench.__file__).parent
    wrong = [
        f"{path.relative_to(root)}:{line}"
        for package in ("experiments", "workloads", "report/views")
        for path in sorted((root / package).glob("*.py"))
        for line in import_time_reads(path.read_text())
    ]
    assert wrong == []
