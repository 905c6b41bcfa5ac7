"""What a cell of the fault matrix (bench/faults.py) is made of: its record (`Cell`),
`virtbench run` in the background in the cell's state and results (`Run`), the store
read back without virtbench (samples, status), the run's instances read from sysfs, and
the recovery a run's output tells a user to make (`clean --run`, `run --resume`), with
what each said when it failed.
"""

from __future__ import annotations

import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

VIRTBENCH = [sys.executable, "-m", "virtbench.cli"]
STARTED = re.compile(r"run ([a-z0-9]{6}) (started|resumed)")


@dataclass
class Cell:
    """One fault on one runtime: objects left by kind, samples lost, what happened."""

    left: Counter[str] = field(default_factory=Counter)
    lost: int = 0
    kept: int = 0
    notes: list[str] = field(default_factory=list)
    skipped: str = ""
    before: set[tuple] = field(default_factory=set)  # samples stored when the fault struck
    after: set[tuple] = field(default_factory=set)  # and after recovery
    others: list[str] = field(default_factory=list)  # runs next to it (overlap)

    def text(self) -> str:
        if self.skipped:
            return f"n/a ({self.skipped})"
        objs = sum(self.left.values())
        what = ", ".join(f"{n} {k}" for k, n in sorted(self.left.items()))
        return f"{objs} left{f' ({what})' if what else ''} / {self.lost} lost of {self.kept}"


class Run:
    """`virtbench run ...` in the background, in one cell's state and results."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.env = env
        self.p = subprocess.Popen(
            [*VIRTBENCH, "run", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            process_group=0,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        seen = ""
        assert self.p.stdout is not None
        while not (m := STARTED.search(seen)):
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError(f"virtbench run {' '.join(args)}: {seen[-600:]}")
            seen += line
        self.rid = m.group(1)
        self.output = seen

    def finish(self, timeout: float = 900) -> int:
        out, _ = self.p.communicate(timeout=timeout)
        self.output += out
        return self.p.returncode


def cli(env: dict[str, str], *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*VIRTBENCH, *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def samples(results: Path, rid: str) -> set[tuple]:
    """The run's stored samples, each by what identifies it."""
    db = results / "virtbench.sqlite"
    if not db.exists():
        return set()
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=60)
    try:
        q = (
            "SELECT experiment, runtime, repetition, metric, t, value, error FROM samples "
            "WHERE run_id = ?"
        )
        return set(con.execute(q, (rid,)).fetchall())
    except sqlite3.OperationalError:
        return set()
    finally:
        con.close()


def status(results: Path, rid: str) -> str:
    con = sqlite3.connect(f"file:{results / 'virtbench.sqlite'}?mode=ro", uri=True, timeout=60)
    try:
        row = con.execute("SELECT status FROM runs WHERE id = ?", (rid,)).fetchone()
        return row[0] if row else "missing"
    finally:
        con.close()


def instances_up(rid: str) -> set[str]:
    """Names of the run's instances with a cgroup (memory hierarchy), read from sysfs."""
    found = set()
    for root in (Path("/sys/fs/cgroup/memory/virtbench"), Path("/sys/fs/cgroup/virtbench")):
        if root.is_dir():
            found |= {d.name for d in root.glob(f"vb-{rid}-*") if d.name[-4:].isdigit()}
    return found


def wait_for(what: str, ok: Callable[[], bool], run: Run, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not ok():
        if run.p.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{what}: never happened ({run.output[-400:]})")
        time.sleep(0.1)


def lost(before: set[tuple], after: set[tuple]) -> int:
    """Samples stored before that are gone, not counting those of a (runtime,
    repetition, experiment) unit measured again whole (the resume replaced them)."""
    redone = {(s[0], s[1], s[2]) for s in after - before}
    return len([s for s in before - after if (s[0], s[1], s[2]) not in redone])


def resume(env: dict[str, str], results: Path, rid: str, cell: Cell) -> None:
    if status(results, rid) == "completed":
        return
    res = cli(env, "run", "--resume", rid)
    st = status(results, rid)
    if res.returncode != 0 or st != "completed":
        cell.notes.append(
            f"resume: exit {res.returncode}, {st}: {(res.stderr or res.stdout).strip()[-300:]}"
        )


def density_args(runtime: str, n: int) -> list[str]:
    return [
        "density",
        "--runtimes",
        runtime,
        "--instances",
        str(n),
        "--runs",
        "1",
        "--instances-per-benchmark",
        "5",
    ]


def clean(env: dict[str, str], rid: str, cell: Cell) -> None:
    res = cli(env, "clean", "--run", rid)
    if res.returncode != 0:
        cell.notes.append(f"clean: exit {res.returncode}: {res.stdout.strip()[-300:]}")
