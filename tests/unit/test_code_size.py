"""The formatter lays the code out: no formatter-skip marker anywhere (src, tests,
bench), and a limit (a function of 60 lines, a module of 400) is met by splitting along a
seam, never by packing lines."""

from __future__ import annotations

import ast
from pathlib import Path

import virtbench

REPO = Path(virtbench.__file__).parent.parent.parent
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 400
SKIP = "# fmt: " + "skip"  # the marker, spelt so that this file holds none


def oversized(paths: list[Path]) -> list[str]:
    """Modules over MAX_MODULE_LINES lines and functions over MAX_FUNCTION_LINES (from
    their first decorator), and every formatter-skip marker (SKIP)."""
    found = []
    for path in paths:
        text = path.read_text()
        if SKIP in text:
            found.append(f"{path}: a '{SKIP}' marker")
        if (n := len(text.splitlines())) > MAX_MODULE_LINES:
            found.append(f"{path}: {n} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([d.lineno for d in node.decorator_list] + [node.lineno])
                if (n := (node.end_lineno or first) - first + 1) > MAX_FUNCTION_LINES:
                    found.append(f"{path}:{node.lineno} {node.name}: {n} lines")
    return found


def test_no_module_or_function_passes_its_size_and_none_is_hand_packed(tmp_path):
    code = [p for d in ("src", "tests", "bench") for p in sorted((REPO / d).rglob("*.py"))]
    assert len(code) > 250 and oversized(code) == []
    packed = tmp_path / "p.py"
    body = "\n".join(f"    x{i} = {i}" for i in range(61))
    packed.write_text(f"def f():\n{body}\n\n\ny = [1, 2]  {SKIP}\n")
    assert oversized([packed]) == [
        f"{packed}: a '{SKIP}' marker",
        f"{packed}:1 f: 62 lines",
    ]
