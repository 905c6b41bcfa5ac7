"""`pause`: how fast a paused instance runs again, as a sandbox pool parks idle sandboxes.

Per runtime and repetition, one `beat` instance is started and made ready (untimed): it
sends a heartbeat every 2 ms carrying a token of its own and a sequence number. Then,
`cycles` times, through the runtime's own pause (the cgroup freezer for native and
nspawn, `runc pause`, `docker pause`, `lxc-freeze`, QEMU's stop: runtimes/controls.py):

  pause.pause            the pause call -> it returned (the instance frozen)
  (held for hold_s: a heartbeat that arrives then fails the cycle -- it was not paused)
  pause.resume           the resume call -> it returned
  pause.resume_to_ready  the resume call -> the first heartbeat after it reached the host,
                         with the instance's token and a later sequence number

The minimal VM guest has no timer: it counts its heartbeat period on the TSC, which may
add up to one period (about 2 ms) after a QEMU stop/cont. One unit of measurement (`run
--resume`) is a runtime's repetition.
"""

from __future__ import annotations

import time
from typing import Literal

from pydantic import Field

from virtbench.errors import InstanceError
from virtbench.experiments.estimate import Costs, Estimate
from virtbench.experiments.held import Operation, each_repetition, recorded, running
from virtbench.experiments.kind import ExperimentType
from virtbench.experiments.session import Session
from virtbench.figure import MONO, NS_MS, Metric
from virtbench.measure.probe import Beat
from virtbench.runtimes.base import Instance
from virtbench.tables.base import (
    CommonExperiment,
)

UNIT = ("runtime", "repetition", "workload")

# The figures it records (virtbench.figure).
PAUSE = Metric(
    "pause.pause",
    "ms",
    "lower",
    "the pause call (freezer, runc/docker pause, lxc-freeze, QEMU stop) -> it returned" + MONO,
    resolution=NS_MS,
    headline=False,
    label="pause call",
)
RESUME = Metric(
    "pause.resume",
    "ms",
    "lower",
    "the resume call -> it returned" + MONO,
    resolution=NS_MS,
    headline=False,
    label="resume call",
)
RESUME_TO_READY = Metric(
    "pause.resume_to_ready",
    "ms",
    "lower",
    "the resume call -> the instance's next heartbeat reached the host (its token, a later "
    "number; a minimal VM guest's may come up to one 2 ms period later)" + MONO,
    resolution=NS_MS,
    label="back from pause",
)
METRICS = (PAUSE, RESUME, RESUME_TO_READY)  # a failed cycle is a failed sample of each


class PauseExperiment(CommonExperiment):
    """Pause -> hold `hold_s` -> resume -> the next heartbeat, `cycles` times per
    repetition on one instance."""

    type: Literal["pause"]
    workload: Literal["beat"] = "beat"
    runs: int = Field(default=3, ge=1, le=1000)
    cycles: int = Field(default=10, ge=1, le=10000)
    hold_s: float = Field(default=0.2, ge=0.01, le=600)
    timeout_s: float = Field(default=60.0, gt=0, le=3600)

    def instance_workloads(self) -> list[str]:
        return [self.workload]


LAND_S = 0.02  # for heartbeats already on their way when the pause returned


def run(s: Session, cfg: PauseExperiment) -> None:
    op = Operation("pause", lambda rt: rt.pause.problem(), METRICS, pause_cycles)
    each_repetition(s, cfg, op)


def steady_beat(s: Session, inst: Instance, timeout: float) -> Beat:
    """The instance's heartbeat once it beats (the second one: its first may have been
    sent before the host listened for beats)."""
    beat = s.probe.wait_beat(inst.name, 1, timeout)
    if beat is None:
        raise InstanceError(
            f"{inst.name}: ready, but no heartbeat in {timeout:g} s: {inst.log_tail()}"
        )
    return beat


def next_beat(s: Session, inst: Instance, after: Beat, timeout: float, what: str) -> Beat:
    """The first heartbeat after `after`; InstanceError unless it is the same instance's
    (same token) and goes on from it (a later sequence number)."""
    beat = s.probe.wait_beat(inst.name, after.count, timeout)
    if beat is None:
        raise InstanceError(
            f"{inst.name}: no heartbeat in {timeout:g} s after {what}: {inst.log_tail()}"
        )
    if beat.token != after.token:
        raise InstanceError(
            f"{inst.name}: after {what} it beats with token {beat.token}, not "
            f"{after.token}: not the same instance"
        )
    if beat.seq <= after.seq:
        raise InstanceError(
            f"{inst.name}: after {what} its heartbeat number went back from "
            f"{after.seq} to {beat.seq}"
        )
    return beat


def silent(s: Session, inst: Instance, quiet_s: float, what: str) -> Beat:
    """After a pause or checkpoint returned: the last heartbeat once those already on
    their way have landed; InstanceError if another comes in the next `quiet_s`."""
    time.sleep(LAND_S)
    held = s.probe.last_beat(inst.name)
    assert held is not None  # it beat before (steady_beat)
    time.sleep(quiet_s)
    late = s.probe.last_beat(inst.name)
    if late is not None and late.count != held.count:
        raise InstanceError(
            f"{inst.runtime}: {late.count - held.count} heartbeats came in "
            f"the {quiet_s:g} s after {what}"
        )
    return held


def pause_cycles(s: Session, runtime: str, cfg: PauseExperiment, base: dict) -> None:
    rt = s.runtimes[runtime]
    with running(s, runtime, cfg.workload, cfg.timeout_s, control=True) as inst:
        steady_beat(s, inst, cfg.timeout_s)
        for cycle in range(cfg.cycles):
            params = dict(base["params"], cycle=cycle)
            b = {**base, "params": params}
            try:
                with s.timed("pause", runtime, params):
                    t0 = time.monotonic_ns()
                    rt.pause.pause(inst)
                    t1 = time.monotonic_ns()
                held = silent(s, inst, cfg.hold_s, "its pause returned: not paused")
                with s.timed("pause", runtime, params, wait=False):
                    t2 = time.monotonic_ns()
                    rt.pause.resume(inst)
                    t3 = time.monotonic_ns()
                    beat = next_beat(s, inst, held, cfg.timeout_s, "its resume")
            except InstanceError as exc:
                for m in METRICS:
                    s.record(m.sample(None, error=str(exc), **b))
                raise recorded(exc) from None
            s.record(PAUSE.sample((t1 - t0) / 1e6, **b))
            s.record(RESUME.sample((t3 - t2) / 1e6, **b))
            s.record(RESUME_TO_READY.sample((beat.t_ns - t2) / 1e6, **b))


def estimate(cfg: PauseExperiment, cost: Costs) -> Estimate:
    """One instance per repetition, `cycles` pauses held `hold_s` each."""
    t = cfg.runs * (cost.launch() + cfg.cycles * (cfg.hold_s + 0.1))
    return Estimate(cfg.runs, t, f"{cfg.runs} x {cfg.cycles} pause/resume cycles")


TYPE = ExperimentType(
    "pause",
    PauseExperiment,
    run,
    UNIT,
    order=90,
    estimate=estimate,
    metrics=METRICS,
)
