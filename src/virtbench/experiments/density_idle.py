"""`density`'s idle window: with `idle_cpu_s` > 0, once the pile-up is up (before its
last step drops the caches, after which every process faults its pages back in: a cost
of the benchmark, not of the instance), the CPU each instance uses while every one
idles, over `idle_cpu_s` seconds: what an instance costs a host's CPUs, and for a pod
(`cri`) what its overhead alone costs, which a RuntimeClass's `overhead.podFixed.cpu`
must cover.

  density.idle_cpu        per instance: its cgroup's CPU time and that of its processes
                          outside it (a shim, a VMM's helpers) over the window / the
                          window, in millicores (1000 = one CPU busy all the time)
  density.pod_idle_cpu    per pod: the same of its overhead alone (its cgroup beyond its
                          container's, and its shim)

The window opens `SETTLE_S` after the last instance got ready. Idle work comes in bursts
(a runc v2 shim here wakes every 30 s): a window of whole periods gives each instance its
share. The processes are found before the window (asking an engine for them would wake
them inside it); their threads' CPU is the scheduler's own count (schedstat, in ns), read
before and after, and a thread read only once (it started or ended in between) is left
out, so a figure is a lower bound when threads come and go."""

from __future__ import annotations

import time
from typing import Any

from virtbench.figure import pile_metric

SETTLE_S = 1.0
IDLE_CPU = pile_metric(
    "density.idle_cpu",
    "millicores",
    "lower",
    "an instance's CPU while every instance of the pile-up idles: its cgroup's CPU "
    "time and its processes' outside it, over idle_cpu_s",
    resolution=1e-3,
    label="idle CPU of each instance",
)
POD_IDLE_CPU = pile_metric(
    "density.pod_idle_cpu",
    "millicores",
    "lower",
    "a pod's overhead's CPU (`cri`) while every instance of the pile-up idles: its "
    "cgroup's CPU time beyond its container's and its shim's threads', over "
    "idle_cpu_s, per pod",
    resolution=1e-3,
    label="pod overhead's idle CPU",
)
IDLE_METRICS = (IDLE_CPU, POD_IDLE_CPU)
FIGURES = {"whole": IDLE_CPU, "overhead": POD_IDLE_CPU}


def idle_cpu(pile: Any) -> None:
    """A `density.idle_cpu` sample per running instance, and a `density.pod_idle_cpu`
    per pod (as every per-instance figure, `background` is its index in the pile-up; the
    instances running are in its params); none where the window is 0."""
    window, running = pile.cfg.idle_cpu_s, list(pile.started)
    if not running or window <= 0:
        return
    pile.s.say(f"density: {pile.runtime} idle CPU of {len(running)} instances over {window:g} s")
    pids = [pile.rt.observe.pids(i) for i in running]
    time.sleep(SETTLE_S)
    before = [_read(pile, i, p) for i, p in zip(running, pids, strict=True)]
    t0 = time.monotonic_ns()
    time.sleep(window)
    after = [_read(pile, i, p) for i, p in zip(running, pids, strict=True)]
    elapsed = time.monotonic_ns() - t0
    at = {**pile.params, "window_s": round(elapsed / 1e9, 3), "instances_running": len(running)}
    for i, (b, a) in enumerate(zip(before, after, strict=True)):
        for part, metric in FIGURES.items():
            now, then = a[part], b[part]
            if part == "overhead" and then is None and now is None:
                continue  # no pod: no overhead of its own
            if now is None or then is None:
                why = "its CPU time could not be read (its cgroup or processes gone)"
                pile.sample(metric, None, i, params=at, error=why)
                continue
            used = sum(max(0, now[k] - then[k]) for k in now.keys() & then)
            pile.sample(metric, used / elapsed * 1000, i, params=at)


def _read(pile: Any, inst: Any, pids: list[int]) -> dict[str, dict[str, int] | None]:
    """The instance's CPU counters now: the whole (`pids` as found before the window)
    and its overhead alone."""
    memory = pile.rt.memory
    return {"whole": memory.cpu_counters(inst, pids), "overhead": memory.overhead_cpu(inst)}
