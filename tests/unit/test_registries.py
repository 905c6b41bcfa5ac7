"""Every registry found by walking a package (the experiment types, the workloads, the
report's views) and the metric registry put together from them holds the same whatever
module is imported first, and nothing reads a registry while its modules import."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import virtbench

FIRST = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
from virtbench import experiments, metrics, workloads
from virtbench.report import views
print(json.dumps([experiments.names(), workloads.names(), len(metrics.registry()),
                  sorted(views._declared())]))
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
    """Each module of the registries' packages imported first, alone, in an interpreter of
    its own: every registry then holds the same, full contents (a registry filled as a
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

    def first(module: str) -> tuple[str, str]:
        res = subprocess.run(
            [sys.executable, "-c", FIRST, module], capture_output=True, text=True, timeout=300
        )
        if res.returncode:
            return module, res.stderr.strip().splitlines()[-1]
        got = json.loads(res.stdout)
        return module, "" if got == whole else f"registries differ: {got}"

    modules = registry_packages()
    assert "virtbench.experiments.exec" in modules and "virtbench.report.views.boot" in modules
    with ThreadPoolExecutor(max_workers=4) as pool:
        broken = [(m, why) for m, why in pool.map(first, modules) if why]
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
