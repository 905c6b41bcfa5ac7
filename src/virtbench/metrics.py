"""The metric registry: every figure virtbench records, declared once.

A `Metric` says what a figure is -- its unit, which way is better, what it includes, the
smallest value it can take and the smallest difference its method can tell -- and how the
rest of virtbench treats it: whether repetitions of it measure one thing again (adaptive
repetition's CV target), how the tables summarise it, whether the report and `virtbench
compare` compare it, which plot draws it and how DESMET scores it.

Names are exactly as stored. A family of names is one fnmatch pattern (`*` matches dots
too), such as the latency workload's `*.*B.rtt_p*`. A level suffix (`tps@16`,
`read_only.tps@t40`: experiments/worker.py adds it when a workload sweeps a parameter) is
no part of a declared name. `lookup` tries exact names first, then patterns in the order
declared here, so a narrower pattern comes before a broader one. Each experiment's prefix
ends with a pattern (`boot.*`, `host.*`, ...) that treats a figure not declared yet as its
family; any other name is a workload figure this registry does not name (a new
workload's, say) and gets DEFAULT's treatment: repeated, compared, summarised by the
median. Where a declaration leaves `unit` and `direction` open, a sample carries its own.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
from dataclasses import dataclass
from typing import Any, Literal

from virtbench.store.records import Direction

Summary = Literal["median", "series", "fit"]
PlotKind = Literal["boot", "latency", "concurrency", "scalability", "density", "resources"]
DesmetKind = Literal["boot", "lower", "higher"]


@dataclass(frozen=True)
class Metric:
    """One figure, or a family of figures when `name` is a pattern.

    name         the name as stored, or an fnmatch pattern for a family ("*.requests_per_s")
    unit         as stored ("" where samples carry their own: patterns of a family, DEFAULT)
    direction    "lower" or "higher": which way is better (None where samples say)
    includes     what the figure includes: from which event to which, by which clock
    lower_bound  the smallest value it can take (None: no bound)
    resolution   the smallest difference its method can tell, in `unit` (None: unknown)
    repeated     True: repetitions measure one thing again, so their CV says how steady it
                 is (adaptive repetition's target); False: host state, one-off figures,
                 per-step series, side figures kept out of that target
    summary      "median": summarised as a distribution (median, 95% CI, CV);
                 "series": per-point values shown at their point, never summarised;
                 "fit": the slope of the series `fits` against its background count,
                 computed when read (report/fits.py), never stored
    fits         for "fit": the series metric whose slope it is
    compared     the report compares runtimes on it: tests, DESMET scores, spread warnings
    ab_compared  `virtbench compare` tests it between its two sides: more than `compared`,
                 as a run that reached fewer instances or kept a bigger image regressed
    plot         the plot kind of report/plots.py that draws it (None: none does)
    desmet       how DESMET scores it: "boot" (against the boot baseline), else its direction
    pile_up      taken once per instance as instances pile up: the background count is where
                 in the pile-up, not a condition, so all of a run's values are one group
    headline     a worker's own result, which scalability and isolation follow (the first
                 one recorded); False for side figures (teardown, the host, launches)
    workload     the workload whose figure it is ("" for any: the experiments' own)
    label        a few words for plots ("": the name)
    """

    name: str
    unit: str
    direction: Direction | None
    includes: str
    lower_bound: float | None = 0.0
    resolution: float | None = None
    repeated: bool = True
    summary: Summary = "median"
    compared: bool = True
    ab_compared: bool = True
    plot: PlotKind | None = None
    desmet: DesmetKind | None = None
    pile_up: bool = False
    headline: bool = True
    workload: str = ""
    label: str = ""
    fits: str = ""

    def __post_init__(self) -> None:
        if self.desmet is None:  # scored in its own direction unless declared boot-like
            object.__setattr__(self, "desmet", self.direction)

    @property
    def is_pattern(self) -> bool:
        return any(c in self.name for c in "*?[")


NS_MS = 1e-6  # a host monotonic clock read in ns, in ms
KIB_MIB = 1 / 1024  # /proc reports kB
CHARGE_BATCH_MIB = 64 * 4096 / 2**20  # memcg charges in batches of 64 pages (4 KiB pages)
OPEN: dict[str, Any] = {"unit": "", "direction": None, "lower_bound": None}  # samples say


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


def _w(workload: str, name: str, unit: str, direction: Direction, includes: str,
       resolution: float | None = None, plot: PlotKind | None = None) -> Metric:  # fmt: skip
    return Metric(name, unit, direction, includes, resolution=resolution, plot=plot,
                  workload=workload)  # fmt: skip


def _swept(workload: str, name: str, unit: str, direction: Direction, includes: str,
           resolution: float | None = None) -> Metric:  # fmt: skip
    """A figure of a workload that sweeps a numeric level (connections, clients, threads):
    drawn against it."""
    return _w(workload, name, unit, direction, includes, resolution, "concurrency")


_SPAWN = "spawn call issued -> "
_MONO = ", host monotonic clock"
# fmt: off
REGISTRY: tuple[Metric, ...] = (
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
    # --- workloads: what their parse() returns ---------------------------------------------
    _swept("nginx", "requests_per_s", "req/s", "higher", "requests completed / the test's "
           "duration (wrk Requests/sec)", 0.01),
    _swept("nginx", "transfer", "MiB/s", "higher", "response bytes, headers included, per "
           "second (wrk Transfer/sec)"),
    _swept("nginx", "latency_avg", "ms", "lower", "mean time from a request sent to its "
           "response read (wrk)"),
    _swept("nginx", "latency_p*", "ms", "lower", "a percentile (50, 75, 90, 99) of that time "
           "(wrk --latency)"),
    _swept("nginx", "errors", "count", "lower", "socket errors (connect, read, write, timeout) "
           "and non-2xx/3xx responses", 1.0),
    _swept("redis", "*.requests_per_s", "req/s", "higher", "a test's (GET, SET) requests / "
           "its duration, pipelined (redis-benchmark)", 0.01),
    _swept("redis", "*.latency_*", "ms", "lower", "a test's request latency, avg / p50 / p95 / "
           "p99 (redis-benchmark)", 0.001),
    _swept("memcached", "ops_per_s", "ops/s", "higher", "gets and sets completed / the "
           "test's duration, one outstanding per connection (vb-mcload)", 0.1),
    _swept("memcached", "p*_us", "us", "lower", "a percentile (50, 90, 99, 99.9) of the time "
           "from a request's send to its reply's last byte (1 us buckets)", 1.0),
    _swept("memcached", "misses", "gets", "lower", "gets of a key the server no longer held",
           1.0),
    _swept("postgres", "tps", "tx/s", "higher", "transactions / the test's duration, without "
           "the initial connection time (pgbench)", 1e-6),
    _swept("postgres", "latency_avg", "ms", "lower", "pgbench's latency average", 0.001),
    _swept("postgres", "failed", "transactions", "lower", "failed transactions (pgbench)", 1.0),
    _swept("mariadb", "*.tps", "tx/s", "higher", "an OLTP test's transactions per second "
           "(sysbench)", 0.01),
    _swept("mariadb", "*.qps", "queries/s", "higher", "an OLTP test's queries per second "
           "(sysbench)", 0.01),
    _swept("mariadb", "*.latency_*", "ms", "lower", "an OLTP transaction's latency, avg / "
           "95th percentile (sysbench)", 0.01),
    _swept("mariadb", "*.errors", "errors", "lower", "errors sysbench ignored and retried "
           "(deadlocks)", 1.0),
    _swept("sysbench", "cpu.events_per_s", "events/s", "higher", "prime searches up to "
           "cpu_max_prime per second, all threads", 0.01),
    _swept("sysbench", "cpu.latency_*", "ms", "lower", "one event's time, avg / 95th "
           "percentile", 0.01),
    _swept("sysbench", "memory.mib_per_s", "MiB/s", "higher", "memory transferred per second "
           "(block size, operation as configured)", 0.01),
    _swept("sysbench", "memory.ops_per_s", "ops/s", "higher", "memory block operations per "
           "second", 0.01),
    _swept("sysbench", "fileio.*_mib_per_s", "MiB/s", "higher", "a fileio mode's MiB read or "
           "written per second, on the data directory's disk", 0.01),
    _swept("sysbench", "fileio.*_per_s", "ops/s", "higher", "a fileio mode's reads, writes or "
           "fsyncs per second", 0.01),
    _w("fio", "*.*.iops", "IOPS", "higher", "a test's reads or writes per second (fio JSON)"),
    _w("fio", "*.*.mib_per_s", "MiB/s", "higher", "a test's bytes read or written per second "
       "(fio bw_bytes)", 1 / 2**20),
    _w("fio", "*.*.clat_p*", "us", "lower", "a percentile (50, 99) of completion latency, "
       "submission -> completion (fio clat_ns)", 0.001),
    _w("iperf3", "*.gbit_s", "Gbit/s", "higher", "bits the receiver got per second over the "
       "test (iperf3 -J)"),
    _w("iperf3", "*.retransmits", "count", "lower", "TCP retransmits on the sender", 1.0),
    _w("iperf3", "udp.jitter_ms", "ms", "lower", "UDP packet delay variation (iperf3)"),
    _w("iperf3", "udp.lost_percent", "%", "lower", "UDP datagrams lost at the stated rate"),
    _w("latency", "*.*B.rtt_p*", "us", "lower", "a percentile of round trips, message sent -> "
       "reply received, monotonic clock (vb-rr)", 0.001, "latency"),
    _w("latency", "*.*B.rtt_*", "us", "lower", "the mean, least or largest round trip (vb-rr)",
       0.001),
    _w("latency", "*.*B.lost", "messages", "lower", "replies missing after 1 s", 1.0),
    _w("latency", "icmp.rtt_*", "us", "lower", "ping's round trip min / avg / max / mdev", 1.0),
    _w("latency", "icmp.loss_pct", "%", "lower", "ping's packet loss"),
    _swept("http-fixed", "reply_rate", "replies/s", "higher", "replies / the test's duration "
           "(httperf)"),
    _swept("http-fixed", "response_ms", "ms", "lower", "request sent -> first byte of the "
           "reply (httperf Reply time response)", 0.1),
    _swept("http-fixed", "errors", "errors", "lower", "all of httperf's errors, refused and "
           "timed-out connections included", 1.0),
    _swept("http-fixed", "replies", "replies", "higher", "replies received (httperf)", 1.0),
    _swept("udp-echo", "seconds", "s", "lower", "first datagram sent -> last reply received "
       "(vb-rr flood)", 1e-6),
    _swept("udp-echo", "replies", "datagrams", "higher", "replies received", 1.0),
    _swept("udp-echo", "lost_pct", "%", "lower", "datagrams sent without a reply"),
    _swept("udp-echo", "replies_per_s", "1/s", "higher", "replies / seconds"),
    _w("sqlite", "inserts_per_s", "rows/s", "higher", "rows INSERTed per second, timed inside "
       "the instance (vb-sqlite)", 0.1),
    _w("sqlite", "seconds", "s", "lower", "the INSERTs' time, inside the instance", 1e-6),
    _w("stream", "*_mb_s", "MB/s", "higher", "a STREAM kernel's best rate over the passes "
       "(vb-stream)", 0.1),
    _w("syscall", "page_fault_*p_ns", "ns", "lower", "the first touch of k fresh anonymous "
       "pages, all k touches timed, the mapping not (vb-syscall)", 1.0),
    _w("syscall", "*_ns", "ns", "lower", "one operation's cost: a calibrated batch's time / "
       "its iterations (vb-syscall)", 0.1),
)
# fmt: on

# A workload figure this registry does not name: measured again each repetition, compared,
# drawn against a swept level like any other.
DEFAULT = Metric(
    "*",
    "",
    None,
    "a workload figure the registry does not name",
    lower_bound=None,
    plot="concurrency",
)


def find(name: str, workload: str = "") -> Metric | None:
    """The declaration of `name` (a level suffix ignored): an exact name first, then the
    first pattern that matches; None when neither does. `workload` (the sample's) tells
    workloads' figures of one name apart; "" considers every workload's."""
    return _find(name, workload)


@functools.lru_cache(maxsize=4096)  # reports look up every sample's metric
def _find(name: str, workload: str) -> Metric | None:
    base = name.partition("@")[0]
    mine = [m for m in REGISTRY if not workload or m.workload in ("", workload)]
    for m in mine:
        if not m.is_pattern and m.name == base:
            return m
    return next((m for m in mine if m.is_pattern and fnmatch.fnmatchcase(base, m.name)), None)


def lookup(name: str, workload: str = "") -> Metric:
    """What `name` is: its declaration (`find`), or DEFAULT's treatment under that name."""
    found = _find(name, workload)
    return found if found is not None else _default(name, workload)


@functools.lru_cache(maxsize=1024)
def _default(name: str, workload: str) -> Metric:
    return dataclasses.replace(DEFAULT, name=name, workload=workload)


def is_repeated(name: str, workload: str = "") -> bool:
    """Do repetitions of it measure one thing again (so its CV counts)?"""
    return lookup(name, workload).repeated


def is_compared(name: str, workload: str = "") -> bool:
    """Does the report compare runtimes on it (tests, DESMET scores, spread warnings)?"""
    return lookup(name, workload).compared


def fitted() -> list[Metric]:
    """The figures read as the slope of a series (summary "fit"), in the order declared."""
    return [m for m in REGISTRY if m.summary == "fit"]


def plotted(kind: PlotKind) -> list[Metric]:
    """The figures declared by name that plot `kind` draws, in the order declared."""
    return [m for m in REGISTRY if m.plot == kind and not m.is_pattern]
