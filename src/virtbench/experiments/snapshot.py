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
import dataclasses
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from virtbench import workloads
from virtbench.artifacts.rootfs import disk_usage
from virtbench.errors import InstanceError
from virtbench.experiments.estimate import Costs, Estimate
from virtbench.experiments.held import Operation, cannot, each_repetition, recorded, running
from virtbench.experiments.kind import ExperimentType
from virtbench.experiments.pause import next_beat, silent, steady_beat
from virtbench.experiments.session import Session
from virtbench.experiments.snapshot_cold import COLD_METRICS, name, out_of_cache
from virtbench.experiments.snapshot_touch import TOUCH_METRICS, record_touch, touch_name
from virtbench.figure import KIB_MIB, MONO, NS_MS, Metric
from virtbench.measure.probe import Beat
from virtbench.runtimes.base import Instance, remove_tree
from virtbench.runtimes.model import Family
from virtbench.store import Sample
from virtbench.tables.base import (
    CommonExperiment,
)

UNIT = ("runtime", "repetition", "workload")

# The figures it records (metrics/model.py).
# fmt: off
METRICS: tuple[Metric, ...] = (
    Metric("snapshot.checkpoint", "ms", "lower", "the checkpoint call (runsc checkpoint, QEMU "
           "migration to a file, CRIU) -> it returned, the state on disk" + MONO,
           resolution=NS_MS, headline=False, label="time to checkpoint"),
    Metric("snapshot.size", "MiB", "lower", "the checkpoint image on disk, as du counts it",
           resolution=KIB_MIB / 2, headline=False,  # du counts 512-byte blocks
           label="checkpoint size on disk"),
    Metric("snapshot.restore", "ms", "lower", "the restore call -> it returned" + MONO,
           resolution=NS_MS, headline=False, label="restore call"),
    Metric("snapshot.restore_to_ready", "ms", "lower", "the restore call -> the first "
           "heartbeat reached the host with the token drawn before the checkpoint and a "
           "later number" + MONO, resolution=NS_MS, label="back from a snapshot"),
    Metric("snapshot.many_to_ready", "ms", "lower", "restore_many: one copy's restore call "
           "(all N issued together) -> its first heartbeat, with the checkpointed instance's "
           "token" + MONO, resolution=NS_MS, label="each copy back from a snapshot"),
    Metric("snapshot.many_wall", "ms", "lower", "restore_many: the first copy's restore "
           "call -> the last copy beating" + MONO, resolution=NS_MS, headline=False,
           label="all copies back"),
    Metric("snapshot.many_failed", "instances", "lower", "restore_many: copies that did "
           "not beat (each with its reason as a failed many_to_ready)", compared=False,
           side=True, label="copies not back"),
    *COLD_METRICS,
    *TOUCH_METRICS,
)
# fmt: on


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


def at(dirty: int | None) -> str:
    """A figure's suffix for a dirty level ("" without one)."""
    return "" if dirty is None else f"@{dirty}MiB"


ONE = ("snapshot.checkpoint", "snapshot.size", "snapshot.restore", "snapshot.restore_to_ready")
UNITS = {m.name: m.unit for m in METRICS if m.name in ONE}  # a failed repetition: each
MANY_NAMES = ("snapshot.many_to_ready", "snapshot.many_wall", "snapshot.many_failed")
MANY = {m.name: m.unit for m in METRICS if m.name in MANY_NAMES}


def units(cfg: SnapshotExperiment, dirty: int | None, cold: bool = False) -> dict[str, str]:
    """The figures (and their units) of one dirty level, its cold restore's where `cold`."""
    figures = {name(m, cold): u for m, u in UNITS.items()}
    figures |= {touch_name(cold): "ms"} if dirty is not None else {}
    figures |= MANY if cfg.restore_many else {}
    return {m + at(dirty): u for m, u in figures.items()}


def run(s: Session, cfg: SnapshotExperiment) -> None:
    every = {
        m: u
        for d in cfg.levels()
        for mode in cfg.cache
        for m, u in units(cfg, d, mode == "cold").items()
    }
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
                for m, u in units(cfg, dirty, mode == "cold").items():
                    s.record(Sample(metric=m, value=None, unit=u, error=str(exc), **mine))
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
            held = checkpoint_and_restore(s, inst, image, cfg, base, sfx=at(dirty))
            if cfg.restore_many:
                many = {**base, "params": dict(base["params"], copies=cfg.restore_many)}
                restore_copies(s, Checkpoint(inst, image, held), cfg, many, at(dirty))
        finally:
            remove_tree(image)
            for d in (image.parent, image.parent.parent):  # the run's, once empty
                with contextlib.suppress(OSError):
                    d.rmdir()


def checkpoint_and_restore(
    s: Session, inst: Instance, image: Path, cfg: SnapshotExperiment, base: dict, *, sfx: str = ""
) -> Beat:
    """Checkpoint `inst` to `image`, restore it, and record the four figures (their
    names + `sfx`, their cold twins' for a cold one); the last heartbeat before the
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
        failed = {name(m, cold): u for m, u in UNITS.items()}
        failed |= {touch_name(cold): "ms"} if sfx else {}
        for m, u in failed.items():
            s.record(Sample(metric=m + sfx, value=None, unit=u, error=str(exc), **base))
        raise recorded(exc) from None
    figures = [
        ("snapshot.checkpoint", (t1 - t0) / 1e6, "ms"),
        ("snapshot.size", size / 2**20, "MiB"),
        (name("snapshot.restore", cold), (t3 - t2) / 1e6, "ms"),
        (name("snapshot.restore_to_ready", cold), (beat.t_ns - t2) / 1e6, "ms"),
    ]
    for m, value, unit in figures:
        s.record(Sample(metric=m + sfx, value=value, unit=unit, **base))
    if sfx:  # at a dirty level: then what it dirtied, touched again
        record_touch(s, inst, beat, touch_name(cold) + sfx, base, cfg.timeout_s)
    return held


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """A checkpoint that copies are restored from: the instance checkpointed (`source`),
    the directory its image is in, and its last heartbeat before the checkpoint (`held`),
    which a copy goes on from."""

    source: Instance
    image: Path
    held: Beat


def restore_copies(
    s: Session, checkpoint: Checkpoint, cfg: SnapshotExperiment, base: dict, sfx: str = ""
) -> None:
    """`cfg.restore_many` copies of `checkpoint`'s source, restored at once; record each
    copy's restore to its first heartbeat, the batch's wall time and how many did not
    beat. Every copy is stopped whatever happens."""
    source = checkpoint.source
    rt = s.runtimes[source.runtime]
    many = {m + sfx: u for m, u in MANY.items()}
    if (why := rt.snapshot.copies_problem()) is not None:
        cannot(s, why, base, many)
        return
    copies: list[Instance] = []
    argv = workloads.get(cfg.workload).argv
    args = source.spec.argv[len(argv(source.name)) :]  # what the source was started with
    try:
        for _ in range(cfg.restore_many):
            spec = s.instance_spec(
                source.runtime, lambda name: (*argv(name), *args), memory_mib=source.spec.memory_mib
            )
            copies.append(rt.prepare(dataclasses.replace(spec, control=True)))
        with s.timed("snapshot", source.runtime, base["params"]):
            got = restore_together(s, copies, checkpoint, cfg.timeout_s)
    except InstanceError as exc:
        for m, u in many.items():
            s.record(Sample(metric=m, value=None, unit=u, error=str(exc), **base))
        raise recorded(exc) from None
    finally:
        rt.stop_each(copies)
        for c in copies:
            s.probe.forget(c.name)
    for (t0, t_beat, why), copy in zip(got, copies, strict=True):
        value = None if t_beat is None else (t_beat - t0) / 1e6
        s.record(
            Sample(
                metric="snapshot.many_to_ready" + sfx,
                value=value,
                unit="ms",
                error=why,
                **{**base, "params": dict(base["params"], copy=copy.name)},
            )
        )
    beats = [t for _, t, _ in got if t is not None]
    failed = len(got) - len(beats)
    wall = (max(beats) - min(t for t, _, _ in got)) / 1e6 if not failed else None
    s.record(
        Sample(
            metric="snapshot.many_wall" + sfx,
            value=wall,
            unit="ms",
            error=f"{failed} of {len(got)} copies did not beat" if failed else "",
            **base,
        )
    )
    s.record(Sample(metric="snapshot.many_failed" + sfx, value=failed, unit="instances", **base))


def restore_together(
    s: Session, copies: list[Instance], checkpoint: Checkpoint, timeout: float
) -> list[tuple[int, int | None, str]]:
    """Restore every copy at once (a thread each, released together by a barrier); per
    copy: its restore call's ns, its first heartbeat's ns or None, and why not."""
    source, held, image = checkpoint.source, checkpoint.held, checkpoint.image
    rt = s.runtimes[source.runtime]
    gate = threading.Barrier(len(copies))
    after = Beat(0, held.token, held.seq, 0)  # a copy goes on from the checkpoint

    def one(copy: Instance) -> tuple[int, int | None, str]:
        t0 = time.monotonic_ns()
        try:
            gate.wait(timeout=60)
            t0 = time.monotonic_ns()
            rt.snapshot.restore_copy(copy, image, source)
            what = f"its restore from {source.name}'s checkpoint"
            return t0, next_beat(s, copy, after, timeout, what).t_ns, ""
        except threading.BrokenBarrierError:
            return t0, None, "the copies' threads did not all start in 60 s"
        except InstanceError as exc:
            return t0, None, str(exc)

    with ThreadPoolExecutor(max_workers=len(copies)) as pool:
        return list(pool.map(one, copies))


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
