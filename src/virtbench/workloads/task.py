"""`task`: an instance that idles (as `sleep`) until it is asked to do an agent's step on a
real project, through the runtime's own way in: clone a git repository, create a virtual
environment, install the project and its tests' dependencies from local wheels, run its
tests (guest/vb-task.py, the `task` experiment's command; no network).

The artifact holds Debian's Python (its interpreter, with the libraries it and its
extension modules load, and its standard library but for its own tests and tools) and
git, the same bytes in every runtime, and under /task the runner, the project's git bundle
and its wheels (workloads/task_source.py). The work happens in the instance's data
directory (/data: a directory on the host's disk, a VM's own disk), as an agent's
checkout would.
"""

from __future__ import annotations

import glob
import os
import platform
import re
from dataclasses import dataclass

from virtbench.paths import Paths
from virtbench.workloads.kind import Needs, Workload
from virtbench.workloads.sleep import argv as sleep_argv

PYTHON = "/usr/bin/python3"
GIT = "/usr/bin/git"
TASK_DIR = "/task"
WORK_DIR = "/data/task"
RUNNER = "vb-task.py"
# of the standard library: its own tests and tools no step imports, and the static
# library to embed it (a third of it)
SKIP = ("test", "idlelib", "tkinter", "turtledemo", "lib2to3", "pydoc_data", "ensurepip")


def python_version(python: str = PYTHON) -> str:
    """The version ("3.11") of the host's Debian Python, by its file name (python3 ->
    python3.11); "3" where it is not installed (the artifact build then says so)."""
    real = os.path.basename(os.path.realpath(python))
    found = re.fullmatch(r"python(\d+\.\d+)", real)
    return found.group(1) if found else "3"


VERSION = python_version()
STDLIB = f"/usr/lib/python{VERSION}"


def extension_modules() -> tuple[str, ...]:
    """The standard library's extension modules (lib-dynload): copied as binaries, so
    the libraries they load come along."""
    return tuple(sorted(glob.glob(f"{STDLIB}/lib-dynload/*.so")))


def command() -> list[str]:
    """The task's command in an instance: paths inside it (native maps them to the
    artifact's)."""
    runner = f"{TASK_DIR}/{RUNNER}"
    return [PYTHON, runner, f"--task={TASK_DIR}", f"--work={WORK_DIR}", f"--git={GIT}"]


def payload() -> dict[str, str | bytes]:
    """/task: the runner, the project's bundle, its wheels and its tests' requirements
    (fetched once: workloads/task_source.py)."""
    from virtbench.workloads import task_source

    paths = Paths.from_env()
    src = task_source.fetch(paths.cache, VERSION)
    out: dict[str, str | bytes] = {
        f"task/{RUNNER}": (paths.guest_src / RUNNER).read_text(),
        "task/project.bundle": (src / "project.bundle").read_bytes(),
        "task/requirements": (src / "requirements").read_text(),
    }
    for wheel in sorted((src / "wheels").iterdir()):
        out[f"task/wheels/{wheel.name}"] = wheel.read_bytes()
    return out


@dataclass(frozen=True)
class Step:
    """One step the runner reported: its name, exit status and time in the instance."""

    name: str
    status: int
    ms: float


@dataclass(frozen=True)
class Report:
    """What the runner printed: its steps in order, and its last line's verdict ("0" or
    "failed:<step>"), the work directory's file system and the tests that passed."""

    steps: tuple[Step, ...]
    status: str
    fs: str
    passed: int

    @property
    def ok(self) -> bool:
        return self.status == "0"


def parse(out: str) -> Report | None:
    """The runner's report from its standard output's tail (None: it printed none)."""
    steps = tuple(
        Step(m.group(1), int(m.group(2)), float(m.group(3)))
        for m in re.finditer(r"^vb-task step=(\w+) status=(-?\d+) ms=([\d.]+)$", out, re.M)
    )
    done = re.search(r"^vb-task done status=(\S+) ms=[\d.]+ fs=(\S+) passed=(\d+)$", out, re.M)
    if done is None:
        return None
    return Report(steps, done.group(1), done.group(2), int(done.group(3)))


WORKLOAD = Workload(
    "task",
    "ready",
    sleep_argv,
    "idles until asked to clone, install and test a real Python project (the task experiment)",
    needs=Needs(
        static_programs=("vb-sleep",),
        host_binaries=(PYTHON, GIT, *extension_modules()),
        host_dirs=(STDLIB,),
        skip=(*SKIP, f"config-{VERSION}-{platform.machine()}-linux-gnu"),
        files=payload,
        data=True,
    ),
    order=180,
)
