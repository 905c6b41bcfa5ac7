"""What one step of a plan costs here: the parts an experiment type's `estimate` adds up.

A launch costs what a start and a stop of the runtime take here: the median of this
host's earlier boot samples when the store has them (run/plan.py `launch_costs`), else the
typical figure its driver declares (`Runtime.typical_launch_s`); a timed launch adds the
quiet-host wait. A measurement costs its workload's `measures.seconds(params, level)`
when the workload says, else the duration its parameters name (`duration_s`, `time_s`,
`runtime_s`), else 10 s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from virtbench import workloads

LINUX_GUEST_S = 3.0  # a Linux guest under emulation boots in ~1.8 s here, plus its stop
QUIET_WAIT_S = 0.15  # a timed launch first waits for a quiet host
DEFAULT_MEASURE_S = 10.0


@dataclass(frozen=True)
class Estimate:
    """One experiment on one runtime: the instances it starts and about how long it takes."""

    launches: int
    seconds: float
    detail: str


def measure_s(name: str, params: Any, level: Any) -> float:
    """Seconds one measurement of workload `name` at `level` takes."""
    measures = workloads.get(name).measures
    if measures is not None and measures.seconds is not None:
        return float(measures.seconds(params, level))
    return DEFAULT_MEASURE_S


@dataclass(frozen=True)
class Costs:
    """The costs of one runtime here, as an estimate adds them up."""

    runtime: str
    driver: str  # the driver's label it stands on
    known: dict[str, float]  # runtime -> start + stop seconds measured here before
    family: str  # its driver's family ("vm", "container", ...)
    typical_s: float = 1.0  # its driver's typical start + stop (Runtime.typical_launch_s)

    def launch(self, serving: bool = False) -> float:
        """One start and stop (of a Linux guest for a VM's server, when `serving`)."""
        if self.runtime in self.known:
            return self.known[self.runtime]
        if serving and self.family == "vm":
            return LINUX_GUEST_S
        return self.typical_s

    def timed_launch(self) -> float:
        """One timed launch: a start and stop after the quiet-host wait."""
        return self.launch() + QUIET_WAIT_S

    def worker(self, name: str, params: Any) -> float:
        """A worker's measurement, every level of it."""
        measures = workloads.get(name).measures
        levels = measures.levels(params) if measures is not None else [None]
        return sum(measure_s(name, params, lv) for lv in levels)
