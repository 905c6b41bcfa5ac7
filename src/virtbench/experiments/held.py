"""What `exec`, `pause` and `snapshot` share: an instance started and ready before the
timed operations on it, always stopped afterwards, and a runtime that cannot do the
operation said once, with its reason, as failed samples."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from virtbench import workloads
from virtbench.errors import InstanceError
from virtbench.experiments.failures import Failures
from virtbench.experiments.session import Session
from virtbench.figure import Metric
from virtbench.runtimes.base import Instance, Runtime

Figures = tuple[Metric, ...]  # an operation's figures, each a failed sample when it fails


@contextlib.contextmanager
def running(
    s: Session,
    runtime: str,
    workload: str,
    timeout: float,
    *,
    control: bool = False,
    agent: bool = False,
    args: tuple[str, ...] = (),
    memory_mib: int | None = None,
) -> Iterator[Instance]:
    """A fresh instance of `workload` (`args` after its own), started and ready
    (untimed), stopped on the way out whatever happens. `control`: it will be paused or
    checkpointed; `agent`: commands will be run in it; `memory_mib`: the spec's, else."""
    rt = s.runtimes[runtime]
    argv = workloads.get(workload).argv
    assert argv is not None, f"{workload} runs no argv of its own"
    spec = s.instance_spec(runtime, lambda name: (*argv(name), *args), memory_mib=memory_mib)
    if control or agent:
        spec = dataclasses.replace(spec, control=control, agent=agent)
    inst = rt.start(spec, detach=True)
    try:
        rt.wait_ready(inst, timeout)
        rt.pause.ready(inst)  # QEMU: the QMP connection pause and checkpoint go through
        yield inst
    finally:
        rt.stop(inst)
        s.probe.forget(inst.name)


@contextlib.contextmanager
def failed_as(s: Session, base: dict[str, Any], figures: Figures) -> Iterator[None]:
    """An InstanceError out of the block (the instance did not start, say) is recorded as
    a failed sample of each metric, with its reason, unless the block recorded its own
    (it set `recorded` on the error)."""
    try:
        yield
    except InstanceError as exc:
        if not getattr(exc, "recorded", False):
            for m in figures:
                s.record(m.sample(None, error=str(exc), **base))
        raise


def recorded(exc: InstanceError) -> InstanceError:
    """`exc`, marked as recorded already (see failed_as)."""
    exc.recorded = True  # type: ignore[attr-defined]  # a mark on this exception alone, read by getattr
    return exc


def base_of(s: Session, experiment: str, runtime: str, workload: str, rep: int) -> dict:
    """The fields every sample of one runtime's repetition shares."""
    return dict(
        experiment=experiment,
        runtime=runtime,
        workload=workload,
        repetition=rep,
        params=s.params(runtime),
    )


@dataclasses.dataclass(frozen=True)
class Operation:
    """What `exec`, `pause` or `snapshot` does on a held instance: its `experiment`'s
    name, why a runtime cannot do it (`why_not`: None when it can), its figures
    (`figures`: each a failed sample when it fails), and `measure(s, runtime, cfg, base)`,
    which measures one repetition."""

    experiment: str
    why_not: Callable[[Runtime], str | None]
    figures: Figures
    measure: Callable[[Session, str, Any, dict], None]


def each_repetition(s: Session, cfg: Any, op: Operation) -> None:
    """The procedure of `exec`, `pause` and `snapshot`: every repetition, every runtime in
    the schedule's order, one unit of measurement (`run --resume`) each. A runtime that
    cannot (`op.why_not` says why) is recorded so once; the others are measured by
    `op.measure(s, runtime, cfg, base)`, whose InstanceError is a failed sample of each of
    `op.figures` (unless it recorded its own) and counts toward skipping the runtime."""
    experiment, units = op.experiment, op.figures
    failures = Failures(s, experiment)
    for rep, warmup, order in s.schedule(0, cfg.runs, experiment):
        for runtime in order:
            unit = {"runtime": runtime, "repetition": rep, "workload": cfg.workload}
            if not s.pending(experiment, warmup, **unit):
                continue
            base = base_of(s, experiment, runtime, cfg.workload, rep)
            why = op.why_not(s.runtimes[runtime])
            if why is not None:
                cannot(s, why, base, units)
            elif not failures.skip(runtime):
                with failures.attempt(runtime), failed_as(s, base, units):
                    op.measure(s, runtime, cfg, base)
            s.finished(experiment, warmup, **unit)
        s.say(f"{experiment}: repetition {rep + 1}/{cfg.runs} done")


def cannot(s: Session, why: str, base: dict[str, Any], figures: Figures) -> None:
    """Record that `base`'s runtime cannot do what its experiment measures: one failed
    sample per figure, with the reason (once per run: the first repetition's)."""
    if base["repetition"] != 0:
        return
    error = f"{base['runtime']} cannot: {why}"
    for m in figures:
        s.record(m.sample(None, error=error, **base))
    s.event("info", f"{base['experiment']}: {error}")
