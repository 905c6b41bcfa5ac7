"""`density`'s own figures: each new instance's as the pile-up grows, the host's at each
step, the cost per instance fitted over the steps (computed when read), and how far the
pile-up got. Its add-ons declare theirs in their modules (idle CPU, liveness, sharing,
the latency bound); experiments/density.py puts them in order."""

from __future__ import annotations

from virtbench.figure import (
    CHARGE_BATCH_MIB,
    KIB_MIB,
    MONO,
    NS_MS,
    SPAWN,
    STEP,
    Metric,
    pile_metric,
)

LAUNCH = pile_metric(
    "density.launch",
    "ms",
    "lower",
    SPAWN + "the new instance's ready datagram reached the host" + MONO,
    resolution=NS_MS,
    side=True,
    label="time to ready in a pile-up",
)
PSS = pile_metric(
    "density.pss",
    "MiB",
    "lower",
    "PSS summed over the new instance's host processes (runtime and VMM included), from "
    "/proc/<pid>/smaps_rollup",
    resolution=KIB_MIB,
    plot="density",
    label="PSS of each new instance",
)
PSS_WITHOUT_GUEST_RAM = pile_metric(
    "density.pss_without_guest_ram",
    "MiB",
    "lower",
    "VMs: density.pss less the PSS of the guest's RAM mapping, the VMM's own cost",
    resolution=KIB_MIB,
    label="PSS without guest RAM",
)
POD_OVERHEAD = pile_metric(
    "density.pod_overhead",
    "MiB",
    "lower",
    "a pod's cost beyond its container (`cri`): what its cgroup is charged beyond its "
    "container's own cgroup (the pause sandbox; runsc's sentry and gofer), plus the PSS of "
    "its processes outside its cgroup (the shim): what a RuntimeClass's overhead.podFixed "
    "must cover",
    resolution=CHARGE_BATCH_MIB,
    label="pod overhead",
)
CGROUP_MEMORY = pile_metric(
    "density.cgroup_memory",
    "MiB",
    "lower",
    "memory charged to the new instance's cgroup (memory.current, v1 usage_in_bytes: page "
    "cache included); the kernel charges a cgroup 64 pages at a time and keeps the rest per "
    "CPU, so the figure moves in steps of 0.25 MiB",
    resolution=CHARGE_BATCH_MIB,
    label="cgroup memory of each instance",
)


def _part(name: str, what: str, keys: str, label: str) -> Metric:
    """A part of the memory charged to the new instance's cgroup."""
    return pile_metric(
        name,
        "MiB",
        "lower",
        f"{what}, of the memory charged to the new instance's cgroup ({keys} in memory.stat); "
        "the kernel counts these per CPU and adds them up 64 pages at a time, so a part "
        "moves in steps of 0.25 MiB",
        resolution=CHARGE_BATCH_MIB,
        compared=False,
        label=f"{label} in its cgroup",
    )


CGROUP_ANON = _part(
    "density.cgroup_anon", "anonymous memory", "v2 anon, v1 total_rss", "anonymous memory"
)
CGROUP_FILE = _part(
    "density.cgroup_file",
    "the page cache, shmem and tmpfs included",
    "v2 file, v1 total_cache",
    "page cache",
)
CGROUP_KERNEL = _part(
    "density.cgroup_kernel",
    "the kernel's memory for it",
    "v2 kernel, v1 memory.kmem.usage_in_bytes",
    "kernel memory",
)
MEM_AVAILABLE = pile_metric(
    "density.mem_available",
    "MiB",
    "higher",
    "the host's MemAvailable after the new instance got ready",
    resolution=KIB_MIB,
    repeated=False,
    summary="series",
    compared=False,
    side=True,
    label="memory available after launch",
)
# the host at each step of a pile-up (caches dropped), at the instances running then
HOST_USED = pile_metric(
    "density.host_used",
    "MiB",
    "lower",
    "host memory in use: MemTotal - MemAvailable, less the free pages on the per-CPU lists "
    "(/proc/zoneinfo)",
    label="host memory in use",
    **STEP,
)
KERNEL_USED = pile_metric(
    "density.kernel_used",
    "MiB",
    "lower",
    "the kernel's memory that grows with instances: Slab + PageTables + KernelStack + "
    "Percpu from /proc/meminfo",
    label="kernel memory in use",
    **STEP,
)
USER_PSS = pile_metric(
    "density.user_pss",
    "MiB",
    "lower",
    "PSS summed over every host process of every running instance (shims, monitors, "
    "sandboxes, VMMs) and the daemons the run started for the runtime",
    label="PSS of instances and daemons",
    **STEP,
)
# what each instance costs: the slope of a step series against instances running
# (report/fits.py), computed when read, not stored
HOST_COST = pile_metric(
    "density.host_cost",
    "MiB",
    "lower",
    "host memory per instance: the slope of host memory in use against instances running "
    "over every step (their increments pooled)",
    summary="fit",
    plot="density",
    label="memory per instance",
    fits=HOST_USED.name,
    resolution=KIB_MIB,
)
KERNEL_COST = pile_metric(
    "density.kernel_cost",
    "MiB",
    "lower",
    "its kernel side: the slope of kernel memory in use",
    summary="fit",
    plot="density",
    label="kernel memory per instance",
    fits=KERNEL_USED.name,
    resolution=KIB_MIB,
)
USER_COST = pile_metric(
    "density.user_cost",
    "MiB",
    "lower",
    "its user side: the slope of the PSS of instances and daemons",
    summary="fit",
    fits=USER_PSS.name,
    resolution=KIB_MIB,
    label="process memory per instance",
)
# an earlier virtbench's per-step ratio, kept so its runs still read
HOST_PER_INSTANCE = pile_metric(
    "density.host_per_instance",
    "MiB",
    "lower",
    "(MemAvailable before the first instance - now) / instances running, caches dropped "
    "before each reading (runs of an earlier virtbench; replaced by density.host_cost)",
    lower_bound=None,
    repeated=False,
    summary="series",
    compared=False,
    ab_compared=False,
    label="memory per instance, old method",
)
# counts of how far a pile-up got: reported, not scored across runtimes
REACHED = pile_metric(
    "density.reached",
    "instances",
    "higher",
    "instances running when growth stopped (the target, the memory guard, or an instance "
    "that failed)",
    resolution=1.0,
    repeated=False,
    compared=False,
    side=True,
    label="instances reached",
)
TEARDOWN_PER_INSTANCE = pile_metric(
    "density.teardown_per_instance",
    "ms",
    "lower",
    "stopping every instance of the pile-up, one after another, / their count" + MONO,
    resolution=NS_MS,
    side=True,
    label="teardown per instance",
)
ANY = pile_metric(
    "density.*",
    "",
    None,
    "a density figure not declared here",
    lower_bound=None,
    label="density {}",
)
