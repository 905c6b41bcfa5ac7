"""`density`'s pods (`cri`): once the pile-up is up (before its last step drops the
caches, after which every shim faults its pages back in: a cost of the benchmark, not of
the pod), the CPU each pod's overhead (the pause sandbox, runsc's sentry and gofer, its
shim) uses while every instance idles, over `pod_idle_cpu_s`: what a RuntimeClass's
`overhead.podFixed.cpu` must cover.

  density.pod_idle_cpu    per pod: its overhead's CPU time over the window / the
                          window, in millicores (1000 = one CPU busy all the time)

The window opens `SETTLE_S` after the last pod got ready. Idle work comes in bursts (a
runc v2 shim here wakes every 30 s): a window of whole periods gives each pod its share.
Each pod's counters (Memory.overhead_cpu) are read before and after the window; a counter
read only once (a shim thread that started or ended in between) is left out, so a pod's
figure is a lower bound when its threads come and go."""

from __future__ import annotations

import time
from typing import Any

SETTLE_S = 1.0


def idle_cpu(pile: Any) -> None:
    """A `density.pod_idle_cpu` sample per running pod (as every per-instance figure,
    its `background` is its index in the pile-up; the pods running are in its params);
    none where the runtime has no pods (no overhead counters) or the window is 0."""
    window, running = pile.cfg.pod_idle_cpu_s, list(pile.started)
    if not running or window <= 0 or pile.rt.memory.overhead_cpu(running[-1]) is None:
        return
    pile.s.say(f"density: {pile.runtime} idle CPU of {len(running)} pods over {window:g} s")
    time.sleep(SETTLE_S)
    before = [pile.rt.memory.overhead_cpu(i) for i in running]
    t0 = time.monotonic_ns()
    time.sleep(window)
    after = [pile.rt.memory.overhead_cpu(i) for i in running]
    elapsed = time.monotonic_ns() - t0
    n = len(running)
    for i, (b, a) in enumerate(zip(before, after, strict=True)):
        at = {**pile.params, "window_s": round(elapsed / 1e9, 3), "pods_running": n}
        if a is None or b is None:
            why = "its overhead's CPU time could not be read (its cgroup or shim gone)"
            pile.sample("density.pod_idle_cpu", None, "millicores", i, params=at, error=why)
            continue
        used = sum(max(0, a[k] - b[k]) for k in a.keys() & b)
        pile.sample("density.pod_idle_cpu", used / elapsed * 1000, "millicores", i, params=at)
