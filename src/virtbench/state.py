"""A run's on-host state: a lock that says the run is alive, and a ledger of what it creates.

Every object is appended to the ledger *before* it is created, so after a crash
`virtbench clean` knows what to look for even where the name alone is not enough.
The lock is an flock held for the life of the run; clean skips runs whose lock is held.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from pathlib import Path


class RunState:
    """The directory `<state>/runs/<run-id>/` with `lock`, `ledger.jsonl` and scratch space."""

    def __init__(self, run_dir: Path) -> None:
        self.dir = run_dir
        self.run_id = run_dir.name
        self._lock_fd: int | None = None

    def open(self) -> RunState:
        """Create the directory and take the run's lock."""
        self.dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.dir / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_fd = fd
        return self

    def record(self, kind: str, name: str, **extra: object) -> None:
        """Append one object to the ledger (call before creating it)."""
        line = json.dumps({"kind": kind, "name": name, "t": time.time(), **extra})
        with open(self.dir / "ledger.jsonl", "a", encoding="utf-8") as fh:
            fh.write(line + "\n")

    def close(self, remove: bool = True) -> None:
        """Release the lock and (by default) delete the state directory."""
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
        if remove:
            shutil.rmtree(self.dir, ignore_errors=True)


def is_alive(run_dir: Path) -> bool:
    """True when some process holds the run's lock (the run is still going)."""
    lock = run_dir / "lock"
    if not lock.exists():
        return False
    fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
