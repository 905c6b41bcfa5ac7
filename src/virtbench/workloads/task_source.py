"""The `task` workload's project: a real Python project as a git repository, and every wheel
its install and its tests need, fetched from PyPI once and kept in the cache.

The project is Flask 3.0.3's source distribution (231 files: the package, its tests,
docs and examples), committed into a fresh git repository (fixed author and date, so the
bundle is the same bytes every time) and written as a git bundle. Its wheels, pinned
below, are those of the guest's Python (Debian's `python3`: 3.11 on Debian 12, 3.13 on
13; MarkupSafe is the one built for a version). Kept under
`<cache>/task/<project>-cp<version>/`: `project.bundle`, `wheels/`, `requirements` (what
its tests install besides the project); written once, whole (a temporary directory
renamed), and reused by every artifact built after.
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
import tarfile
from pathlib import Path

from virtbench.errors import VirtbenchError
from virtbench.host import proc

PROJECT = ("flask", "3.0.3")
# the project's own dependencies, its build backend, pip itself (run from its wheel),
# and its tests' (its requirements/tests.txt): pinned, as a lock file would
WHEELS = (
    "pip==24.2",
    "flit_core==3.9.0",
    "werkzeug==3.0.4",
    "jinja2==3.1.4",
    "itsdangerous==2.2.0",
    "click==8.1.7",
    "blinker==1.8.2",
    "markupsafe==3.0.2",
    "pytest==8.3.3",
    "pluggy==1.5.0",
    "iniconfig==2.0.0",
    "packaging==24.1",
    "asgiref==3.8.1",
    "python-dotenv==1.0.1",
)
TEST_REQUIREMENTS = ("pytest", "asgiref", "python-dotenv")
COMMIT_DATE = "2024-04-07T00:00:00Z"  # Flask 3.0.3's release


def fetch(cache: Path, python: str) -> Path:
    """The project's directory for the guest's Python `python` ("3.11"), fetched from
    PyPI (through this environment's pip) unless the cache has it; VirtbenchError naming
    what failed and what to do."""
    name, version = PROJECT
    final = cache / "task" / f"{name}-{version}-cp{python.replace('.', '')}"
    if (final / "requirements").is_file():
        return final
    tmp = final.with_name(f"{final.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "wheels").mkdir(parents=True)
    try:
        sdist = _download(tmp, python)
        _bundle(sdist, tmp / "project.bundle")
        sdist.unlink()
        (tmp / "requirements").write_text(" ".join(TEST_REQUIREMENTS) + "\n")
        os.replace(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def _download(into: Path, python: str) -> Path:
    """The project's sdist (into `into`) and the wheels (into `into`/wheels)."""
    pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps"]
    pip += ["--disable-pip-version-check"]
    name, version = PROJECT
    wheels = ["--only-binary", ":all:", "--python-version", python, "--implementation", "cp"]
    wheels += ["--abi", f"cp{python.replace('.', '')}"]
    wheels += ["--platform", f"manylinux2014_{platform.machine()}"]
    for argv in (
        [*pip, "--no-binary", ":all:", "-d", str(into), f"{name}=={version}"],
        [*pip, *wheels, "-d", str(into / "wheels"), *WHEELS],
    ):
        res = proc.run(argv, check=False, timeout=600)
        if res.returncode != 0:
            said = (res.stderr.strip().splitlines() or ["no output"])[-1]
            raise VirtbenchError(
                f"the task's project ({name} {version} and its wheels) could not be fetched "
                f"from PyPI: {said}: it is fetched once, into {into.parent}; run where PyPI "
                "is reachable"
            )
    found = sorted(into.glob(f"{name}-{version}.tar.gz"))
    if not found:
        raise VirtbenchError(f"pip download left no {name}-{version}.tar.gz in {into}")
    return found[0]


def _bundle(sdist: Path, bundle: Path) -> None:
    """The sdist's tree, committed into a fresh repository, as a git bundle."""
    work = sdist.parent / "repo"
    with tarfile.open(sdist) as tar:
        tar.extractall(work, filter="data")
    (top,) = list(work.iterdir())
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(work),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "virtbench",
        "GIT_AUTHOR_EMAIL": "virtbench@localhost",
        "GIT_AUTHOR_DATE": COMMIT_DATE,
        "GIT_COMMITTER_NAME": "virtbench",
        "GIT_COMMITTER_EMAIL": "virtbench@localhost",
        "GIT_COMMITTER_DATE": COMMIT_DATE,
    }
    for argv in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "add", "-A"],
        ["git", "commit", "-q", "-m", top.name],
        ["git", "bundle", "create", "-q", str(bundle), "--all"],
    ):
        proc.run(argv, cwd=top, env=env, timeout=120, what=f"git {argv[1]}")
    shutil.rmtree(work)
