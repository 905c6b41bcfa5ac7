"""What the host can read of a started instance: its processes, how it ended, its tasks
and memory, and whether what lingers after a removal is gone. A mixin of Runtime (which
provides `ctx`, `cgroup_names`, `owner_pids` and `_reap`); drivers override a reading where
their engine knows better.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from virtbench.errors import InstanceError
from virtbench.host import cgroups, proc
from virtbench.measure import memory

if TYPE_CHECKING:
    from virtbench.runtimes.model import Instance, RuntimeContext


class Observe:
    """`pids`, `exit_reason`, `wait_ready`, `tasks`, `guest_ram_pss`, `memory_bytes`,
    `pss_bytes`, `daemons_pss_bytes`, `reap_later` and `settled` of a Runtime."""

    ctx: RuntimeContext
    label: str
    _reap: list[Any]
    DAEMONS: tuple[str, ...] = ()  # names (runtimes/daemon.py) of daemons it may start

    def cgroup_names(self, inst: Instance) -> list[str]:  # provided by Runtime
        raise NotImplementedError

    def owner_pids(self, inst: Instance) -> list[int]:  # provided by Runtime
        raise NotImplementedError

    def check_engine(self) -> None:  # provided by Runtime
        raise NotImplementedError

    def pids(self, inst: Instance) -> list[int]:
        """Host pids that belong to the instance: its cgroups' processes (and below) plus
        the driver's `owner_pids` (shims, monitors)."""
        found = [p for n in self.cgroup_names(inst) for p in cgroups.procs(self.ctx.layout, n)]
        return found + [p for p in self.owner_pids(inst) if p not in found]

    def exit_reason(self, inst: Instance) -> str | None:
        """How a started instance ended ("exited with status 3", "killed by SIGKILL"), or
        None while it runs. Default: its launcher's status where the driver keeps one
        (native, VMs, nspawn), else whether a process is left in its cgroup; engines ask
        their daemon (which knows the exit status)."""
        if inst.proc is not None:
            rc = inst.proc.poll()
            return None if rc is None else proc.describe_status(rc)
        if cgroups.procs(self.ctx.layout, inst.name):
            return None
        return "ended (no process of it is left; its runtime keeps no exit status)"

    def tasks(self, inst: Instance) -> tuple[int | None, int]:
        """(peak host tasks, threads included, of the instance's cgroups, None where the
        kernel keeps no peak; forks refused by its pids limit)."""
        peak: int | None = None
        refused = 0
        for n in self.cgroup_names(inst):
            p, r = cgroups.tasks(self.ctx.layout, n)
            refused += r
            if p is not None:
                peak = (peak or 0) + p
        return peak, refused

    def guest_ram_pss(self, inst: Instance) -> int | None:
        """PSS (bytes) of the guest's RAM inside the instance's host processes (VMs: the
        VMM's guest memory mapping); None where there is no guest RAM."""
        del inst
        return None

    def memory_bytes(self, inst: Instance) -> int | None:
        """Memory charged to the instance's cgroup."""
        return cgroups.memory_bytes(self.ctx.layout, inst.name)

    def pss_bytes(self, inst: Instance) -> int | None:
        """PSS (bytes) summed over the instance's host processes (`pids`); None when it
        has none, or none could be read. Drivers keep the default; a test's fake runtime
        injects its own."""
        return memory.pss_total(self.pids(inst))

    def daemon_pids(self) -> list[int]:
        """The processes of the daemons this run started for this runtime (`DAEMONS`: a
        dockerd and the containerd it spawned, lxd); none where it started none."""
        return [p for name in self.DAEMONS for p in self.ctx.daemons.pids(name)]

    def daemons_pss_bytes(self) -> int | None:
        """PSS (bytes) of the daemons this run started for this runtime; None where it
        started none."""
        return memory.pss_total(self.daemon_pids())

    def settled(self) -> bool:
        """Whether every supervisor that lingers after a removal (`reap_later`) has
        exited (zombies count as exited: this host's PID 1 may never reap them)."""
        import psutil

        def alive(p: Any) -> bool:
            try:
                return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
            except psutil.Error:
                return False

        self._reap = [p for p in self._reap if alive(p)]
        return not self._reap

    def wait_ready(self, inst: Instance, timeout: float, abort: threading.Event | None = None
                   ) -> int:  # fmt: skip
        """Host monotonic ns of `inst`'s ready datagram. InstanceError, with the console's
        last lines, if none comes in `timeout` s or the instance ends first (looked at
        every 0.25 s at first, then less often, so a dead instance is reported within a
        few seconds without a busy loop beside the boot being timed), or at once when
        `abort` is set (with the probe's `wake`: a burst being interrupted)."""
        assert self.ctx.probe is not None, "waiting for a ready signal needs the probe"
        deadline = time.monotonic() + timeout
        step = 0.25
        while True:
            left = deadline - time.monotonic()
            t = self.ctx.probe.wait(inst.name, max(0.0, min(step, left)), abort)
            if t is not None:
                return t
            if abort is not None and abort.is_set():
                raise InstanceError(f"{self.label}: {inst.name}: interrupted before it "
                                    "signalled ready")  # fmt: skip
            if left <= step:
                self.check_engine()
                raise InstanceError(
                    f"{self.label}: no ready signal in {timeout:g} s: {inst.log_tail()}"
                )
            why = self.exit_reason(inst)
            if why is not None:
                t = self.ctx.probe.wait(inst.name, 0)  # it may have signalled, then ended
                if t is not None:
                    return t
                self.check_engine()
                raise InstanceError(
                    f"{self.label}: {inst.name} {why} before it signalled ready: {inst.log_tail()}"
                )
            step = min(step * 2, 2.0)

    def reap_later(self, procs: list[Any]) -> None:
        """Supervisors (shim, conmon) that linger a moment after their container is
        removed: not waited for in the timed teardown, but ended by `close`."""
        self._reap += [p for p in procs if p.is_running()]
