"""A run's on-host state: a lock that says the run is alive, and a ledger of what it creates.

The lock is an flock on `/run/virtbench/locks/<run-id>.lock`, one fixed place whatever
VIRTBENCH_STATE_DIR says (a clean with another state directory must still see a live
run). A run takes it before it creates anything and holds it for its whole life; `clean`
takes a run's lock (without waiting) while it removes that run's objects, so it never
touches a run that is starting, running or being resumed, and a resume never starts
while a clean is removing its run's objects.

Every object is appended to the ledger *before* it is created, so after a crash
`virtbench clean` knows what to look for even where the name alone is not enough.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from virtbench.errors import VirtbenchError

LOCK_DIR = Path("/run/virtbench/locks")
HOST_LOCK = LOCK_DIR / "host.lock"  # every live run holds it shared; see `host_idle`


def lock_path(run_id: str) -> Path:
    return LOCK_DIR / f"{run_id}.lock"


def _take(run_id: str) -> int | None:
    """The run's lock, taken without waiting: its open descriptor, or None if another
    process holds it. A lock file removed by its holder between our open and our flock
    is opened again, so two holders never lock two different files."""
    LOCK_DIR.mkdir(parents=True, exist_ok=True)
    path = lock_path(run_id)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)  # its holder removed it on release: take the new one


def _release(fd: int, run_id: str) -> None:
    """Remove the lock file, then let go of it (in that order: see `_take`)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(lock_path(run_id))
    os.close(fd)


def is_alive(run_id: str) -> bool:
    """True when some process holds the run's lock (it is running, or being resumed or
    cleaned). Only looks: never takes the lock, never creates its file."""
    try:
        fd = os.open(lock_path(run_id), os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def live_runs() -> set[str]:
    """Run ids whose lock some process holds."""
    try:
        names = [p.name for p in LOCK_DIR.iterdir() if p.suffix == ".lock"]
    except FileNotFoundError:
        return set()
    return {n[: -len(".lock")] for n in names if is_alive(n[: -len(".lock")])}


@contextlib.contextmanager
def holding(run_id: str) -> Iterator[bool]:
    """Hold the run's lock for the block if nobody else does; yields whether it is held
    (False: the run is alive, or another clean has it: leave its objects alone)."""
    fd = _take(run_id)
    try:
        yield fd is not None
    finally:
        if fd is not None:
            _release(fd, run_id)


@contextlib.contextmanager
def host_idle() -> Iterator[bool]:
    """Hold the host lock exclusively for the block if no run holds it (every run holds
    it shared from before it creates anything to after it removed everything): yields
    whether no run is alive or starting, so that what runs share (the `virtbench`
    parent cgroups) can go without a starting run losing its parent under it."""
    LOCK_DIR.mkdir(parents=True, exist_ok=True)
    fd = os.open(HOST_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def recorded(run_dir: Path, *kinds: str) -> list[dict[str, Any]]:
    """The ledger's records of these kinds in `run_dir`, in the order written (none when
    there is no ledger; a line cut short by a crash is passed over)."""
    out = []
    with contextlib.suppress(OSError):
        for line in (run_dir / "ledger.jsonl").read_text().splitlines():
            with contextlib.suppress(ValueError, KeyError, TypeError):
                rec = json.loads(line)
                if rec["kind"] in kinds:
                    out.append(rec)
    return out


class RunState:
    """The directory `<state>/runs/<run-id>/` with `ledger.jsonl` and scratch space, and
    the run's lock."""

    def __init__(self, run_dir: Path) -> None:
        self.dir = run_dir
        self.run_id = run_dir.name
        self._lock_fd: int | None = None
        self._host_fd: int | None = None

    def open(self) -> RunState:
        """Take the run's lock, then create the directory: nothing of the run exists
        before its lock is held. Raises if another process holds it."""
        fd = _take(self.run_id)
        if fd is None:
            raise VirtbenchError(
                f"run {self.run_id} is in use by another virtbench (running, resumed or "
                "being cleaned): wait for it"
            )
        self._lock_fd = fd
        try:
            self._host_fd = os.open(HOST_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            fcntl.flock(self._host_fd, fcntl.LOCK_SH)  # a clean holds it for milliseconds
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self.close(remove=False)
            if exc.errno == errno.ENOSPC:
                raise VirtbenchError(f"{self.dir}: no space left on the device") from exc
            raise
        return self

    def record(self, kind: str, name: str, **extra: object) -> None:
        """Append one object to the ledger (call before creating it)."""
        line = json.dumps({"kind": kind, "name": name, "t": time.time(), **extra})
        with open(self.dir / "ledger.jsonl", "a", encoding="utf-8") as fh:
            fh.write(line + "\n")

    def close(self, remove: bool = True) -> None:
        """Delete the state directory (by default), then release the lock."""
        if remove:
            shutil.rmtree(self.dir, ignore_errors=True)
        if self._host_fd is not None:
            os.close(self._host_fd)
            self._host_fd = None
        if self._lock_fd is not None:
            _release(self._lock_fd, self.run_id)
            self._lock_fd = None
