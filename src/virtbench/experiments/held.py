"""What `exec`, `pause` and `snapshot` share: an instance started and ready before the
timed operations on it, always stopped afterwards, and a runtime that cannot do the
operation said once, with its reason, as failed samples."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

from virtbench import workloads
from virtbench.errors import InstanceError
from virtbench.experiments.session import Session
from virtbench.runtimes.base import Instance
from virtbench.store import Sample


@contextlib.contextmanager
def running(s: Session, runtime: str, workload: str, timeout: float,
            control: bool = False) -> Iterator[Instance]:  # fmt: skip
    """A fresh instance of `workload`, started and ready (untimed), stopped on the way
    out whatever happens. `control`: it will be paused or checkpointed."""
    rt = s.runtimes[runtime]
    spec = s.instance_spec(runtime, workloads.get(workload).argv)
    if control:
        spec = dataclasses.replace(spec, control=True)
    inst = rt.start(spec, detach=True)
    try:
        rt.wait_ready(inst, timeout)
        rt.ready_controls(inst)
        yield inst
    finally:
        rt.stop(inst)
        if s.probe is not None:
            s.probe.forget(inst.name)


@contextlib.contextmanager
def failed_as(s: Session, base: dict[str, Any], units: dict[str, str]) -> Iterator[None]:
    """An InstanceError out of the block (the instance did not start, say) is recorded as
    a failed sample of each metric, with its reason, unless the block recorded its own
    (it set `recorded` on the error)."""
    try:
        yield
    except InstanceError as exc:
        if not getattr(exc, "recorded", False):
            for m, unit in units.items():
                s.record(Sample(metric=m, value=None, unit=unit, error=str(exc), **base))
        raise


def recorded(exc: InstanceError) -> InstanceError:
    """`exc`, marked as recorded already (see failed_as)."""
    exc.recorded = True  # type: ignore[attr-defined]
    return exc


def base_of(s: Session, experiment: str, runtime: str, workload: str, rep: int) -> dict:
    """The fields every sample of one runtime's repetition shares."""
    return dict(experiment=experiment, direction="lower", runtime=runtime, workload=workload,
                repetition=rep, params=s.params(runtime))  # fmt: skip


def cannot(s: Session, experiment: str, runtime: str, why: str, metrics: list[str],
           base: dict[str, Any], units: dict[str, str]) -> None:  # fmt: skip
    """Record that `runtime` cannot do what `experiment` measures: one failed sample per
    metric, with the reason (once per run: the first repetition's)."""
    if base["repetition"] != 0:
        return
    error = f"{runtime} cannot: {why}"
    for m in metrics:
        s.record(Sample(metric=m, value=None, unit=units[m], error=error, **base))
    s.event("info", f"{experiment}: {error}")
