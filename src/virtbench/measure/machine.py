"""The host as experiments read it: memory, CPU availability, topology, runnable tasks.

Experiments and the quiet wait read host-level figures through one `Host` object that
the Session holds, never straight from /proc, so that every reading of the host goes
through one seam: the real implementations are the defaults here, and a test replaces
the whole host (tests/fakeruntime.py: a host whose MemAvailable falls with its fake
instances) without touching the experiments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from virtbench.host import facts, ksm
from virtbench.measure import memory, quiet, sampler
from virtbench.measure.topology import Topology


class Host:
    """This machine. Subclasses override what they fake; each method is one reading."""

    def emulated(self) -> bool:
        """Whether QEMU emulates this whole machine (TCG): its figures are functional only."""
        return facts.emulated_host()

    def meminfo(self) -> dict[str, int]:
        """/proc/meminfo as bytes (MemTotal, MemAvailable, SwapTotal, SwapFree, ...)."""
        return memory.meminfo()

    def mem_available(self) -> int:
        """MemAvailable (bytes)."""
        return memory.mem_available()

    def pcp_free(self) -> int:
        """Free pages on the per-CPU free lists (bytes), which MemAvailable leaves out."""
        return memory.pcp_free()

    def drop_caches(self) -> bool:
        """sync, then drop page cache, dentries and inodes; False if not allowed."""
        return memory.drop_caches()

    def settle_memory(
        self, window_s: float, timeout_s: float = 60.0, drop: bool = True
    ) -> tuple[float, bool]:
        """Wait until the host's memory in use held still for `window_s` (caches dropped): what
        an earlier teardown left to the kernel's deferred work (dying cgroups, namespaces,
        RCU frees) is freed over seconds and would otherwise be counted against the
        next pile-up. Caches are dropped first unless not `drop`. (seconds waited,
        whether it settled before the timeout)."""
        return memory.settle(window_s, timeout_s, drop)

    def sharing_problem(self) -> str | None:
        """Why this host cannot share pages between instances (KSM), or None."""
        return ksm.available()

    def sharing(self, state_dir: Path) -> ksm.Ksm:
        """KSM for a run whose state directory is `state_dir`: `apply` it, `restore` it."""
        return ksm.Ksm(state_dir)

    def shared(self) -> ksm.Counters:
        """What KSM shares now: its pages sharing another's frame, its full scans."""
        return ksm.counters()

    def availability(self, window_s: float) -> dict[str, float]:
        """CPU idle % over the next `window_s` seconds (sleeps that long), then
        MemAvailable % and free swap % (measure/sampler.py)."""
        return sampler.availability(window_s)

    def cpu_busy(self) -> tuple[int, int]:
        """(ticks the CPUs were busy, ticks in all) since boot, summed over the CPUs, from
        /proc/stat's first line (guest time is inside user time already): two readings
        give the share busy between them, in whole ticks (USER_HZ, 10 ms)."""
        with open("/proc/stat", encoding="ascii") as fh:
            fields = [int(x) for x in fh.readline().split()[1:]]
        user, nice, system, idle, iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
        busy = user + nice + system + irq + softirq + steal
        return busy, busy + idle + iowait

    def topology(self) -> Topology:
        """Online CPUs and their SMT siblings."""
        return Topology.detect()

    def running(self) -> int:
        """Tasks runnable right now, the reader included (the quiet wait's count)."""
        return quiet.procs_running()

    def snapshot(self, runtime_versions: dict[str, str]) -> dict[str, Any]:
        """The environment snapshot stored with each run."""
        return facts.snapshot(runtime_versions)
