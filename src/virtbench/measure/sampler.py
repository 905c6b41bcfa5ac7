"""The host resource sampler: CPU idle %, MemAvailable % and free swap % over a run, and
the availability of the host over a window (the scalability points). The host's figures
are declared here, where they are read: the run's figures (virtbench.metrics.run) list
them.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psutil

from virtbench.figure import Metric


def _host(name: str, includes: str, resolution: float | None, label: str) -> Metric:
    return Metric(
        name,
        "%",
        "higher",
        includes,
        resolution=resolution,
        repeated=False,
        summary="series",
        compared=False,
        ab_compared=False,
        plot="scalability",
        headline=False,
        side=True,
        label=label,
    )


# --- the host's availability at each scalability point ------------------------------------
CPU_IDLE_PCT = _host(
    "host.cpu_idle_pct",
    "idle share of all the host's CPUs over the `settle_s` window before the point's "
    "measurements (psutil, /proc/stat; rounded to 0.1)",
    0.1,
    "CPU idle",
)
MEM_AVAILABLE_PCT = _host(
    "host.mem_available_pct", "MemAvailable / MemTotal after that window", None, "memory available"
)
SWAP_FREE_PCT = _host(
    "host.swap_free_pct",
    "free swap / swap total (100 without swap; psutil, rounded to 0.1)",
    0.1,
    "swap free",
)
# the run's time series only (the host sampler): CPU taken by the hypervisor's other guests
STEAL_PCT = Metric(
    "host.steal_pct",
    "%",
    "lower",
    "share of the host's CPU time stolen by the hypervisor over the sampler's period "
    "(psutil, /proc/stat; rounded to 0.1)",
    resolution=0.1,
    repeated=False,
    summary="series",
    compared=False,
    ab_compared=False,
    headline=False,
    side=True,
    label="CPU steal",
)
OTHER = Metric(
    "host.*",
    "",
    None,
    "a host figure not declared here",
    lower_bound=None,
    repeated=False,
    summary="series",
    compared=False,
    ab_compared=False,
    headline=False,
    side=True,
    label="host {}",
)
FIGURES = (CPU_IDLE_PCT, MEM_AVAILABLE_PCT, SWAP_FREE_PCT, STEAL_PCT, OTHER)


def _memory_pct() -> dict[str, float]:
    """MemAvailable and free swap, % (100 without swap)."""
    vm = psutil.virtual_memory()
    sw = psutil.swap_memory()
    return {
        MEM_AVAILABLE_PCT.name: 100.0 * vm.available / vm.total,
        SWAP_FREE_PCT.name: 100.0 - sw.percent if sw.total else 100.0,
    }


def availability(window_s: float) -> dict[str, float]:
    """Host resource availability (%): CPU idle over the next `window_s` seconds (this
    call sleeps that long), then MemAvailable and free swap."""
    idle = float(psutil.cpu_times_percent(interval=window_s).idle)
    return {CPU_IDLE_PCT.name: idle, **_memory_pct()}


class HostReads:
    """A tick's host figures in two reads: /proc/stat's first line and /proc/meminfo,
    each re-read at offset 0 through a descriptor kept open. The values are psutil's
    (`cpu_times_percent` since the previous tick, `virtual_memory().available / total`,
    `swap_memory().percent`), computed as psutil computes them; psutil's own calls read
    /proc/meminfo twice and /proc/vmstat (for swap-ins) too, and build many fields no
    tick keeps. Where /proc/meminfo lacks a figure (or has one psutil would not take
    as it stands), psutil itself is asked."""

    def __init__(self, procfs: str = "/proc") -> None:
        self._stat = os.open(f"{procfs}/stat", os.O_RDONLY | os.O_CLOEXEC)
        self._meminfo = os.open(f"{procfs}/meminfo", os.O_RDONLY | os.O_CLOEXEC)
        self._ticks = os.sysconf("SC_CLK_TCK")
        fields = psutil.cpu_times()._fields  # what psutil reads of the line, in order
        self._n = len(fields)
        self._at: dict[str, int] = {
            name: fields.index(name) for name in ("idle", "steal") if name in fields
        }
        self._guest = [fields.index(f) for f in ("guest", "guest_nice") if f in fields]
        self._last = self._cpu()

    def close(self) -> None:
        os.close(self._stat)
        os.close(self._meminfo)

    def _cpu(self) -> list[float]:
        line = os.pread(self._stat, 4096, 0).split(b"\n", 1)[0].split()
        return [float(x) / self._ticks for x in line[1 : self._n + 1]]

    def cpu_pct(self) -> dict[str, float]:
        """CPU idle and steal % since the previous call (psutil.cpu_times_percent)."""
        now = self._cpu()
        deltas = [max(0, b - a) for a, b in zip(self._last, now, strict=True)]
        self._last = now
        total = sum(deltas)
        for i in self._guest:  # already in user and nice (psutil does the same)
            total -= deltas[i]
        scale = 100.0 / max(1, total)

        def pct(name: str) -> float:
            i = self._at.get(name)
            return 0.0 if i is None else min(max(0.0, round(deltas[i] * scale, 1)), 100.0)

        return {CPU_IDLE_PCT.name: pct("idle"), STEAL_PCT.name: pct("steal")}

    def memory_pct(self) -> dict[str, float]:
        """MemAvailable and free swap, % (100 without swap), as `_memory_pct` says them."""
        kb = {}
        for line in os.pread(self._meminfo, 65536, 0).splitlines():
            name, _, rest = line.partition(b":")
            if name in (b"MemTotal", b"MemFree", b"MemAvailable", b"SwapTotal", b"SwapFree"):
                kb[name] = int(rest.split()[0]) * 1024
        total, avail = kb.get(b"MemTotal", 0), kb.get(b"MemAvailable", 0)
        if b"SwapTotal" not in kb or b"SwapFree" not in kb or not 0 < avail <= total:
            return _memory_pct()
        swap, free = kb[b"SwapTotal"], kb[b"SwapFree"]
        used_pct = round(float(swap - free) / swap * 100, 1) if swap else 0.0
        return {
            MEM_AVAILABLE_PCT.name: 100.0 * avail / total,
            SWAP_FREE_PCT.name: 100.0 - used_pct if swap else 100.0,
        }


FLUSH_S = 1.0  # the points of the ticks in this long handed to the sink at once


class HostSampler:
    """Samples host CPU idle %, MemAvailable % and swap free % every `interval` seconds
    in a thread, and hands batches of (name, unix time, value) to `sink`; while a
    measurement is `watching` an instance, that instance's resource use too
    (measure/procstat.py). Faster than 1 Hz, the ticks of about a second go to the sink
    together (one store transaction, not one a tick); `stop` hands it the last ones."""

    def __init__(
        self, sink: Callable[[list[tuple[str, float, float]]], None], interval: float = 1.0
    ) -> None:
        self.sink = sink
        self.interval = interval
        self._stop = threading.Event()
        # Held while a launch is timed: the sampler's tick (and its store write) waits,
        # so the harness's own thread never competes with the launch it measures.
        self._gate = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="vb-sampler", daemon=True)
        self._watches: list[Any] = []

    @contextlib.contextmanager
    def watching(self, watch: Any) -> Iterator[Any]:
        """Sample `watch` (a ProcWatch: begun here, ended by the caller) at every tick
        while the block runs."""
        watch.begin()
        with self._gate:
            self._watches.append(watch)
        try:
            yield watch
        finally:
            with self._gate:
                self._watches.remove(watch)

    def start(self) -> HostSampler:
        self._thread.start()
        return self

    def _loop(self) -> None:
        reads = HostReads()  # primed: CPU times from here on
        every = max(1, round(FLUSH_S / self.interval))
        points: list[tuple[str, float, float]] = []
        try:
            ticks = 0
            while not self._stop.wait(self.interval):
                with self._gate:
                    points += self._tick(reads)
                    ticks += 1
                    if ticks % every == 0 and not self._hand(points):
                        return
            with self._gate:
                self._hand(points)
        finally:
            reads.close()

    def _tick(self, reads: HostReads) -> list[tuple[str, float, float]]:
        """One tick's points."""
        now = time.time()
        values = {**reads.cpu_pct(), **reads.memory_pct()}
        points = [(name, now, value) for name, value in values.items()]
        for watch in self._watches:
            try:
                points += watch.tick(now)
            except Exception:  # an instance's processes went: no point this tick
                continue
        return points

    def _hand(self, points: list[tuple[str, float, float]]) -> bool:
        """`points` (emptied) handed to the sink, if any; False if the sink failed."""
        if not points:
            return True
        batch = points[:]
        points.clear()
        try:
            self.sink(batch)
        except Exception:  # the sampler must never take a run down
            return False
        return True

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """No tick while this is held (a launch being timed)."""
        with self._gate:
            yield

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
