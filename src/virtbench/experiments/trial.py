"""Where one measurement stands: which runtime, running which workload, in which
repetition, and whether that repetition is a warm-up. The experiments pass it to the
function that measures once (boot, throughput, isolation)."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Trial:
    """One measurement's place in the schedule: `runtime` measured running `workload`,
    in repetition `repetition` (a warm-up, stored flagged, when `warmup`)."""

    runtime: str
    workload: str
    repetition: int
    warmup: bool
