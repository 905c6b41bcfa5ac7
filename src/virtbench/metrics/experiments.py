"""The experiments' own figures: boot, burst, exec, pause, snapshot, density,
scalability, the host's availability, isolation, min_memory and a server's resource use."""

from __future__ import annotations

from typing import Any

from virtbench.metrics.model import CHARGE_BATCH_MIB, KIB_MIB, NS_MS, OPEN, Metric
from virtbench.store.records import Direction


def _boot(name: str, includes: str, **kw: Any) -> Metric:
    kw = {"unit": "ms", "direction": "lower", "resolution": NS_MS, **kw}
    return Metric(name, includes=includes, plot="boot", desmet="boot", **kw)


def _pile(name: str, unit: str, direction: Direction | None, includes: str, **kw: Any) -> Metric:
    return Metric(name, unit, direction, includes, pile_up=True, headline=False, **kw)


_STEP: dict[str, Any] = {
    "resolution": KIB_MIB,
    "repeated": False,
    "summary": "series",
    "compared": False,
    "ab_compared": False,
}


def _host(name: str, includes: str, resolution: float | None, label: str) -> Metric:
    return Metric(name, "%", "higher", includes, resolution=resolution, repeated=False,
                  summary="series", compared=False, ab_compared=False, plot="scalability",
                  headline=False, label=label)  # fmt: skip


_SPAWN = "spawn call issued -> "
_MONO = ", host monotonic clock"
# fmt: off
EXPERIMENTS: tuple[Metric, ...] = (
    # --- boot (and scalability's `boot` worker) ---------------------------------------------
    _boot("boot.spawn_to_exit", _SPAWN + "the instance's main process exited (`hello`, a "
          "foreground launch)" + _MONO),
    _boot("boot.spawn_to_ready", _SPAWN + "the `sleep` workload's ready datagram reached the "
          "host's probe listener" + _MONO),
    _boot("boot.spawn_to_started", _SPAWN + "the launcher returned (a detached instance's "
          '"run -d")' + _MONO, headline=False),
    _boot("boot.spawn_to_first_output", _SPAWN + "the guest's first byte on its serial "
          "console (VMs)" + _MONO, headline=False),
    # kept out of the CV target: a side figure, recorded after a failed boot too
    _boot("boot.teardown", "stop called -> the instance and all it left on the host removed"
          + _MONO, repeated=False, headline=False),
    _boot("boot.*", "a boot figure not declared here", **OPEN),
    # --- burst: N instances launched at once (the level, after @) ----------------------------
    Metric("burst.spawn_to_ready", "ms", "lower", "each instance of the burst: its own launch "
           "call -> its ready datagram reached the host" + _MONO, resolution=NS_MS,
           headline=False),
    *(Metric(f"burst.{q}", "ms", "lower", f"the {q} of the burst's spawn_to_ready, one per "
             "burst" + _MONO, resolution=NS_MS, headline=q == "p50")
      for q in ("p50", "p95", "p99", "max")),
    Metric("burst.ready_per_s", "instances/s", "higher", "instances ready over the time "
           "from the burst's first launch call to its last ready datagram", resolution=None),
    Metric("burst.failed", "instances", "lower", "instances of the burst that did not become "
           "ready (each with its reason as a failed burst.spawn_to_ready)", compared=False),
    Metric("burst.host_cpu", "%", "lower", "the host's CPUs busy from the burst's first launch "
           "call to its last ready (or failure), /proc/stat", repeated=False, compared=False,
           headline=False),
    # --- exec, pause, snapshot: operations on a running instance -----------------------------
    Metric("exec.true", "ms", "lower", "the exec call issued (runc exec, docker exec over the "
           "API, lxc-attach, nsenter) -> vb-hello's one line read and its exit seen" + _MONO,
           resolution=NS_MS),
    Metric("exec.stdout_1mib", "ms", "lower", "the exec call issued -> all 1 MiB of its "
           "standard output read back and its exit seen" + _MONO, resolution=NS_MS),
    Metric("pause.pause", "ms", "lower", "the pause call (freezer, runc/docker pause, "
           "lxc-freeze, QEMU stop) -> it returned" + _MONO, resolution=NS_MS, headline=False),
    Metric("pause.resume", "ms", "lower", "the resume call -> it returned" + _MONO,
           resolution=NS_MS, headline=False),
    Metric("pause.resume_to_ready", "ms", "lower", "the resume call -> the instance's next "
           "heartbeat reached the host (its token, a later number; a minimal VM guest's "
           "may come up to one 2 ms period later)" + _MONO, resolution=NS_MS),
    Metric("snapshot.checkpoint", "ms", "lower", "the checkpoint call (runsc checkpoint, QEMU "
           "migration to a file, CRIU) -> it returned, the state on disk" + _MONO,
           resolution=NS_MS, headline=False),
    Metric("snapshot.size", "MiB", "lower", "the checkpoint image on disk, as du counts it",
           resolution=KIB_MIB / 2, headline=False),  # du counts 512-byte blocks
    Metric("snapshot.restore", "ms", "lower", "the restore call -> it returned" + _MONO,
           resolution=NS_MS, headline=False),
    Metric("snapshot.restore_to_ready", "ms", "lower", "the restore call -> the first "
           "heartbeat reached the host with the token drawn before the checkpoint and a "
           "later number" + _MONO, resolution=NS_MS),
    # --- density: idle instances pile up, one runtime at a time -------------------------------
    _pile("density.launch", "ms", "lower", _SPAWN + "the new instance's ready datagram "
          "reached the host" + _MONO, resolution=NS_MS),
    _pile("density.pss", "MiB", "lower", "PSS summed over the new instance's host processes "
          "(runtime and VMM included), from /proc/<pid>/smaps_rollup", resolution=KIB_MIB,
          plot="density", label="PSS of each new instance"),
    _pile("density.pss_without_guest_ram", "MiB", "lower", "VMs: density.pss less the PSS "
          "of the guest's RAM mapping, the VMM's own cost", resolution=KIB_MIB),
    _pile("density.cgroup_memory", "MiB", "lower", "memory charged to the new instance's "
          "cgroup (memory.current, v1 usage_in_bytes: page cache included); the kernel "
          "charges a cgroup 64 pages at a time and keeps the rest per CPU, so the figure "
          "moves in steps of 0.25 MiB", resolution=CHARGE_BATCH_MIB),
    _pile("density.mem_available", "MiB", "higher", "the host's MemAvailable after the new "
          "instance got ready", resolution=KIB_MIB, repeated=False, summary="series",
          compared=False),
    # the host at each step of a pile-up (caches dropped), at the instances running then
    _pile("density.host_used", "MiB", "lower", "host memory in use: MemTotal - MemAvailable, "
          "less the free pages on the per-CPU lists (/proc/zoneinfo)", **_STEP),
    _pile("density.kernel_used", "MiB", "lower", "the kernel's memory that grows with "
          "instances: Slab + PageTables + KernelStack + Percpu from /proc/meminfo", **_STEP),
    _pile("density.user_pss", "MiB", "lower", "PSS summed over every host process of every "
          "running instance (shims, monitors, sandboxes, VMMs) and the daemons the run "
          "started for the runtime", **_STEP),
    # what each instance costs: the slope of a step series against instances running
    # (report/fits.py), computed when read, not stored
    _pile("density.host_cost", "MiB", "lower", "host memory per instance: the slope of "
          "density.host_used against instances running over every step (their increments pooled)",
          summary="fit", plot="density", label="host memory in use", fits="density.host_used",
          resolution=KIB_MIB),
    _pile("density.kernel_cost", "MiB", "lower", "its kernel side: the slope of "
          "density.kernel_used", summary="fit", plot="density", label="kernel memory",
          fits="density.kernel_used", resolution=KIB_MIB),
    _pile("density.user_cost", "MiB", "lower", "its user side: the slope of "
          "density.user_pss", summary="fit", fits="density.user_pss", resolution=KIB_MIB,
          label="PSS of instances and daemons"),
    # an earlier virtbench's per-step ratio, kept so its runs still read
    _pile("density.host_per_instance", "MiB", "lower", "(MemAvailable before the first "
          "instance - now) / instances running, caches dropped before each reading (runs "
          "of an earlier virtbench; replaced by density.host_cost)", lower_bound=None,
          repeated=False, summary="series", compared=False, ab_compared=False),
    # counts of how far a pile-up got: reported, not scored across runtimes
    _pile("density.reached", "instances", "higher", "instances running when growth stopped "
          "(the target, the memory guard, or an instance that failed)", resolution=1.0,
          repeated=False, compared=False),
    _pile("density.teardown_per_instance", "ms", "lower", "stopping every instance of the "
          "pile-up, one after another, / their count" + _MONO, resolution=NS_MS),
    _pile("density.*", "", None, "a density figure not declared here", lower_bound=None),
    # --- scalability: a worker measured as idle background instances pile up ----------------
    _pile("scalability.launch", "ms", "lower", _SPAWN + "a background instance's ready "
          "datagram reached the host" + _MONO, resolution=NS_MS),
    _pile("scalability.reached", "instances", "higher", "background instances running when "
          "growth stopped (the target, the memory guard, swapping, a failure)",
          resolution=1.0, repeated=False, compared=False),
    _pile("scalability.teardown_per_instance", "ms", "lower", "stopping every background "
          "instance, one after another, / their count" + _MONO, resolution=NS_MS),
    _pile("scalability.*", "", None, "a scalability figure not declared here", lower_bound=None),
    # --- the host's availability at each scalability point ------------------------------------
    _host("host.cpu_idle_pct", "idle share of all the host's CPUs over the `settle_s` window "
          "before the point's measurements (psutil, /proc/stat; rounded to 0.1)", 0.1,
          "CPU idle"),
    _host("host.mem_available_pct", "MemAvailable / MemTotal after that window", None,
          "MemAvailable"),
    _host("host.swap_free_pct", "free swap / swap total (100 without swap; psutil, rounded "
          "to 0.1)", 0.1, "swap free"),
    # the run's time series only (the host sampler): CPU taken by the hypervisor's other guests
    Metric("host.steal_pct", "%", "lower", "share of the host's CPU time stolen by the "
           "hypervisor over the sampler's period (psutil, /proc/stat; rounded to 0.1)",
           resolution=0.1, repeated=False, summary="series", compared=False,
           ab_compared=False, headline=False, label="CPU steal"),
    Metric("host.*", "", None, "a host figure not declared here", lower_bound=None,
           repeated=False, summary="series", compared=False, ab_compared=False,
           headline=False),
    # --- isolation, and the run's image ------------------------------------------------------
    # the attackers' own cost, not the worker's performance: not scored across runtimes
    Metric("isolation.attacker_tasks_peak", "tasks", "lower", "host tasks (threads included) "
           "of all the attackers' cgroups at their peak (pids.peak), summed", resolution=1.0,
           repeated=False, compared=False, headline=False),
    Metric("isolation.*", "", None, "an isolation figure not declared here", lower_bound=None,
           headline=False),
    Metric("image_size", "MiB", "lower", "the artifact as the runtime keeps it on disk to "
           "start it (rootfs du, the engine's image, a VM's kernel and initramfs), once per "
           "runtime and run", repeated=False, compared=False, headline=False),
    # --- min_memory: the smallest memory a workload keeps its performance in -----------------
    Metric("min_memory.mib", "MiB", "lower", "the smallest memory (a VM's guest RAM, a "
           "container's cgroup limit) whose probe passed: the workload completed and its "
           "figure stayed within the tolerance of the one at high_mib; the true minimum is "
           "within one step (params.step_mib) below", repeated=False, headline=False),
    # min_memory.probe: the workload's primary figure (median of the probe's measurements,
    # in the workload's unit) at one memory size (params.memory_mib), or the failure that
    # decided it; the family takes the unit and direction its samples carry
    Metric("min_memory.*", "", None, "a probe of the search at params.memory_mib, in the "
           "workload's unit", lower_bound=None, repeated=False, summary="series",
           compared=False, ab_compared=False, headline=False),
    # --- a server's resource use over each measurement (measure/procstat.py) ---------------
    Metric("resources.*.cpu_*_s", "s", "lower", "CPU time (user, system or guest ticks) of "
           "the instance's host processes, or of its runtime's daemons, over the measurement",
           resolution=0.01, repeated=False, headline=False, plot="resources",
           label="CPU seconds"),
    Metric("resources.*.cpu_pct", "%", "lower", "(user + system ticks) / the measurement's "
           "duration, of one CPU (100 = one CPU busy)", resolution=1.0, lower_bound=0.0,
           repeated=False, headline=False, plot="resources", label="CPU %"),
    Metric("resources.*.rss_max_mib", "MiB", "lower", "the largest sum of the processes' "
           "resident sets at a read (shared pages once per process)", resolution=4 / 1024,
           repeated=False, headline=False, plot="resources", label="RSS peak"),
)
# fmt: on
