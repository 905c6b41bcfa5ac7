"""A figure is a value declared once: each metric's name is written in one place in src/
(its declaration), samples are made through the declaration (so its unit and direction
are never retyped), and no declaration is left that no code uses."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest

import virtbench
from virtbench import metrics
from virtbench.figure import Metric

ROOT = Path(virtbench.__file__).parent
# a workload figure named by a plain word ("tps", "errors", "failed") is an ordinary word
# elsewhere too (a run's status, a verdict): it is looked for where workloads' figures are
PLAIN_WORDS_IN = ("workloads/",)
# where a Sample is made field by field: the store reading rows back, a worker's figure
# parsed from its client's output (its unit and direction as its constant declared them)
SAMPLES_MADE_IN = {"figure/__init__.py", "store/core.py", "store/frame.py", "experiments/worker.py"}


def sources() -> dict[str, ast.Module]:
    return {str(p.relative_to(ROOT)): ast.parse(p.read_text()) for p in sorted(ROOT.rglob("*.py"))}


# a declaration's unit may be a plain word that is also a figure's name ("errors")
UNIT_AT = {"Metric": 1, "pile_metric": 1, "swept": 2, "declared": 2}


def _units(tree: ast.Module) -> set[int]:
    """The nodes of `tree` that are a declaration's unit."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            at = UNIT_AT.get(node.func.id)
            if at is not None and len(node.args) > at:
                out.add(id(node.args[at]))
    return out


def literals(trees: dict[str, ast.Module]) -> Counter[str]:
    """How often each string is written as a literal in src/, a plain word only where
    PLAIN_WORDS_IN says and not as a declaration's unit."""
    found: Counter[str] = Counter()
    for path, tree in trees.items():
        units = _units(tree)
        for node in ast.walk(tree):
            if id(node) in units:
                continue
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                word = node.value.isalpha()
                if not word or path.startswith(PLAIN_WORDS_IN):
                    found[node.value] += 1
    return found


def test_every_metric_name_is_written_once_where_it_is_declared():
    declared = Counter(m.name for m in metrics.registry())
    written = literals(sources())
    wrong = {name: written[name] for name, n in declared.items() if written[name] != n}
    assert wrong == {}, "written more (or less) often than declared"


def test_the_count_sees_a_name_written_twice():
    trees = {
        "experiments/x.py": ast.parse('A = Metric("x.a", "ms")\nB = "x.a"\nC = "failed"'),
        "workloads/y.py": ast.parse('D = "failed"\nE = swept("y", "errors", "errors", "lower")'),
    }
    found = literals(trees)
    assert found["x.a"] == 2 and found["failed"] == 1 and found["errors"] == 1


def test_samples_are_made_through_their_figure():
    """No `Sample(...)` outside SAMPLES_MADE_IN: elsewhere a sample comes from its
    declaration (`FIGURE.sample(value, ...)`), its unit and direction with it."""
    made = [
        f"{path}:{node.lineno}"
        for path, tree in sources().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Sample"
        and path not in SAMPLES_MADE_IN
    ]
    assert made == []


def _declared_constants(tree: ast.Module) -> dict[str, int]:
    """A module's UPPER_CASE names assigned a call at its top level, with their lines."""
    return {
        t.id: stmt.lineno
        for stmt in tree.body
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call)
        for t in stmt.targets
        if isinstance(t, ast.Name) and t.id.isupper()
    }


def _used(trees: dict[str, ast.Module]) -> Counter[str]:
    """How often each name is read in src/, but in a tuple of declarations (METRICS)."""
    used: Counter[str] = Counter()
    for tree in trees.values():
        skip = {
            id(n)
            for stmt in tree.body
            if isinstance(stmt, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id.endswith("METRICS") for t in stmt.targets)
            for n in ast.walk(stmt)
        }
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                used[node.id] += 1
            elif isinstance(node, ast.Attribute):
                used[node.attr] += 1
    return used


def test_nothing_is_declared_that_no_code_uses():
    """Each figure an experiment type declares as a constant is read somewhere besides
    its tuple of declarations (recorded, answered, drawn): but families (patterns), fits
    (computed when read) and what only earlier virtbench runs stored."""
    import importlib

    trees = sources()
    used = _used(trees)
    old = {"density.host_per_instance"}
    unused = []
    for path, tree in trees.items():
        if not path.startswith("experiments/"):
            continue
        module = importlib.import_module("virtbench." + path[:-3].replace("/", "."))
        for name, line in _declared_constants(tree).items():
            m = getattr(module, name)
            if not isinstance(m, Metric) or m.is_pattern or m.summary == "fit" or m.name in old:
                continue
            if used[name] == 0:
                unused.append(f"{path}:{line} {name}")
    assert unused == []


@pytest.mark.parametrize("name", ["latency_p*", "boot.*"])
def test_a_family_member_and_a_level_are_values_of_the_declaration(name):
    family = Metric(name, "ms", "lower", "x")
    member = family.of("99")
    assert member.name == name.replace("*", "99") and member.unit == "ms"
    assert member.at(16).name == member.name + "@16" and member.at(None) is member
    smp = member.at(16).sample(1.5, experiment="e", runtime="r", workload="w", repetition=0)
    assert (smp.metric, smp.unit, smp.direction) == (member.name + "@16", "ms", "lower")
    with pytest.raises(ValueError, match="family"):
        family.sample(1.0)
    with pytest.raises(ValueError, match="parts"):
        family.of("1", "2")
