"""Daemons a run starts for its runtimes (dockerd, lxd), and stops again.

A runtime that needs an engine daemon asks `Daemons.ensure`: if the daemon already
answers, the run uses it and leaves it alone; otherwise the run starts it (recorded in
the ledger first, with its pid and start time, so `virtbench clean` can stop it after a
crash), waits until it answers, and stops it at the end of the run -- TERM, then KILL to
its process group. PID 1 here is not an init that starts services, so this is how any
engine gets started at all.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from virtbench.errors import RuntimeUnavailable
from virtbench.host import proc

if TYPE_CHECKING:
    from virtbench.host.state import RunState


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22), which
    together with the pid identifies it even after the pid is reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


@dataclass(frozen=True)
class Daemon:
    """A daemon a runtime needs: how to tell it answers, how to start it, how long to wait
    for it and for its end, and what to undo after it stopped."""

    name: str
    is_up: Callable[[], bool]
    argv: Sequence[str]
    ready_timeout: float = 60.0
    stop_timeout: float = 30.0
    env: dict[str, str] | None = None
    after_stop: Callable[[], None] | None = None


@dataclass
class Started:
    """A daemon this run started: its process and its log."""

    daemon: Daemon
    popen: proc.Popen
    log: Path


class Daemons:
    """The daemons one run started, stopped in reverse order by `close`."""

    def __init__(self, state: RunState) -> None:
        self.state = state
        self.started: dict[str, Started] = {}

    def ensure(self, daemon: Daemon) -> bool:
        """Make sure `daemon` answers; start it if it does not. True if this run started
        it (and so will stop it)."""
        name, argv, ready_timeout = daemon.name, daemon.argv, daemon.ready_timeout
        if name in self.started or daemon.is_up():
            return name in self.started
        log = self.state.dir / f"daemon-{name}.log"
        self.state.record("daemon", name, argv=list(argv))
        with open(log, "ab") as fh:
            popen = proc.spawn(argv, stdout=fh.fileno(), stderr=fh.fileno(), env=daemon.env)
        self.state.record("daemon-pid", name, pid=popen.pid, start=start_time(popen.pid))
        self.started[name] = Started(daemon, popen, log)
        deadline = time.monotonic() + ready_timeout
        while not daemon.is_up():
            if popen.poll() is not None or time.monotonic() > deadline:
                tail = _tail(log)
                exited = popen.returncode is not None
                self.stop(name)
                why = "exited" if exited else f"no answer in {ready_timeout:g} s"
                raise RuntimeUnavailable(f"{name} {why}: {tail}")
            time.sleep(0.05)
        return True

    def pids(self, name: str) -> list[int]:
        """The processes of daemon `name` if this run started it: the daemon and what
        shares its process group (a containerd it spawned); none otherwise."""
        d = self.started.get(name)
        if d is None or d.popen.poll() is not None:
            return []
        import psutil

        out = []
        for pid in psutil.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if os.getpgid(pid) == d.popen.pid:
                    out.append(pid)
        return out

    def gone(self, name: str, grace: float = 0.0) -> str | None:
        """Why daemon `name`, which this run started, is no longer there ("dockerd (pid
        12), started by this run, killed by SIGKILL mid-run: <its log's last lines>"), or
        None while it runs (or when this run did not start it). `grace`: seconds to wait
        for its end (a killed daemon stops answering a moment before it can be reaped)."""
        d = self.started.get(name)
        if d is None:
            return None
        if d.popen.poll() is None:
            if grace <= 0:
                return None
            try:
                d.popen.wait(timeout=grace)
            except proc.TimeoutExpired:
                return None
        how = proc.describe_status(d.popen.returncode)
        tail = _tail(d.log, 1) if d.popen.returncode > 0 else ""  # killed: the log knows not why
        return f"{name} (pid {d.popen.pid}), started by this run, {how} mid-run" + (
            f": {tail}" if tail else ""
        )

    def restart(self, name: str) -> None:
        """Start again a daemon of this run that died: what it left of its own process
        group (a containerd) is ended first, then the same argv is started and waited
        for, as `ensure` did the first time."""
        d = self.started[name]
        self.stop(name)
        self.ensure(d.daemon)

    def stop(self, name: str) -> None:
        """Stop a daemon this run started: TERM, wait, then KILL its process group."""
        d = self.started.pop(name, None)
        if d is None:
            return
        # TERM to the daemon alone, which stops what it started; then KILL to its group,
        # where children it left (e.g. a containerd it spawned) are
        proc.stop(d.popen, grace=0, leader_grace=d.daemon.stop_timeout, rest=True, reap=10)
        if d.daemon.after_stop is not None:
            d.daemon.after_stop()

    def close(self) -> None:
        for name in reversed(list(self.started)):
            self.stop(name)


def stop_recorded(pid: int, start: int | None) -> bool:
    """Stop a daemon a crashed run started, if that very process still runs. True if it did."""
    if start is None or not proc.signal_pid(pid, signal.SIGTERM, lambda p: start_time(p) == start):
        return False
    deadline = time.monotonic() + 30
    while start_time(pid) == start and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.signal_group(pid, signal.SIGKILL)  # what is left of its group (a containerd)
    return True


def _tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])
