"""The drivers' shape: a driver is a few classes on Runtime and holds the rest (a VM its
VMM, `rt.vmm`; native its process, `rt.process`; every driver its capabilities), so no
driver class sits deeper than four classes below Runtime, nothing but drivers stands
between a driver and Runtime (no mixin), and no code steps around an override by calling
another class's private method (`Native._stop(self, inst)`) or reaches into another
object's private parts."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import virtbench
from virtbench.runtimes import BUILTIN
from virtbench.runtimes.base import Runtime

ROOT = Path(virtbench.__file__).parent
MAX_DEPTH = 4  # Firecracker -> ApiVm -> Vm -> Runtime is 3

# `obj._name` outside the object's own class that is no driver's doing (the start of
# each), with why
ALLOWED = {
    "virtbench.cli.help_words": {"core.Typer"},  # typer's own help, patched in place
    "virtbench.measure.sampler": {"psutil.cpu_times()._fields"},  # a namedtuple's fields
    "virtbench.spec.runtimes": {"InstanceOptions._cpuset"},  # its validator, reused
    "virtbench.store.core": {"src._db"},  # another Store's database: the same class
    "virtbench.store.postgres": {"backend._psycopg", "backend._secret"},
}


def driver_classes() -> dict[str, type]:
    """Every built-in driver's class, by name."""
    out = {}
    for name, target in BUILTIN.items():
        module, _, attr = target.partition(":")
        out[name] = getattr(importlib.import_module(module), attr)
    return out


def depth(cls: type) -> int:
    """Classes from `cls` up to Runtime along its MRO (Runtime's own subclass: 1)."""
    return cls.__mro__.index(Runtime)


def test_no_driver_is_more_than_four_classes_below_runtime_nor_on_a_mixin():
    found = {name: depth(cls) for name, cls in driver_classes().items()}
    assert {n: d for n, d in found.items() if d > MAX_DEPTH} == {}
    assert found["firecracker"] == 3 and found["qemu"] == 2 and found["native"] == 1
    for name, cls in driver_classes().items():
        between = cls.__mro__[: depth(cls)]
        mixins = [c.__name__ for c in between if not issubclass(c, Runtime)]
        assert mixins == [], f"{name}: {mixins} between it and Runtime"


def test_a_vm_holds_its_vmm_and_what_it_boots_rather_than_being_a_process():
    from types import SimpleNamespace

    from virtbench.runtimes.console import Console
    from virtbench.runtimes.process.native import HostProcess, Native
    from virtbench.runtimes.vm.boot import VmBoot
    from virtbench.runtimes.vm.vmm import Vmm

    classes = driver_classes()
    for name in ("qemu", "firecracker", "cloud-hypervisor", "solo5-hvt", "solo5-spt"):
        rt = classes[name](SimpleNamespace())
        assert not isinstance(rt, Native), name
        assert isinstance(rt.vmm, Vmm) and isinstance(rt.boot, VmBoot), name
        assert isinstance(rt.vmm.process, HostProcess) and isinstance(rt.vmm.console, Console)
    for name in ("native", "bwrap", "nspawn", "wasmtime"):
        assert isinstance(classes[name](SimpleNamespace()).process, HostProcess), name


def private_class_calls(tree: ast.AST) -> list[str]:
    """`SomeClass._method(...)`: a private method called through a class named in
    CapWords, stepping around whatever the object's own class does instead."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        holder, attr = node.func.value, node.func.attr
        private = attr.startswith("_") and not attr.startswith("__")
        if private and isinstance(holder, ast.Name) and holder.id[:1].isupper():
            found.append(f"{holder.id}.{attr}(...) line {node.lineno}")
    return found


def foreign_privates(tree: ast.AST) -> list[str]:
    """`obj._name` on anything but `self`, `cls` or `super()`: another object's private
    parts."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        attr, holder = node.attr, node.value
        if not attr.startswith("_") or attr.startswith("__"):
            continue
        if isinstance(holder, ast.Name) and holder.id in ("self", "cls"):
            continue
        if isinstance(holder, ast.Call) and getattr(holder.func, "id", "") == "super":
            continue
        found.append(ast.unparse(node))
    return found


def modules() -> dict[str, ast.AST]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = ast.parse(path.read_text())
    return out


def test_no_code_calls_another_classs_private_method():
    found = {m: calls for m, tree in modules().items() if (calls := private_class_calls(tree))}
    assert found == {}


def test_no_code_reaches_into_another_objects_private_parts():
    found = {}
    for mod, tree in modules().items():
        allowed = ALLOWED.get(mod, set())
        left = [x for x in foreign_privates(tree) if not x.startswith(tuple(allowed))]
        if left:
            found[mod] = left
    assert found == {}


def test_the_checks_see_what_they_forbid():
    code = ast.parse(
        "class Vm(Native):\n"
        "    def end_vmm(self, inst):\n"
        "        Native._stop(self, inst)\n"
        "        super()._stop(inst)\n"
        "        self._stop(inst)\n"
        "        self.rt.vmm._readers.pop(inst.name)\n"
        "        Native.__init__(self)\n"
    )
    assert private_class_calls(code) == ["Native._stop(...) line 3"]
    assert foreign_privates(code) == ["Native._stop", "self.rt.vmm._readers"]
