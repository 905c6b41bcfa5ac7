"""Per-instance resource use over a measurement, as pidstat shows it: CPU %, RSS and CPU
ticks (user, system, guest) of an instance's host processes, and apart from them of the
engine daemons the run started for its runtime (dockerd and its containerd, lxd).

A `ProcWatch` reads /proc/PID/stat of every process the instance has at each moment:
`begin` when its measurement starts, `tick` at every tick of the host sampler (a series
point each), `end` when it is over (the totals). The processes are asked for anew each
time (a server that forks is followed). CPU time counts what each process used between
two reads; a process that appeared in between counts from its start, one that ended in
between loses its last interval (the kernel keeps no figure of a dead process), so the
totals are a lower bound when processes come and go during the measurement. RSS is the
sum of the processes' resident sets (shared pages counted once per process, as pidstat).
Guest ticks are the time a VMM's vCPU threads ran guest code (0 for other processes); the
kernel counts them in user ticks too, so CPU % (user + system) includes them.

The totals' figures (`resources.*`) are declared here, where they are made: the run's
figures (virtbench.metrics.run) list them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from virtbench.figure import Metric, PlotKind

CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = 1 << 20


def _resource(
    name: str,
    unit: str,
    includes: str,
    resolution: float,
    label: str,
    plot: PlotKind | None = "resources",
) -> Metric:
    """A figure of a server's resource use over a measurement: a side figure."""
    return Metric(
        name,
        unit,
        "lower",
        includes,
        resolution=resolution,
        repeated=False,
        headline=False,
        side=True,
        plot=plot,
        label=label,
    )


CPU_S = _resource(
    "resources.*.cpu_*_s",
    "s",
    "CPU time (user, system or guest ticks) of the instance's host processes, or of its "
    "runtime's daemons, over the measurement",
    0.01,
    "{} {} CPU time",
)
CPU_PCT = _resource(
    "resources.*.cpu_pct",
    "%",
    "(user + system ticks) / the measurement's duration, of one CPU (100 = one CPU busy)",
    1.0,
    "{} CPU use",
)
RSS_MAX_MIB = _resource(
    "resources.*.rss_max_mib",
    "MiB",
    "the largest sum of the processes' resident sets at a read (shared pages once per process)",
    4 / 1024,
    "{} peak RSS",
)
STALL_PCT = _resource(
    "resources.*.*_stall_pct",
    "%",
    "share of the measurement's time in which some of the instance's tasks waited for the "
    "resource (cpu, memory or io): the growth of the `some` total of its cgroup's pressure "
    "file (PSI; cgroup v2 only)",
    1e-4,
    "{} waiting for {}",
    plot=None,
)
FIGURES = (CPU_S, CPU_PCT, RSS_MAX_MIB, STALL_PCT)


@dataclass(frozen=True)
class Stat:
    """One process's counters: CPU ticks (user, system, guest) and resident pages."""

    user: int
    system: int
    guest: int
    rss_pages: int


def read_stat(pid: int, proc: Path = Path("/proc")) -> Stat | None:
    """`pid`'s counters from /proc/PID/stat; None when it is gone."""
    try:
        text = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    # the command name may hold spaces and parentheses: fields start after the last ')'
    fields = text[text.rindex(")") + 2 :].split()
    # fields[0] is field 3 (state): utime 14, stime 15, rss 24, guest_time 43
    return Stat(
        user=int(fields[11]),
        system=int(fields[12]),
        guest=int(fields[40]),
        rss_pages=int(fields[21]),
    )


def thread_cpu_ns(pids: list[int], proc: Path = Path("/proc")) -> dict[int, int]:
    """CPU time each thread of `pids` has run, in ns, by thread id (/proc/PID/task/TID/
    schedstat: the scheduler's own count, not whole ticks); a process or thread gone
    while read is left out."""
    out: dict[int, int] = {}
    for pid in pids:
        try:
            tids = os.listdir(proc / str(pid) / "task")
        except OSError:
            continue
        for tid in tids:
            try:
                text = (proc / str(pid) / "task" / tid / "schedstat").read_text()
                out[int(tid)] = int(text.split()[0])
            except (OSError, ValueError, IndexError):
                continue
    return out


@dataclass
class Part:
    """One side of a watch (the instance, or the daemons): its last read per pid and the
    ticks used since `begin`."""

    pids: Callable[[], list[int]]
    last: dict[int, Stat] = field(default_factory=dict)
    user: int = 0
    system: int = 0
    guest: int = 0
    rss_max: int = 0

    def read(self, proc: Path) -> tuple[int, int]:
        """Read every process now; add the ticks since the last read to the totals.
        Returns (ticks used since the last read, resident pages now)."""
        now: dict[int, Stat] = {}
        for pid in self.pids():
            st = read_stat(pid, proc)
            if st is not None:
                now[pid] = st
        used = 0
        for pid, st in now.items():
            before = self.last.get(pid, Stat(0, 0, 0, 0))
            du, ds, dg = st.user - before.user, st.system - before.system, st.guest - before.guest
            du, ds, dg = max(du, 0), max(ds, 0), max(dg, 0)  # a reused pid starts anew
            self.user, self.system, self.guest = self.user + du, self.system + ds, self.guest + dg
            used += du + ds
        rss = sum(st.rss_pages for st in now.values())
        self.rss_max = max(self.rss_max, rss)
        self.last = now
        return used, rss


class ProcWatch:
    """The resource use of one instance (and its runtime's daemons) over a measurement.

    `prefix` names its series points: `<prefix>/instance.cpu_pct`, `.rss_mib`,
    `.user_ticks`, `.system_ticks`, `.guest_ticks` (cumulative since `begin`), the same
    under `<prefix>/daemon.` when the runtime has daemons. `stalls` reads the instance
    cgroup's pressure totals (microseconds some task waited, per resource: v2 only), whose
    growth over the watch `end` gives as the share of its time the instance waited."""

    def __init__(
        self,
        prefix: str,
        instance_pids: Callable[[], list[int]],
        daemon_pids: list[int] | None = None,
        proc: Path = Path("/proc"),
        clock: Callable[[], float] = time.monotonic,
        stalls: Callable[[], dict[str, int] | None] | None = None,
    ) -> None:
        self.prefix = prefix
        self.stalls = stalls
        self.stalled: dict[str, int] | None = None
        self.proc = proc
        self.clock = clock
        self.parts = {"instance": Part(instance_pids)}
        if daemon_pids:
            pids = list(daemon_pids)
            self.parts["daemon"] = Part(lambda: pids)
        self.t0 = self.t_last = 0.0

    def begin(self) -> None:
        for part in self.parts.values():
            part.read(self.proc)
            part.user = part.system = part.guest = 0  # what ran before is not this one's
        self.stalled = self.stalls() if self.stalls else None
        self.t0 = self.t_last = self.clock()

    def tick(self, wall: float) -> list[tuple[str, float, float]]:
        """Series points (name, unix time `wall`, value) for the interval since the last
        read."""
        now = self.clock()
        dt = max(now - self.t_last, 1e-9)
        points = []
        for name, part in self.parts.items():
            used, rss = part.read(self.proc)
            values = {
                "cpu_pct": 100.0 * used / CLK_TCK / dt,
                "rss_mib": rss * PAGE / MIB,
                "user_ticks": float(part.user),
                "system_ticks": float(part.system),
                "guest_ticks": float(part.guest),
            }
            points += [(f"{self.prefix}/{name}.{k}", wall, v) for k, v in values.items()]
        self.t_last = now
        return points

    def end(self) -> dict[str, tuple[float, str]]:
        """Totals over the whole watch: per part, CPU seconds (user, system, guest), mean
        CPU % and peak RSS, as {metric: (value, unit)}."""
        for part in self.parts.values():
            part.read(self.proc)
        seconds = max(self.clock() - self.t0, 1e-9)
        out: dict[str, tuple[float, str]] = {}
        for name, part in self.parts.items():
            for kind, ticks in (
                ("user", part.user),
                ("system", part.system),
                ("guest", part.guest),
            ):
                out[CPU_S.of(name, kind).name] = (ticks / CLK_TCK, CPU_S.unit)
            busy = 100.0 * (part.user + part.system) / CLK_TCK / seconds
            out[CPU_PCT.of(name).name] = (busy, CPU_PCT.unit)
            out[RSS_MAX_MIB.of(name).name] = (part.rss_max * PAGE / MIB, RSS_MAX_MIB.unit)
        out.update(self._stalls(seconds))
        return out

    def _stalls(self, seconds: float) -> dict[str, tuple[float, str]]:
        """Per resource, the share of the watch's time some of the instance's tasks
        waited for it (%): the growth of its pressure total over the watch's duration."""
        now = self.stalls() if self.stalls and self.stalled else None
        if not now or not self.stalled:
            return {}
        return {
            STALL_PCT.of("instance", res).name: (
                min(100.0, max(0.0, 100.0 * (now[res] - was) / 1e6 / seconds)),
                STALL_PCT.unit,
            )
            for res, was in self.stalled.items()
            if res in now
        }
