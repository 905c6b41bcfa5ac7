"""Quiescence: every timed launch starts from a quiet host.

Before a timed launch the host must be quiet: the previous instance fully gone (its
runtime's delete returned, its cgroups removed, and the supervisors that linger after a
removal, such as a container shim, exited) and no task runnable on any CPU but the one
asking, for a short window. The kernel's own clean-up of the previous instance (network
and mount namespaces torn down by kworkers, cgroup release) shows up as runnable tasks, so
it is waited for rather than measured as part of the next launch.

The window is two RCU grace periods, measured before the run (`membarrier`, which returns
after one: 8-16 ms here): the kernel tears a network namespace down in the background
over several grace periods, holding the lock a new one needs, so a launch that creates
one right after an instance with its own network was removed would wait for that
teardown (measured here: native `hello` 1.48 ms after runc and 1.22 ms after crun with a
3 ms window; 1.48 and 1.56 with 15 ms). It is polled (every millisecond, from
/proc/stat's `procs_running`) rather than slept: a runnable task restarts it.

Why a rest alone would not do: moving a task between cgroups (every launch does) takes a
lock whose writer waits for a grace period unless another migration ran within the last
one; so after any rest a launch is slower (native `hello` 0.7 ms back to back, 6-15 ms
after 50-200 ms of rest), and after a slow predecessor slower than after a fast one.
`Primer` makes that lock's state, and how recently a process was started, the same
before every launch.

Other work on the host (a task that keeps a CPU busy) is measured before the run
(`Quiet.calibrate`): the quiet window then allows that many runnable tasks, so a run on a
loaded host is not stalled, and every sample measured while more than the reader itself
was runnable carries `load` > 0 (flagged in `show`, `compare` and the report).
"""

from __future__ import annotations

import ctypes
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from virtbench.host import cgroups, proc

WINDOW_S = 0.015  # quiet for this long before a timed launch (until calibrated)
MIN_WINDOW_S, MAX_WINDOW_S = 0.003, 0.05
GRACE_PERIODS = 2  # a network namespace's teardown waits for several (see above)
STEP_S = 0.001  # polled this often (keeps the asking CPU awake; see above)
TIMEOUT_S = 1.0  # at most this long; the sample is then flagged as taken under load
CALIBRATE_S = 0.5  # how long the host is watched before the run


def grace_period_s(tries: int = 3) -> float | None:
    """How long an RCU grace period takes here (the median of `tries`): membarrier's
    MEMBARRIER_CMD_GLOBAL returns after one. None where the kernel refuses it."""
    if platform.machine() != "x86_64":
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    times = []
    for _ in range(tries):
        t0 = time.monotonic()
        if libc.syscall(324, 1, 0, 0) != 0:  # __NR_membarrier, MEMBARRIER_CMD_GLOBAL
            return None
        times.append(time.monotonic() - t0)
    return statistics.median(times)


def procs_running(path: str = "/proc/stat") -> int:
    """Tasks runnable right now on all CPUs, the reader included (kernel's nr_running)."""
    with open(path, "rb") as fh:
        for line in fh:
            if line.startswith(b"procs_running"):
                return int(line.split()[1])
    raise OSError(f"{path}: no procs_running line")


@dataclass(frozen=True)
class Wait:
    """How one quiet wait went: `waited_ms` until the window was quiet (or the timeout),
    `quiet` whether it was reached, `load` the most runnable tasks besides the reader
    seen in the last window (0: nothing else ran)."""

    waited_ms: float
    quiet: bool
    load: int

    def params(self) -> dict[str, float | int | bool]:
        """What every timed sample records of its wait."""
        return {"quiet_wait_ms": round(self.waited_ms, 3), "quiet": self.quiet, "load": self.load}


@dataclass
class Quiet:
    """Waits for a quiet host. `running` and `settled` are seams: the count of runnable
    tasks (default /proc/stat) and whether the previous instances are fully gone (the
    runtimes' lingering supervisors exited); tests inject both."""

    running: Callable[[], int] = procs_running
    settled: Callable[[], bool] = lambda: True
    window_s: float = WINDOW_S
    step_s: float = STEP_S
    timeout_s: float = TIMEOUT_S
    background: int = 0  # runnable tasks of other work seen before the run (calibrate)
    enabled: bool = True
    prime: Callable[[], None] = lambda: None  # right before the launch (Primer.prime)

    def calibrate(
        self, seconds: float = CALIBRATE_S, grace: Callable[[], float | None] = grace_period_s
    ) -> int:
        """Before the run: the window becomes one grace period (`grace`, bounded), and the
        fewest runnable tasks besides the reader seen over `seconds` is other work that
        will not go away by waiting."""
        gp = grace()
        if gp is not None:
            self.window_s = min(MAX_WINDOW_S, max(MIN_WINDOW_S, GRACE_PERIODS * gp))
        end = time.monotonic() + seconds
        least = None
        while time.monotonic() < end:
            n = max(0, self.running() - 1)
            least = n if least is None else min(least, n)
            time.sleep(self.step_s)
        self.background = least or 0
        return self.background

    def wait(self) -> Wait:
        """Until the previous instances are gone and no more than the reader (plus the
        calibrated background) was runnable for `window_s`, at most `timeout_s`."""
        t0 = time.monotonic()
        if not self.enabled:
            return Wait(0.0, True, 0)
        since: float | None = None
        peak = 0  # most other runnable tasks in the current window
        while True:
            now = time.monotonic()
            others = max(0, self.running() - 1)
            if others > self.background or not self.settled():
                since, peak = None, others
            else:
                if since is None:
                    since, peak = now, others
                peak = max(peak, others)
                if now - since >= self.window_s:
                    return Wait((now - t0) * 1e3, True, peak)
            if now - t0 >= self.timeout_s:
                return Wait((now - t0) * 1e3, False, max(peak, others))
            time.sleep(self.step_s)


WARM_PROGRAM = "/bin/true"


class Primer:
    """Puts the host in the same state before every launch: the kernel's cgroup migration
    lock, and process creation.

    Moving a task between cgroups takes a lock whose writer waits for an RCU grace
    period (about 8 ms here) unless another migration ran within the last one. Every
    runtime migrates its instance into cgroups, so without this a launch right after a
    launch is fast and one after a pause, or after a slow runtime, pays the grace
    period: measured here, a native `hello` takes 0.4 ms after a migration and 7.7 ms
    0.2 s after one. `prime` moves a sentinel process of the run (`sleep`, in two
    cgroups `vb-<run>-quiet-a/b` of one hierarchy) from one cgroup to the other just
    before the launch, so no launch inherits or misses that from its predecessor; a
    by-hand loop of launches (hyperfine) runs in the same state. It then starts and waits
    for /bin/true: after the quiet window, starting a process is slower than right after
    another (a plain exec here: 0.2 ms back to back, 0.65 ms after 0.2 s; crun hello by
    virtbench over hyperfine's back-to-back loop under a CPU hog: 1.09-1.19 without it,
    0.99 with it)."""

    def __init__(
        self, layout: cgroups.Layout, name: Callable[[str], str], record: Callable[[str], None]
    ) -> None:
        self.dirs: list[Path] = []
        self.proc: proc.Popen[bytes] | None = None
        self._at = 0
        # One hierarchy is enough (the lock is global); not cpuset, whose cgroups take no
        # task before their CPUs are set.
        controller = "pids"
        if layout.version == 1 and controller not in layout.v1:
            controller = next(c for c in layout.v1 if c != "cpuset")
        for side in ("a", "b"):
            cg = name(f"quiet-{side}")
            record(cg)  # in the run's state before it exists: `clean` finds it
            d = layout.controller_dir(controller, cg)
            d.mkdir(parents=True, exist_ok=True)
            self.dirs.append(d)
        self.proc = proc.spawn(["sleep", "infinity"])  # its own process group
        try:
            self.prime()
        except BaseException:  # no one would end it otherwise
            self.close()
            raise

    def prime(self) -> None:
        """Move the sentinel to the other cgroup (one migration)."""
        assert self.proc is not None
        self._at ^= 1
        with open(self.dirs[self._at] / "cgroup.procs", "w") as fh:
            fh.write(str(self.proc.pid))
        # and one trivial program started and waited for, as the previous launch of a
        # by-hand loop would have: process creation is as warm before every launch. A bare
        # posix_spawn: the plain process creation such a loop does (no pipes, group or
        # timer thread), of a program that ends at once, reaped right here
        proc.run_bare(WARM_PROGRAM)

    def close(self) -> None:
        """End the sentinel and remove its cgroups."""
        if self.proc is not None:
            proc.stop(self.proc, rest=True)  # ended as a group, and waited for
            self.proc = None
        for d in self.dirs:
            cgroups.kill_and_remove(d)
        self.dirs = []
