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

With `dirty_mib = [1, 64, 512]`, each repetition takes one fresh instance per level,
which writes that many MiB of its own memory (bytes that do not compress) before it
signals ready; each figure is then recorded per level (`snapshot.checkpoint@64MiB`, ...)
and the report fits each one's slope against the MiB dirtied (per 100 MiB, with its 95%
CI: report/sandbox.py). A VM's guest gets the same memory at every level (the largest
level + 64 MiB, or more where the spec says), so that only what was written differs.

With `restore_many = N`, N copies are then restored from the same checkpoint at once (N
threads released together), as sandbox services start sandboxes from one snapshot; each
copy must beat with the checkpointed instance's token and a later number:

  snapshot.many_to_ready     per copy: its restore call -> its first heartbeat
  snapshot.many_wall         the first restore call -> the last copy beating
  snapshot.many_failed       copies that did not beat (each also a failed sample)

The image, on disk in the run's data directory, is removed after each repetition (and by
`virtbench clean` after a crash, with that directory). A runtime that cannot checkpoint
here is said once, with why (CRIU's `criu check` output where that is the reason), as
failed samples.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from virtbench.artifacts.rootfs import disk_usage
from virtbench.errors import InstanceError
from virtbench.experiments.estimate import Costs, Estimate
from virtbench.experiments.held import (
    Figures,
    Operation,
    each_repetition,
    recorded,
    running,
)
from virtbench.experiments.kind import ExperimentType
from virtbench.experiments.pause import next_beat, silent, steady_beat
from virtbench.experiments.session import Session
from virtbench.experiments.snapshot_cold import (
    COLD_METRICS,
    COLD_RESTORE,
    COLD_RESTORE_TO_READY,
    out_of_cache,
)
from virtbench.experiments.snapshot_many import MANY, MANY_METRICS, Checkpoint, restore_copies
from virtbench.experiments.snapshot_touch import TOUCH_METRICS, record_touch, touch
from virtbench.figure import KIB_MIB, MONO, NS_MS, Metric
from virtbench.measure.probe import Beat
from virtbench.runtimes.base import Instance, remove_tree
from virtbench.runtimes.model import Family
from virtbench.tables.base import (
    CommonExperiment,
)

UNIT = ("runtime", "repetition", "workload")

# The figures it records (virtbench.figure), each at its dirty level (`@<n>MiB`).
CHECKPOINT = Metric(
    "snapshot.checkpoint",
    "ms",
    "lower",
    "the checkpoint call (runsc checkpoint, QEMU migration to a file, CRIU) -> it returned, "
    "the state on disk" + MONO,
    resolution=NS_MS,
    headline=False,
    label="time to checkpoint",
)
SIZE = Metric(
    "snapshot.size",
    "MiB",
    "lower",
    "the checkpoint image on disk, as du counts it",
    resolution=KIB_MIB / 2,  # du counts 512-byte blocks
    headline=False,
    label="checkpoint size on disk",
)
RESTORE = Metric(
    "snapshot.restore",
    "ms",
    "lower",
    "the restore call -> it returned" + MONO,
    resolution=NS_MS,
    headline=False,
    label="restore call",
)
RESTORE_TO_READY = Metric(
    "snapshot.restore_to_ready",
    "ms",
    "lower",
    "the restore call -> the first heartbeat reached the host with the token drawn before "
    "the checkpoint and a later number" + MONO,
    resolution=NS_MS,
    label="back from a snapshot",
)
METRICS = (
    CHECKPOINT,
    SIZE,
    RESTORE,
    RESTORE_TO_READY,
    *MANY_METRICS,
    *COLD_METRICS,
    *TOUCH_METRICS,
)


class SnapshotExperiment(CommonExperiment):
    """Checkpoint a running instance to disk, then restore it: one fresh instance per
    repetition. `gone_s`: how long after the checkpoint no heartbeat may come;
    `restore_many`: then restore that many copies of the checkpoint at once (0: none)."""

    type: Literal["snapshot"]
    workload: Literal["beat"] = "beat"
    runs: int = Field(default=3, ge=1, le=1000)
    gone_s: float = Field(default=0.2, ge=0.01, le=600)
    timeout_s: float = Field(default=300.0, gt=0, le=3600)
    restore_many: int = Field(default=0, ge=0, le=1000)
    dirty_mib: list[int] = Field(default=[])  # each level: an instance that wrote that much
    # each level: an instance restored with its image as left (warm), and one with its
    # image out of the page cache (cold: snapshot_cold.py)
    cache: list[Literal["warm", "cold"]] = Field(default=["warm"], min_length=1)

    @field_validator("dirty_mib")
    @classmethod
    def _dirty(cls, v: list[int]) -> list[int]:
        for i, mib in enumerate(v):
            if not 0 <= mib <= MAX_DIRTY_MIB:
                raise ValueError(f"[{i}]: {mib} MiB is outside 0..{MAX_DIRTY_MIB}")
        if len(set(v)) != len(v):
            raise ValueError("a level is given twice")
        return sorted(v)

    def instance_workloads(self) -> list[str]:
        return [self.workload]

    def levels(self) -> list[int | None]:
        """The MiB each repetition's instances dirty (None: the workload as it is)."""
        return list(self.dirty_mib) or [None]


MAX_DIRTY_MIB = 900  # the minimal guest maps its first GiB; it dirties from 16 MiB on
VM_SPARE_MIB = 64  # a VM's guest memory beyond its largest level


def at(dirty: int | None) -> str | None:
    """A figure's level for a dirty level (None without one)."""
    return None if dirty is None else f"{dirty}MiB"


ONE = (CHECKPOINT, SIZE, RESTORE, RESTORE_TO_READY)  # a failed repetition: each
COLD = {RESTORE: COLD_RESTORE, RESTORE_TO_READY: COLD_RESTORE_TO_READY}


def twin(metric: Metric, cold: bool) -> Metric:
    """A restore figure: its cold twin for a cold restore."""
    return COLD.get(metric, metric) if cold else metric


def level_figures(cfg: SnapshotExperiment, dirty: int | None, cold: bool = False) -> Figures:
    """The figures of one dirty level, its cold restore's where `cold`."""
    figures = [twin(m, cold) for m in ONE]
    figures += [touch(cold)] if dirty is not None else []
    figures += MANY if cfg.restore_many else ()
    return tuple(m.at(at(dirty)) for m in figures)


def run(s: Session, cfg: SnapshotExperiment) -> None:
    every = tuple(
        m for d in cfg.levels() for mode in cfg.cache for m in level_figures(cfg, d, mode == "cold")
    )
    each_repetition(s, cfg, Operation("snapshot", lambda rt: rt.snapshot.problem(), every, levels))


def levels(s: Session, runtime: str, cfg: SnapshotExperiment, base: dict) -> None:
    """Every dirty level of one repetition, each on an instance of its own: a level that
    fails is its figures' failed samples, and the first failure is raised once every
    level was tried."""
    memory = guest_memory(s, runtime, cfg)
    first: InstanceError | None = None
    for dirty, mode in ((d, m) for d in cfg.levels() for m in cfg.cache):
        params = dict(base["params"], cache=mode)
        if dirty is not None:
            params.update(dirty_mib=dirty, **({"memory_mib": memory} if memory else {}))
        mine = {**base, "params": params}
        try:
            snapshot_once(s, runtime, cfg, mine, dirty=dirty, memory=memory)
        except InstanceError as exc:
            if not getattr(exc, "recorded", False):  # e.g. it never started
                for m in level_figures(cfg, dirty, mode == "cold"):
                    s.record(m.sample(None, error=str(exc), **mine))
            first = first or recorded(exc)
    if first is not None:
        raise first


def guest_memory(s: Session, runtime: str, cfg: SnapshotExperiment) -> int | None:
    """A VM's guest memory at every dirty level: the largest level + VM_SPARE_MIB, or
    the spec's if more (None: not a VM, or no levels)."""
    if not cfg.dirty_mib or s.runtimes[runtime].family is not Family.VM:
        return None
    return max(max(cfg.dirty_mib) + VM_SPARE_MIB, s.instance(runtime).memory_mib or 0)


def snapshot_once(
    s: Session,
    runtime: str,
    cfg: SnapshotExperiment,
    base: dict,
    *,
    dirty: int | None = None,
    memory: int | None = None,
) -> None:
    rt = s.runtimes[runtime]
    args = () if dirty is None else (str(dirty),)
    with running(
        s, runtime, cfg.workload, cfg.timeout_s, control=True, args=args, memory_mib=memory
    ) as inst:
        # on disk, beside the instances' data directories (the state directory is a tmpfs)
        image = rt.ctx.paths.data_dir(s.run_id) / "checkpoints" / inst.name
        rt.ctx.state.record("checkpoint", str(image))
        try:
            image.mkdir(parents=True)
            held = checkpoint_and_restore(s, inst, image, cfg, base, level=at(dirty))
            if cfg.restore_many:
                many = {**base, "params": dict(base["params"], copies=cfg.restore_many)}
                ckpt, n = Checkpoint(inst, image, held), cfg.restore_many
                restore_copies(s, ckpt, n, cfg.timeout_s, many, at(dirty))
        finally:
            remove_tree(image)
            for d in (image.parent, image.parent.parent):  # the run's, once empty
                with contextlib.suppress(OSError):
                    d.rmdir()


def checkpoint_and_restore(
    s: Session,
    inst: Instance,
    image: Path,
    cfg: SnapshotExperiment,
    base: dict,
    *,
    level: str | None = None,
) -> Beat:
    """Checkpoint `inst` to `image`, restore it, and record the four figures (at
    `level`, their cold twins for a cold one); the last heartbeat before the
    checkpoint."""
    rt = s.runtimes[inst.runtime]
    cold = base["params"].get("cache") == "cold"
    try:
        steady_beat(s, inst, cfg.timeout_s)
        with s.timed("snapshot", inst.runtime, base["params"]):
            t0 = time.monotonic_ns()
            rt.snapshot.checkpoint(inst, image)
            t1 = time.monotonic_ns()
        held = silent(s, inst, cfg.gone_s, "its checkpoint returned: not stopped")
        size = disk_usage(image)[0]
        if cold:  # said with every sample of the repetition
            base = {**base, "params": {**base["params"], **out_of_cache(image)}}
        with s.timed("snapshot", inst.runtime, base["params"], wait=False):
            t2 = time.monotonic_ns()
            rt.snapshot.restore(inst, image)
            t3 = time.monotonic_ns()
            beat = next_beat(s, inst, held, cfg.timeout_s, "its restore")
    except InstanceError as exc:
        failed = [twin(m, cold) for m in ONE] + ([touch(cold)] if level else [])
        for m in failed:
            s.record(m.at(level).sample(None, error=str(exc), **base))
        raise recorded(exc) from None
    figures = [
        (CHECKPOINT, (t1 - t0) / 1e6),
        (SIZE, size / 2**20),
        (twin(RESTORE, cold), (t3 - t2) / 1e6),
        (twin(RESTORE_TO_READY, cold), (beat.t_ns - t2) / 1e6),
    ]
    for m, value in figures:
        s.record(m.at(level).sample(value, **base))
    if level:  # at a dirty level: then what it dirtied, touched again
        record_touch(s, inst, beat, touch(cold).at(level), base, cfg.timeout_s)
    return held


def estimate(cfg: SnapshotExperiment, cost: Costs) -> Estimate:
    """A checkpoint and a restore cost about a few launches, a copy about one."""
    k = len(cfg.levels())
    t = cfg.runs * k * ((4 + cfg.restore_many) * cost.launch() + cfg.gone_s + 1)
    t += cfg.runs * sum(cfg.dirty_mib) / 200  # written, saved, read back: ~200 MiB/s
    what = f"{cfg.runs} x checkpoint and restore"
    if cfg.dirty_mib:
        what += f" at {', '.join(map(str, cfg.dirty_mib))} MiB dirtied"
    if cfg.restore_many:
        what += f", then {cfg.restore_many} copies restored at once"
    return Estimate((2 + cfg.restore_many) * cfg.runs * k, t, what)


TYPE = ExperimentType(
    "snapshot",
    SnapshotExperiment,
    run,
    UNIT,
    order=100,
    estimate=estimate,
    metrics=METRICS,
)
