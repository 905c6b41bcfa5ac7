"""The host resource sampler: CPU idle %, MemAvailable % and free swap % over a run, and
the availability of the host over a window.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psutil


def _memory_pct() -> dict[str, float]:
    """MemAvailable and free swap, % (100 without swap)."""
    vm = psutil.virtual_memory()
    sw = psutil.swap_memory()
    return {
        "host.mem_available_pct": 100.0 * vm.available / vm.total,
        "host.swap_free_pct": 100.0 - sw.percent if sw.total else 100.0,
    }


def availability(window_s: float) -> dict[str, float]:
    """Host resource availability (%): CPU idle over the next `window_s` seconds (this
    call sleeps that long), then MemAvailable and free swap."""
    idle = float(psutil.cpu_times_percent(interval=window_s).idle)
    return {"host.cpu_idle_pct": idle, **_memory_pct()}


class HostSampler:
    """Samples host CPU idle %, MemAvailable % and swap free % every `interval` seconds
    in a thread, and hands batches of (name, unix time, value) to `sink`; while a
    measurement is `watching` an instance, that instance's resource use too
    (measure/procstat.py)."""

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
        psutil.cpu_times_percent(None)  # prime (psutil keeps this state per thread)
        while not self._stop.wait(self.interval):
            with self._gate:
                now = time.time()
                cpu = psutil.cpu_times_percent(None)
                values = {
                    "host.cpu_idle_pct": float(cpu.idle),
                    "host.steal_pct": float(getattr(cpu, "steal", 0.0)),
                    **_memory_pct(),
                }
                points = [(name, now, value) for name, value in values.items()]
                for watch in self._watches:
                    try:
                        points += watch.tick(now)
                    except Exception:  # an instance's processes went: no point this tick
                        continue
                try:
                    self.sink(points)
                except Exception:  # the sampler must never take a run down
                    return

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """No tick while this is held (a launch being timed)."""
        with self._gate:
            yield

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
