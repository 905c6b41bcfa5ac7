"""`snapshot`'s `restore_many`: after a repetition's restore, that many copies of its
checkpoint restored at once (a thread each, released together), each timed from its own
restore call to its first heartbeat with the checkpointed instance's token:

  snapshot.many_to_ready   each copy: its restore call -> its first heartbeat
  snapshot.many_wall       the first copy's restore call -> the last copy beating
  snapshot.many_failed     copies that did not beat

each at the repetition's dirty level. Every copy is stopped whatever happens.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from virtbench import workloads
from virtbench.errors import InstanceError
from virtbench.experiments.held import cannot, recorded
from virtbench.experiments.pause import next_beat
from virtbench.experiments.session import Session
from virtbench.figure import MONO, NS_MS, Metric
from virtbench.measure.probe import Beat
from virtbench.runtimes.base import Instance

MANY_TO_READY = Metric(
    "snapshot.many_to_ready",
    "ms",
    "lower",
    "restore_many: one copy's restore call (all N issued together) -> its first heartbeat, "
    "with the checkpointed instance's token" + MONO,
    resolution=NS_MS,
    label="each copy back from a snapshot",
)
MANY_WALL = Metric(
    "snapshot.many_wall",
    "ms",
    "lower",
    "restore_many: the first copy's restore call -> the last copy beating" + MONO,
    resolution=NS_MS,
    headline=False,
    label="all copies back",
)
MANY_FAILED = Metric(
    "snapshot.many_failed",
    "instances",
    "lower",
    "restore_many: copies that did not beat (each with its reason as a failed many_to_ready)",
    compared=False,
    side=True,
    label="copies not back",
)
MANY_METRICS = (MANY_TO_READY, MANY_WALL, MANY_FAILED)
MANY = MANY_METRICS


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """A checkpoint that copies are restored from: the instance checkpointed (`source`),
    the directory its image is in, and its last heartbeat before the checkpoint (`held`),
    which a copy goes on from."""

    source: Instance
    image: Path
    held: Beat


def restore_copies(
    s: Session,
    checkpoint: Checkpoint,
    n: int,
    timeout: float,
    base: dict,
    level: str | None = None,
) -> None:
    """`n` copies of `checkpoint`'s source, restored at once, each within `timeout` s;
    record each copy's restore to its first heartbeat, the batch's wall time and how
    many did not beat. Every copy is stopped whatever happens."""
    source = checkpoint.source
    rt = s.runtimes[source.runtime]
    many = tuple(m.at(level) for m in MANY)
    if (why := rt.snapshot.copies_problem()) is not None:
        cannot(s, why, base, many)
        return
    copies: list[Instance] = []
    argv = workloads.get(base["workload"]).argv
    assert argv is not None, "snapshot's workload runs a command of its own"
    args = source.spec.argv[len(argv(source.name)) :]  # what the source was started with
    try:
        for _ in range(n):
            spec = s.instance_spec(
                source.runtime, lambda name: (*argv(name), *args), memory_mib=source.spec.memory_mib
            )
            copies.append(rt.prepare(dataclasses.replace(spec, control=True)))
        with s.timed("snapshot", source.runtime, base["params"]):
            got = restore_together(s, copies, checkpoint, timeout)
    except InstanceError as exc:
        for m in many:
            s.record(m.sample(None, error=str(exc), **base))
        raise recorded(exc) from None
    finally:
        rt.stop_each(copies)
        for c in copies:
            s.probe.forget(c.name)
    for (t0, t_beat, why), copy in zip(got, copies, strict=True):
        value = None if t_beat is None else (t_beat - t0) / 1e6
        params = dict(base["params"], copy=copy.name)
        s.record(MANY_TO_READY.at(level).sample(value, error=why, **{**base, "params": params}))
    beats = [t for _, t, _ in got if t is not None]
    failed = len(got) - len(beats)
    wall = (max(beats) - min(t for t, _, _ in got)) / 1e6 if not failed else None
    error = f"{failed} of {len(got)} copies did not beat" if failed else ""
    s.record(MANY_WALL.at(level).sample(wall, error=error, **base))
    s.record(MANY_FAILED.at(level).sample(failed, **base))


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
