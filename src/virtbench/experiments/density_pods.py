"""`density`'s pods (`cri`): at each step of a pile-up, the CPU its pods' overhead (the
pause sandbox, runsc's sentry and gofer, the shims) uses while every instance idles,
`pod_idle_cpu_s` seconds long: what a RuntimeClass's `overhead.podFixed.cpu` must cover.

  density.pod_idle_cpu    the overhead's CPU time over the window, per pod, in
                          millicores (1000 = one CPU busy all the time)

Each pod's overhead counters (Memory.overhead_cpu) are read before and after the window;
a counter read only once (a shim thread that started or ended in the window) is left
out, so the figure is a lower bound when threads come and go."""

from __future__ import annotations

import time
from typing import Any

NS_S = 1e9


def idle_cpu(pile: Any) -> None:
    """One `density.pod_idle_cpu` sample at the instances running now; none where the
    runtime has no pods (no overhead counters) or the window is 0."""
    window, running = pile.cfg.pod_idle_cpu_s, pile.started
    if not running or window <= 0:
        return
    before = [pile.rt.memory.overhead_cpu(i) for i in running]
    if all(b is None for b in before):
        return
    t0 = time.monotonic_ns()
    time.sleep(window)
    after = [pile.rt.memory.overhead_cpu(i) for i in running]
    elapsed = time.monotonic_ns() - t0
    n, at = len(running), {**pile.params, "window_s": round(elapsed / NS_S, 3)}
    if any(b is None for b in before) or any(a is None for a in after):
        unread = sum(b is None or a is None for b, a in zip(before, after, strict=True))
        why = f"the overhead's CPU time of {unread} of {n} pods could not be read"
        pile.sample("density.pod_idle_cpu", None, "millicores", n, params=at, error=why)
        return
    used = sum(
        max(0, a[k] - b[k]) for b, a in zip(before, after, strict=True) for k in a.keys() & b
    )
    pile.sample("density.pod_idle_cpu", used / elapsed * 1000 / n, "millicores", n, params=at)
