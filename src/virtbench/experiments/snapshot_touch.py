"""`snapshot`'s first touch: once a restored instance beats again, how long it takes the
instance to touch the memory it dirtied before its checkpoint (with `dirty_mib`), as a
restore that maps its image lazily pays on the first touches of guest memory, not in the
restore call.

`vb-touch` is run in the restored instance through the runtime's exec; it sends SIGUSR1
to the instance's vb-ready, which reads one word of every 4 KiB page it dirtied, times
that on its own monotonic clock, and from then on carries the time in its heartbeats
(guest/vb-ready.c). Per level, beside restore-to-ready, warm and cold:

  snapshot.first_touch        the dirtied MiB read once, inside the restored instance
  snapshot.cold_first_touch   the same after a restore from a cold disk

A runtime that cannot run a command in its instance (a VM's minimal guest, which the
beat workload boots, has no agent) says so once, as failed samples.
"""

from __future__ import annotations

import time

from virtbench.errors import InstanceError
from virtbench.experiments.held import cannot
from virtbench.experiments.session import Session
from virtbench.figure import Metric
from virtbench.measure.probe import Beat
from virtbench.runtimes.base import Instance

ASK = ["/bin/vb-touch"]

TOUCH = Metric(
    "snapshot.first_touch",
    "ms",
    "lower",
    "after the restore, once it beat again: the instance reads one word of every page it "
    "dirtied before the checkpoint (vb-touch asks vb-ready), timed inside it",
    resolution=1e-6,
    headline=False,
    label="first touch after a restore",
)
COLD_TOUCH = Metric(
    "snapshot.cold_first_touch",
    "ms",
    "lower",
    "cache = cold: as snapshot.first_touch, after a restore from an image out of the page cache",
    resolution=1e-6,
    headline=False,
    label="first touch after a cold restore",
)
TOUCH_METRICS = (TOUCH, COLD_TOUCH)


def touch(cold: bool) -> Metric:
    """The first touch's figure: its cold twin for a cold restore."""
    return COLD_TOUCH if cold else TOUCH


def first_touch(s: Session, inst: Instance, after: Beat, timeout: float) -> float:
    """Ask the restored `inst` (whose first beat after its restore was `after`) to touch
    its dirtied memory; the ms it took, as the beat that carried it says. InstanceError
    if the command fails or no beat carries a touch within `timeout`."""
    res = s.runtimes[inst.runtime].exec.run(inst, ASK, timeout)
    if res.status != 0:
        raise InstanceError(f"{inst.name}: vb-touch exited {res.status}: {res.stderr[-200:]}")
    deadline = time.monotonic() + timeout
    seen = after.count
    while (left := deadline - time.monotonic()) > 0:
        beat = s.probe.wait_beat(inst.name, seen, left)
        if beat is None:
            break
        if beat.touched_ns:
            return beat.touched_ns / 1e6
        seen = beat.count
    raise InstanceError(f"{inst.name}: no heartbeat carried its touch in {timeout:g} s")


def record_touch(
    s: Session, inst: Instance, after: Beat, metric: Metric, base: dict, timeout: float
) -> None:
    """The first touch of a restored instance, as `metric` (its level's and cache's):
    its sample, failed with why where it failed, or the runtime's "cannot" (once) where
    no command can run in the instance as it was started."""
    why = s.runtimes[inst.runtime].exec.problem_in(inst)
    if why is not None:
        cannot(s, why, base, (metric,))
        return
    try:
        value, error = first_touch(s, inst, after, timeout), ""
    except InstanceError as exc:
        value, error = None, str(exc)
    s.record(metric.sample(value, error=error, **base))
