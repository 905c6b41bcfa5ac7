"""`density` with `sharing = ["off", "ksm"]`: once the pile-up is up (its last step
read, its liveness probes asked), kernel samepage merging is switched on for the run
(host/ksm.py: scanning fast, what the host had saved first and put back after, the
pages it merged unmerged), and the host is read again once sharing has settled (a whole
scan adds nothing more, or `ksm_settle_timeout_s`), as operators run VM-class sandboxes
and as Kata's density figures wait for KSM before reading:

  density.ksm_settle          KSM switched on -> sharing settled (s)
  density.ksm_saved           what it saved, per instance: pages sharing another's
                              frame x 4 KiB / instances running (MiB)
  density.unshared_per_instance  host memory in use just before KSM is switched on
                              (caches dropped), less that before the first instance, /
                              instances running (MiB)
  density.shared_per_instance the same once sharing settled: memory per instance after
                              sharing, by the same method as the figure before it (their
                              difference, against what KSM says it saved, cross-checks it)

One each per pile-up (its `background` the instances running); the params say whether
sharing settled and after how many full scans. Only memory a process marked mergeable is
scanned: QEMU marks its guests' RAM (its default), containers' processes mark none.
"""

from __future__ import annotations

from typing import Any

from virtbench.figure import KIB_MIB, pile_metric
from virtbench.host import ksm
from virtbench.measure import memory

MIB = 1 << 20
KSM_SETTLE = pile_metric(
    "density.ksm_settle",
    "s",
    "lower",
    "sharing = ksm: KSM switched on once the pile-up is up -> two full scans in a row "
    "added nothing to the pages shared",
    resolution=0.5,
    label="time for sharing to settle",
)
KSM_SAVED = pile_metric(
    "density.ksm_saved",
    "MiB",
    "higher",
    "sharing = ksm: pages sharing another's frame once settled x 4 KiB, / instances running",
    resolution=KIB_MIB,
    label="memory sharing saved per instance",
)
UNSHARED_PER_INSTANCE = pile_metric(
    "density.unshared_per_instance",
    "MiB",
    "lower",
    "sharing = ksm: host memory in use just before KSM is switched on (caches dropped), "
    "less that before the first instance, / instances running",
    resolution=KIB_MIB,
    label="memory per instance, before sharing",
)
SHARED_PER_INSTANCE = pile_metric(
    "density.shared_per_instance",
    "MiB",
    "lower",
    "sharing = ksm: host memory in use once sharing settled (caches dropped), less that "
    "before the first instance, / instances running",
    resolution=KIB_MIB,
    label="memory per instance, shared",
)
SHARING_METRICS = (KSM_SETTLE, KSM_SAVED, UNSHARED_PER_INSTANCE, SHARED_PER_INSTANCE)


def shared(pile: Any) -> None:
    """With `ksm` among the sharing modes and instances up: KSM on, settled, the host read
    again; KSM back as the host had it whatever happens."""
    if "ksm" not in pile.cfg.sharing or not pile.started or pile.none_used is None:
        return
    host, n = pile.s.host, len(pile.started)
    why = host.sharing_problem()
    if why is not None:
        for metric in (KSM_SAVED, KSM_SETTLE):
            pile.sample(metric, None, n, error=f"{pile.runtime}: {why}")
        return
    unshared = _in_use(host, pile.none_used, n)
    held = host.sharing(pile.rt.ctx.state.dir)  # the run's state directory
    held.apply()
    try:
        pile.s.say(f"density: {pile.runtime} sharing pages (KSM) among {n} instances")
        waited, counters, settled = ksm.settle(host.shared, pile.cfg.ksm_settle_timeout_s)
        at = {**pile.params, "ksm_settled": settled, "ksm_full_scans": counters.full_scans}
        shared_each = _in_use(host, pile.none_used, n)
    finally:
        for why in held.restore():
            pile.s.event("warning", f"density: KSM not put back as it was: {why}")
    pile.sample(KSM_SETTLE, waited, n, params=at)
    pile.sample(KSM_SAVED, counters.saved_mib / n, n, params=at)
    pile.sample(UNSHARED_PER_INSTANCE, unshared, n, params=at)
    pile.sample(SHARED_PER_INSTANCE, shared_each, n, params=at)


def _in_use(host: Any, none_used: float, n: int) -> float:
    """Host memory in use now (caches dropped), less `none_used`, per instance (MiB)."""
    host.drop_caches()
    return (memory.in_use(host.meminfo(), host.pcp_free()) / MIB - none_used) / n
