"""`snapshot`: checkpoint a running instance to disk and restore it, as a sandbox service
parks and revives sandboxes.

Per runtime and repetition, one fresh `beat` instance is started and made ready
(untimed); it sends a heartbeat every 2 ms carrying a token of its own and a sequence
number. Then, through the runtime's own checkpoint (`runsc checkpoint`, QEMU's migration
to a file, CRIU for runc and crun where `criu check` passes: runtimes/controls.py):

  snapshot.checkpoint        the checkpoint call -> it returned (the state on disk, the
                             instance gone: a heartbeat after it fails the repetition)
  snapshot.size              the checkpoint image's size on disk (du)
  snapshot.restore           the restore call -> it returned
  snapshot.restore_to_ready  the restore call -> the first heartbeat reached the host,
                             with the token drawn before the checkpoint and a later
                             sequence number: the same instance, going on

The image, on disk in the run's data directory, is removed after each repetition (and by
`virtbench clean` after a crash, with that directory). A runtime that cannot checkpoint
here is said once, with why (CRIU's `criu check` output where that is the reason), as
failed samples.
"""

from __future__ import annotations

import contextlib
import time
from typing import Literal

from pydantic import Field

from virtbench.artifacts.rootfs import disk_usage
from virtbench.errors import InstanceError
from virtbench.experiments.estimate import Costs, Estimate
from virtbench.experiments.held import each_repetition, recorded, running
from virtbench.experiments.kind import ExperimentType, Ranked
from virtbench.experiments.pause import next_beat, silent, steady_beat
from virtbench.experiments.session import Session
from virtbench.metrics.model import KIB_MIB, MONO, NS_MS, Metric
from virtbench.runtimes.base import remove_tree
from virtbench.spec.base import (
    CommonExperiment,
)
from virtbench.store import Sample

UNIT = ("runtime", "repetition", "workload")

# The figures it records (metrics/model.py).
# fmt: off
METRICS: tuple[Metric, ...] = (
    Metric("snapshot.checkpoint", "ms", "lower", "the checkpoint call (runsc checkpoint, QEMU "
           "migration to a file, CRIU) -> it returned, the state on disk" + MONO,
           resolution=NS_MS, headline=False),
    Metric("snapshot.size", "MiB", "lower", "the checkpoint image on disk, as du counts it",
           resolution=KIB_MIB / 2, headline=False),  # du counts 512-byte blocks
    Metric("snapshot.restore", "ms", "lower", "the restore call -> it returned" + MONO,
           resolution=NS_MS, headline=False),
    Metric("snapshot.restore_to_ready", "ms", "lower", "the restore call -> the first "
           "heartbeat reached the host with the token drawn before the checkpoint and a "
           "later number" + MONO, resolution=NS_MS),
)
# fmt: on


class SnapshotExperiment(CommonExperiment):
    """Checkpoint a running instance to disk, then restore it: one fresh instance per
    repetition. `gone_s`: how long after the checkpoint no heartbeat may come."""

    type: Literal["snapshot"]
    workload: Literal["beat"] = "beat"
    runs: int = Field(default=3, ge=1, le=1000)
    gone_s: float = Field(default=0.2, ge=0.01, le=600)
    timeout_s: float = Field(default=300.0, gt=0, le=3600)

    def instance_workloads(self) -> list[str]:
        return [self.workload]


UNITS = {m.name: m.unit for m in METRICS}  # a failed repetition is a failed sample of each


def run(s: Session, cfg: SnapshotExperiment) -> None:
    each_repetition(s, cfg, "snapshot", lambda rt: rt.snapshot.problem(), UNITS, snapshot_once)


def snapshot_once(s: Session, runtime: str, cfg: SnapshotExperiment, base: dict) -> None:
    rt = s.runtimes[runtime]
    with running(s, runtime, cfg.workload, cfg.timeout_s, control=True) as inst:
        # on disk, beside the instances' data directories (the state directory is a tmpfs)
        image = rt.ctx.paths.data_dir(s.run_id) / "checkpoints" / inst.name
        rt.ctx.state.record("checkpoint", str(image))
        try:
            image.mkdir(parents=True)
            steady_beat(s, inst, cfg.timeout_s)
            with s.timed("snapshot", runtime, base["params"]):
                t0 = time.monotonic_ns()
                rt.snapshot.checkpoint(inst, image)
                t1 = time.monotonic_ns()
            held = silent(s, inst, cfg.gone_s, "its checkpoint returned: not stopped")
            size = disk_usage(image)[0]
            with s.timed("snapshot", runtime, base["params"], wait=False):
                t2 = time.monotonic_ns()
                rt.snapshot.restore(inst, image)
                t3 = time.monotonic_ns()
                beat = next_beat(s, inst, held, cfg.timeout_s, "its restore")
        except InstanceError as exc:
            for m, u in UNITS.items():
                s.record(Sample(metric=m, value=None, unit=u, error=str(exc), **base))
            raise recorded(exc) from None
        finally:
            remove_tree(image)
            for d in (image.parent, image.parent.parent):  # the run's, once empty
                with contextlib.suppress(OSError):
                    d.rmdir()
        s.record(Sample(metric="snapshot.checkpoint", value=(t1 - t0) / 1e6, unit="ms", **base))
        s.record(Sample(metric="snapshot.size", value=size / 2**20, unit="MiB", **base))
        s.record(Sample(metric="snapshot.restore", value=(t3 - t2) / 1e6, unit="ms", **base))
        s.record(Sample(metric="snapshot.restore_to_ready", value=(beat.t_ns - t2) / 1e6,
                        unit="ms", **base))  # fmt: skip


def estimate(cfg: SnapshotExperiment, cost: Costs) -> Estimate:
    """A checkpoint and a restore cost about a few launches."""
    t = cfg.runs * (4 * cost.launch() + cfg.gone_s + 1)
    return Estimate(2 * cfg.runs, t, f"{cfg.runs} x checkpoint and restore")


TYPE = ExperimentType(
    "snapshot", SnapshotExperiment, run, UNIT, order=100, estimate=estimate, metrics=METRICS,
    ranked=(Ranked("Fastest back from a checkpoint on disk", "snapshot.restore_to_ready", "ms"),),
)  # fmt: skip
