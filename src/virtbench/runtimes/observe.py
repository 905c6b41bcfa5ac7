"""What the host can read of a started instance and of its runtime: its processes, how it
ended, its tasks, its ready signal and whether what lingers after a removal is gone
(`Observe`); the memory attributed to it (`Memory`); the daemons this run started for
the runtime (`RunDaemons`); what it serves a workload as, and on which port (`Serves`).

Each is an object a driver declares by class (`Observe = DockerObserve`, `Memory =
VmMemory`, `Daemons = DockerDaemons`) and Runtime makes one per driver (`rt.observe`,
`rt.memory`, `rt.daemons`) holding that driver as `rt`, which gives `ctx`, `label`,
`cgroup_names` and `check_engine`. Drivers subclass a reading where their engine knows
better.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, ClassVar

from virtbench.errors import InstanceError
from virtbench.host import cgroup_stats, cgroups, proc
from virtbench.measure import memory, procstat

if TYPE_CHECKING:
    from virtbench.runtimes.model import Instance
    from virtbench.workloads import ImageService


class Observe:
    """`pids` (with `owner_pids`), `exit_reason`, `tasks`, `wait_ready`, `reap_later` and
    `settled` of a driver (`rt`)."""

    def __init__(self, rt: Any) -> None:
        self.rt = rt
        self.reap: list[Any] = []  # psutil handles of supervisors that exit after removal

    def pids(self, inst: Instance) -> list[int]:
        """Host pids that belong to the instance: its cgroups' processes (and below) plus
        the driver's `owner_pids` (shims, monitors)."""
        layout = self.rt.ctx.layout
        found = [p for n in self.rt.cgroup_names(inst) for p in cgroups.procs(layout, n)]
        return found + [p for p in self.owner_pids(inst) if p not in found]

    def owner_pids(self, inst: Instance) -> list[int]:
        """Host processes that belong to the instance outside its cgroup (a shim, a
        monitor, conmon). Default: none."""
        del inst
        return []

    def exit_reason(self, inst: Instance) -> str | None:
        """How a started instance ended ("exited with status 3", "killed by SIGKILL"), or
        None while it runs. Default: its launcher's status where the driver keeps one
        (native, VMs, nspawn), else whether a process is left in its cgroup; engines ask
        their daemon (which knows the exit status)."""
        if inst.proc is not None:
            rc = inst.proc.poll()
            return None if rc is None else proc.describe_status(rc)
        if cgroups.procs(self.rt.ctx.layout, inst.name):
            return None
        return "ended (no process of it is left; its runtime keeps no exit status)"

    def stall_totals(self, inst: Instance) -> dict[str, int] | None:
        """How long its cgroup's tasks have waited, per resource (cgroup_stats.stall_totals:
        v2's pressure files, in microseconds)."""
        return cgroup_stats.stall_totals(self.rt.ctx.layout, inst.name)

    def tasks(self, inst: Instance) -> tuple[int | None, int]:
        """(peak host tasks, threads included, of the instance's cgroups, None where the
        kernel keeps no peak; forks refused by its pids limit)."""
        peak: int | None = None
        refused = 0
        for n in self.rt.cgroup_names(inst):
            p, r = cgroup_stats.tasks(self.rt.ctx.layout, n)
            refused += r
            if p is not None:
                peak = (peak or 0) + p
        return peak, refused

    def settled(self) -> bool:
        """Whether every supervisor that lingers after a removal (`reap_later`) has
        exited (zombies count as exited: this host's PID 1 may never reap them)."""
        import psutil

        def alive(p: Any) -> bool:
            try:
                return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
            except psutil.Error:
                return False

        self.reap = [p for p in self.reap if alive(p)]
        return not self.reap

    def reap_later(self, procs: list[Any]) -> None:
        """Supervisors (shim, conmon) that linger a moment after their container is
        removed: not waited for in the timed teardown, but ended by the driver's `close`."""
        self.reap += [p for p in procs if p.is_running()]

    def wait_ready(
        self, inst: Instance, timeout: float, abort: threading.Event | None = None
    ) -> int:
        """Host monotonic ns of `inst`'s ready datagram. InstanceError, with the console's
        last lines, if none comes in `timeout` s or the instance ends first (looked at
        every 0.25 s at first, then less often, so a dead instance is reported within a
        few seconds without a busy loop beside the boot being timed), or at once when
        `abort` is set (with the probe's `wake`: a burst being interrupted)."""
        probe, label = self.rt.ctx.probe, self.rt.label
        assert probe is not None, "waiting for a ready signal needs the probe"
        deadline = time.monotonic() + timeout
        step = 0.25
        while True:
            left = deadline - time.monotonic()
            t = probe.wait(inst.name, max(0.0, min(step, left)), abort)
            if t is not None:
                return t
            if abort is not None and abort.is_set():
                raise InstanceError(f"{label}: {inst.name}: interrupted before it signalled ready")
            if left <= step:
                self.rt.check_engine()
                raise InstanceError(f"{label}: no ready signal in {timeout:g} s: {inst.log_tail()}")
            why = self.exit_reason(inst)
            if why is not None:
                t = probe.wait(inst.name, 0)  # it may have signalled, then ended
                if t is not None:
                    return t
                self.rt.check_engine()
                raise InstanceError(
                    f"{label}: {inst.name} {why} before it signalled ready: {inst.log_tail()}"
                )
            step = min(step * 2, 2.0)


class Memory:
    """The memory attributed to an instance of a driver (`rt`): charged to its cgroup,
    PSS of its host processes, and of those the guest's RAM (VMs)."""

    def __init__(self, rt: Any) -> None:
        self.rt = rt

    def cgroup_bytes(self, inst: Instance) -> int | None:
        """Memory charged to the instance's cgroup."""
        return cgroup_stats.memory_bytes(self.rt.ctx.layout, inst.name)

    def cgroup_parts(self, inst: Instance) -> dict[str, int] | None:
        """That memory by part (cgroup_stats.memory_parts: anon, file, kernel), in bytes."""
        return cgroup_stats.memory_parts(self.rt.ctx.layout, inst.name)

    def pss_bytes(self, inst: Instance) -> int | None:
        """PSS (bytes) summed over the instance's host processes (`observe.pids`); None
        when it has none, or none could be read."""
        return memory.pss_total(self.rt.observe.pids(inst))

    def overhead_bytes(self, inst: Instance) -> int | None:
        """What the instance costs beyond its workload's own container (a pod's sandbox:
        `cri`), in bytes; None where a runtime has no such split."""
        del inst
        return None

    def cpu_counters(self, inst: Instance, pids: list[int]) -> dict[str, int] | None:
        """The CPU time the instance has run so far, in ns, as named counters that only
        grow while each exists: its cgroup's, and each thread of its processes `pids`
        (found once, by the caller) outside that cgroup. None where its cgroup's CPU time
        cannot be read."""
        layout = self.rt.ctx.layout
        total = cgroup_stats.cpu_ns(layout, inst.name)
        if total is None:
            return None
        inside = set(cgroups.procs(layout, inst.name))
        threads = procstat.thread_cpu_ns([p for p in pids if p not in inside])
        return {"cgroup": total, **{f"thread {t}": ns for t, ns in threads.items()}}

    def overhead_cpu(self, inst: Instance) -> dict[str, int] | None:
        """The CPU time that overhead (`overhead_bytes`) has run so far, in ns, as named
        counters that only grow while each exists (the sandbox's cgroup, each shim
        thread): two reads give its use between them. None where there is no such split."""
        del inst
        return None

    def guest_ram_pss(self, inst: Instance) -> int | None:
        """PSS (bytes) of the guest's RAM inside the instance's host processes (VMs: the
        VMM's guest memory mapping); None where there is no guest RAM."""
        del inst
        return None


class RunDaemons:
    """The daemons this run started for a driver's runtime (`names`, in
    runtimes/daemon.py: a dockerd and the containerd it spawned, lxd); none by default."""

    names: ClassVar[tuple[str, ...]] = ()

    def __init__(self, rt: Any) -> None:
        self.rt = rt

    def pids(self) -> list[int]:
        """Their processes; none where the run started none."""
        return [p for name in self.names for p in self.rt.ctx.daemons.pids(name)]

    def pss_bytes(self) -> int | None:
        """PSS (bytes) of their processes; None where the run started none."""
        return memory.pss_total(self.pids())


class Serves:
    """What an instance of a driver (`rt`) serves a workload as: by default the workload's
    own server on its own port; an image built elsewhere says its own (vm/base.py's
    `ImageServes`)."""

    def __init__(self, rt: Any) -> None:
        self.rt = rt

    def port(self, workload: str) -> int | None:
        """The port an instance serves `workload` on when not the workload's own (an image
        built elsewhere); None: the workload's PORT."""
        del workload
        return None

    def service(self, workload: str) -> ImageService | None:
        """What an image built elsewhere serves `workload` as (how its readiness is probed,
        which of the client's levels it answers); None: the workload's own server."""
        del workload
        return None
