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
from operator import methodcaller

from virtbench.artifacts.rootfs import disk_usage
from virtbench.errors import InstanceError
from virtbench.experiments.held import each_repetition, recorded, running
from virtbench.experiments.pause import next_beat, silent, steady_beat
from virtbench.experiments.session import Session
from virtbench.runtimes.base import remove_tree
from virtbench.spec.sandbox import SnapshotExperiment
from virtbench.store import Sample

UNIT = ("runtime", "repetition", "workload")

UNITS = {"snapshot.checkpoint": "ms", "snapshot.size": "MiB", "snapshot.restore": "ms",
         "snapshot.restore_to_ready": "ms"}  # fmt: skip


def run(s: Session, cfg: SnapshotExperiment) -> None:
    each_repetition(s, cfg, "snapshot", methodcaller("cannot_snapshot"), UNITS, snapshot_once)


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
                rt.checkpoint(inst, image)
                t1 = time.monotonic_ns()
            held = silent(s, inst, cfg.gone_s, "its checkpoint returned: not stopped")
            size = disk_usage(image)[0]
            with s.timed("snapshot", runtime, base["params"], wait=False):
                t2 = time.monotonic_ns()
                rt.restore(inst, image)
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
