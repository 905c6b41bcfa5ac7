"""One process helper: every external command and every stop goes through host/proc.py.

No module under src/ but host/proc.py imports subprocess, signals a process by its number
(os.kill, os.killpg, signal.pidfd_send_signal) or imports host/spawn.py (proc.py's own
posix_spawn half); no module but those two starts a process with the os module's calls
(os.posix_spawn, os.fork, os.system, os.exec*, ...). Each offence is named by file:line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import virtbench

SRC = Path(virtbench.__file__).parent
REPO = SRC.parent.parent
HELPER = "virtbench/host/proc.py"
SPAWN = "virtbench/host/spawn.py"

# (module, name) -> who may use it: a signal by pid only in the helper, a process
# started by the os module's calls in the helper and its posix_spawn half
SIGNALS = {("os", "kill"), ("os", "killpg"), ("signal", "pidfd_send_signal")}
STARTS = {("os", n) for n in ("system", "popen", "fork", "forkpty", "posix_spawn", "posix_spawnp")}
STARTS_BY_PREFIX = ("exec", "spawn")  # os.execv, os.execve, ..., os.spawnv, ...


def _forbidden(module: str, name: str, where: str) -> str | None:
    """Why `module.name` may not be used in the file `where` (relative to src/), or None."""
    if (module, name) in SIGNALS and where != HELPER:
        return f"{module}.{name}"
    started = (module, name) in STARTS or (module == "os" and name.startswith(STARTS_BY_PREFIX))
    if started and where not in (HELPER, SPAWN):
        return f"{module}.{name}"
    return None


def _imported(node: ast.Import | ast.ImportFrom) -> list[tuple[str, str]]:
    """(module, name) of each name an import binds: `import a.b` -> (a.b, ""),
    `from a import b` -> (a, b)."""
    if isinstance(node, ast.Import):
        return [(a.name, "") for a in node.names]
    return [(node.module or "", a.name) for a in node.names] if not node.level else []


def _import_offence(module: str, name: str, where: str) -> str | None:
    """What is wrong with importing `name` of `module` (`name` "" for the module itself)
    in the file `where`, or None."""
    whole = f"{module}.{name}" if name else module
    if module.split(".")[0] == "subprocess" and where != HELPER:
        return f"imports {whole}"
    if whole == "virtbench.host.spawn" or module == "virtbench.host.spawn":
        return None if where == HELPER else f"imports {whole}"
    if name and (why := _forbidden(module, name, where)):
        return f"imports {why}"
    return None


def _bound(tree: ast.AST) -> dict[str, str]:
    """The names the module's `import` statements bind, each to its module: `import os`
    -> os: os, `import os as o` -> o: os, `import os.path` -> os: os."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                top = a.name.split(".")[0]
                bound[a.asname or top] = a.name if a.asname else top
    return bound


def _imports_by_name(node: ast.AST) -> bool:
    """Whether `node` is `__import__("subprocess")` or `import_module("subprocess")`."""
    if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in ("__import__", "import_module") and node.args[0].value == "subprocess"


def offences(path: Path, where: str) -> list[str]:
    """Each way the module at `path` (`where`: its path relative to src/) starts or
    signals a process other than through host/proc.py, as "file:line: what"."""
    tree = ast.parse(path.read_text())
    bound = _bound(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            found += [
                (node.lineno, why)
                for m, n in _imported(node)
                if (why := _import_offence(m, n, where))
            ]
        elif _imports_by_name(node) and where != HELPER:
            found.append((node.lineno, "imports subprocess"))
        # os.kill(...), but also (os.kill if a else os.killpg)(...) and f = o.kill
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            module = bound.get(node.value.id)
            if module is not None and (why := _forbidden(module, node.attr, where)):
                found.append((node.lineno, f"uses {why}"))
    return [f"src/{where}:{line}: {why}" for line, why in sorted(found)]


def every_offence() -> list[str]:
    """The offences of every module under src/."""
    return [
        o
        for path in sorted(SRC.rglob("*.py"))
        for o in offences(path, path.relative_to(SRC.parent).as_posix())
    ]


def test_only_host_proc_imports_subprocess_starts_or_signals_a_process():
    found = every_offence()
    assert found == [], "host/proc.py is the one process helper:\n" + "\n".join(found)


def test_the_helper_is_where_the_check_looks():
    # the check is of real code: the helper itself would be caught anywhere else
    helper = SRC / "host" / "proc.py"
    said = offences(helper, "virtbench/elsewhere.py")
    assert any("imports subprocess" in s for s in said)
    assert any("uses os.killpg" in s for s in said) and any("uses os.kill" in s for s in said)
    assert offences(helper, HELPER) == []
    assert offences(SRC / "host" / "spawn.py", SPAWN) == []


def test_the_check_names_every_way_round_it_by_file_and_line(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import os\n"  # 1
        "import os as o\n"
        "import subprocess\n"
        "from subprocess import run\n"
        "from os import killpg\n"  # 5
        "from virtbench.host import spawn\n"
        "import importlib\n"
        "m = importlib.import_module('subprocess')\n"
        "os.kill(1, 9)\n"
        "(os.kill if m else o.killpg)(1, 9)\n"  # 10
        "os.posix_spawn('/bin/true', ['true'], {})\n"
        "os.execv('/bin/true', ['true'])\n"
        "import signal\n"
        "signal.pidfd_send_signal(3, 9)\n"
        "os.getpid()\n"  # 15: fine
    )
    where = "virtbench/runtimes/bad.py"
    assert offences(bad, where) == [
        f"src/{where}:3: imports subprocess",
        f"src/{where}:4: imports subprocess.run",
        f"src/{where}:5: imports os.killpg",
        f"src/{where}:6: imports virtbench.host.spawn",
        f"src/{where}:8: imports subprocess",
        f"src/{where}:9: uses os.kill",
        f"src/{where}:10: uses os.kill",
        f"src/{where}:10: uses os.killpg",
        f"src/{where}:11: uses os.posix_spawn",
        f"src/{where}:12: uses os.execv",
        f"src/{where}:14: uses signal.pidfd_send_signal",
    ]
    # host/spawn.py may start a process, nothing else of the list
    assert offences(bad, SPAWN) == [
        f"src/{SPAWN}:3: imports subprocess",
        f"src/{SPAWN}:4: imports subprocess.run",
        f"src/{SPAWN}:5: imports os.killpg",
        f"src/{SPAWN}:6: imports virtbench.host.spawn",
        f"src/{SPAWN}:8: imports subprocess",
        f"src/{SPAWN}:9: uses os.kill",
        f"src/{SPAWN}:10: uses os.kill",
        f"src/{SPAWN}:10: uses os.killpg",
        f"src/{SPAWN}:14: uses signal.pidfd_send_signal",
    ]
