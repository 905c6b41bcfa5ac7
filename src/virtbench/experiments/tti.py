"""`tti`: time to interactive, as a sandbox service's user waits for it: from the create
call to the first command that succeeds inside the new instance.

Each instance runs `sleep`; once its ready datagram reaches the host, `/bin/vb-hello`
is run in it through the runtime's own way in (as `exec`: runc exec, docker exec, a VM
guest's agent...), and it is interactive when that command's one line is read back and
its exit 0 seen. Per runtime and repetition, in three modes, each a batch:

  seq        `sequential` instances, one after another (each stopped before the next)
  stagger    `staggered` instances, the k-th launched k x `gap_ms` after the first
  N          each of `levels`: N instances launched at once (as `burst` launches them)

Per instance (the metric's `@` says the batch: `@seq`, `@stagger`, `@10`), all from the
create call, on the host's monotonic clock:

  tti.interactive     -> the first command's exit seen with its output
  tti.launched        -> the create (launch) call returned
  tti.ready           -> the instance's ready datagram
  tti.first_command   the ready datagram -> the command's exit seen

A failed instance (it never got ready, its command failed or wrote the wrong output) is
a failed tti.interactive with its reason. Per staggered or simultaneous batch:

  tti.wall            the first create call -> the last instance interactive
  tti.amortized       tti.wall / the instances that became interactive
  tti.failed          instances of the batch that did not

The report pools each batch kind's instances over the repetitions: p50, p95, p99 with
95% CIs from a bootstrap that resamples whole batches, and the success rate with its
interval (analysis/tails.py). One unit of measurement (`run --resume`) is a runtime's
repetition, every batch of it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field, field_validator

from virtbench import workloads
from virtbench.errors import InstanceError
from virtbench.experiments.command import HELLO, HELLO_BYTES, wrong
from virtbench.experiments.estimate import QUIET_WAIT_S, Costs, Estimate
from virtbench.experiments.failures import Failures
from virtbench.experiments.held import base_of, cannot
from virtbench.experiments.kind import ExperimentType
from virtbench.experiments.session import Session
from virtbench.experiments.together import Launched, launch_together, levels
from virtbench.figure import MONO, NS_MS, Metric
from virtbench.runtimes.base import Instance
from virtbench.runtimes.controls import ExecResult
from virtbench.tables.base import CommonExperiment

UNIT = ("runtime", "repetition", "workload")
FROM = "the create call issued -> "

# The figures it records (virtbench.figure), each at its batch (`@seq`, `@stagger`, `@<n>`).
INTERACTIVE = Metric(
    "tti.interactive",
    "ms",
    "lower",
    FROM + "the first command run in the instance (vb-hello, through the runtime's exec) "
    "exited 0 with its line read back" + MONO,
    resolution=NS_MS,
    label="time to interactive",
)
LAUNCHED = Metric(
    "tti.launched",
    "ms",
    "lower",
    FROM + "it returned" + MONO,
    resolution=NS_MS,
    headline=False,
    label="create call",
)
READY = Metric(
    "tti.ready",
    "ms",
    "lower",
    FROM + "the instance's ready datagram reached the host" + MONO,
    resolution=NS_MS,
    headline=False,
    label="create to ready",
)
FIRST_COMMAND = Metric(
    "tti.first_command",
    "ms",
    "lower",
    "the ready datagram -> the first command's exit seen with its output" + MONO,
    resolution=NS_MS,
    headline=False,
    label="first command after ready",
)
WALL = Metric(
    "tti.wall",
    "ms",
    "lower",
    "a staggered or simultaneous batch: its first create call -> its last instance "
    "interactive" + MONO,
    resolution=NS_MS,
    headline=False,
    label="time for the whole batch",
)
AMORTIZED = Metric(
    "tti.amortized",
    "ms",
    "lower",
    "tti.wall / the batch's instances that became interactive",
    resolution=NS_MS,
    headline=False,
    label="time per interactive instance",
)
FAILED = Metric(
    "tti.failed",
    "instances",
    "lower",
    "instances of the batch that did not become interactive (each a failed "
    "tti.interactive with its reason)",
    compared=False,
    side=True,
    label="instances not interactive",
)
METRICS = (INTERACTIVE, LAUNCHED, READY, FIRST_COMMAND, WALL, AMORTIZED, FAILED)
PER_INSTANCE = (INTERACTIVE, LAUNCHED, READY, FIRST_COMMAND)


class TtiExperiment(CommonExperiment):
    """Create -> first successful command, per instance: `sequential` one after another,
    `staggered` at `gap_ms` apart, and `levels` at once; every batch `runs` times."""

    RUNS_COMMANDS = True
    type: Literal["tti"]
    workload: Literal["sleep"] = "sleep"
    sequential: int = Field(default=10, ge=0, le=10_000)
    staggered: int = Field(default=10, ge=0, le=2000)
    gap_ms: float = Field(default=100.0, gt=0, le=60_000)
    levels: list[int] = Field(default=[1, 10, 50, 100])
    runs: int = Field(default=10, ge=1, le=1000)
    timeout_s: float = Field(default=120.0, gt=0, le=3600)
    settle_s: float = Field(default=1.0, ge=0, le=600)  # after a batch's instances are stopped
    # one instance started and asked its command before a runtime's first batch, stored as
    # a warm-up (left out of every figure): a first start pays for caches later ones find
    # warm (a Kubernetes startup benchmark starts a pod first)
    warm_up: bool = False
    # a startup SLO: the report holds each batch's p99 against it (Kubernetes' pod
    # startup SLO is 5000: p99 of pods, image pull excluded, running within 5 s)
    slo_p99_ms: float | None = Field(default=None, gt=0, le=3_600_000)

    _levels = field_validator("levels")(lambda cls, v: levels(v))

    def instance_workloads(self) -> list[str]:
        return [self.workload]

    def batches(self) -> list[tuple[str, int]]:
        """(its `@` name, its instances) of each batch of a repetition, in order."""
        out = [("seq", self.sequential)] if self.sequential else []
        out += [("stagger", self.staggered)] if self.staggered else []
        return out + [(str(n), n) for n in self.levels]


def run(s: Session, cfg: TtiExperiment) -> None:
    failures = Failures(s, "tti")
    if not cfg.batches():
        return
    units = tuple(INTERACTIVE.at(at) for at, _ in cfg.batches())
    warm = set() if cfg.warm_up else set(s.runtimes)  # the runtimes warmed up
    for rep, warmup, order in s.schedule(0, cfg.runs, "tti"):
        for runtime in order:
            unit = {"runtime": runtime, "repetition": rep, "workload": cfg.workload}
            if not s.pending("tti", warmup, **unit):
                continue
            base = base_of(s, "tti", runtime, cfg.workload, rep)
            why = s.runtimes[runtime].exec.problem()
            if why is not None:
                cannot(s, why, base, units)
            elif runtime not in warm:  # one instance first, its figures a warm-up's
                warm.add(runtime)
                with failures.attempt(runtime):
                    batch(s, runtime, Batch("seq", 1), cfg, {**base, "warmup": True})
            for at, n in cfg.batches() if why is None else ():
                if failures.skip(runtime):
                    break
                with failures.attempt(runtime):
                    batch(s, runtime, Batch(at, n), cfg, base)
                time.sleep(cfg.settle_s)
            s.finished("tti", warmup, **unit)
        s.say(f"tti: repetition {rep + 1}/{cfg.runs} done")


@dataclasses.dataclass(frozen=True)
class Batch:
    """One batch of a repetition: its `@` name (`seq`, `stagger`, or N launched at once)
    and its instances."""

    at: str
    n: int


def batch(s: Session, runtime: str, b: Batch, cfg: TtiExperiment, base: dict) -> None:
    """One batch: `seq` one instance at a time, else all its instances launched together
    (at `gap_ms` apart for `stagger`); records its samples. InstanceError when not one
    instance became interactive (the runtime's failures count it)."""
    at, n = b.at, b.n
    base = {**base, "params": {**base["params"], "batch": at, "instances": n}}
    if at == "stagger":
        base["params"]["gap_ms"] = cfg.gap_ms
    launched: list[Launched] = []
    errors: list[str] = []
    asked = Asked("tti", cfg.workload, cfg.timeout_s, lambda i: first_command(s, i, cfg.timeout_s))
    for group in [1] * n if at == "seq" else [n]:
        gap_s = cfg.gap_ms / 1e3 * (at == "stagger")
        more, why = together(s, runtime, group, asked, base, gap_s=gap_s)
        launched += more
        errors += why
    record(s, base, at, launched, errors)


@dataclasses.dataclass(frozen=True)
class Asked:
    """What instances launched together are asked once ready (`tti`, `task`): the
    experiment's name, the workload they run, how long each may take from its launch to
    ready, and `then(inst)`, what is asked (its InstanceError: the instance failed);
    `data`: they need a data directory."""

    experiment: str
    workload: str
    timeout_s: float
    then: Callable[[Instance], Any]
    data: bool = False


def together(
    s: Session, runtime: str, n: int, asked: Asked, base: dict, *, gap_s: float = 0.0
) -> tuple[list[Launched], list[str]]:
    """`n` instances prepared (untimed), launched together (`gap_s` apart) after a quiet
    wait, each asked `asked.then` once ready; every one stopped. (What became of each, why
    those that could not be prepared could not.)"""
    rt = s.runtimes[runtime]
    argv = workloads.get(asked.workload).argv
    assert argv is not None, f"{asked.workload} runs no argv of its own"
    prepared: list[Instance] = []
    errors: list[str] = []
    try:
        for _ in range(n):
            spec = s.instance_spec(runtime, argv, data=asked.data)
            try:
                prepared.append(rt.prepare(dataclasses.replace(spec, agent=True)))
            except InstanceError as exc:  # this one fails; the batch goes on with the rest
                errors.append(str(exc))
        with s.timed(asked.experiment, runtime, base["params"]):
            got = launch_together(rt, prepared, asked.timeout_s, asked.then, gap_s)
    finally:
        stop_errors = rt.stop_each(prepared)
        for inst in prepared:
            s.probe.forget(inst.name)
    if stop_errors:
        s.event(
            "warning",
            f"{asked.experiment}: {runtime}: {len(stop_errors)} instances could not be "
            f"stopped: {stop_errors[0]}",
        )
    return got, errors


def first_command(s: Session, inst: Instance, timeout: float) -> ExecResult:
    """The first command run in a ready instance; InstanceError unless it succeeded."""
    res = s.runtimes[inst.runtime].exec.run(inst, HELLO, timeout)
    if why := wrong(res, HELLO_BYTES):
        raise InstanceError(f"{inst.name}: its first command: {why}")
    return res


def record(s: Session, base: dict, at: str, launched: list[Launched], errors: list[str]) -> None:
    """The batch's samples: each instance's phases, then (not `seq`) the batch's own."""
    for why in errors:  # instances that could not even be prepared
        s.record(INTERACTIVE.at(at).sample(None, error=why, **base))
    first = min((x.spawn_ns for x in launched), default=0)
    done = []
    for x in launched:
        end = x.then.t_end_ns if x.then is not None and not x.why else None
        params = {**base["params"], "launch_offset_ms": round((x.spawn_ns - first) / 1e6, 3)}
        phases = {INTERACTIVE: end, LAUNCHED: x.returned_ns, READY: x.ready_ns}
        for metric, t in phases.items():
            if t is None and metric != INTERACTIVE:
                continue  # a phase it never reached: its failure is tti.interactive's
            value = None if t is None else (t - x.spawn_ns) / 1e6
            why = x.why if t is None else ""
            s.record(metric.at(at).sample(value, error=why, **{**base, "params": params}))
        if end is not None and x.ready_ns is not None:
            value = (end - x.ready_ns) / 1e6
            s.record(FIRST_COMMAND.at(at).sample(value, **{**base, "params": params}))
            done.append(end)
    n = len(launched) + len(errors)
    if at != "seq":
        batch_figures(s, base, Batch(at, n), first, done)
    if not done:
        why = next((x.why for x in launched if x.why), errors[0] if errors else "none started")
        raise InstanceError(
            f"{base['runtime']}: no instance of a batch of {n} ({at}) became interactive: {why}"
        )


BATCH_FIGURES = (FAILED, WALL, AMORTIZED)


def batch_figures(
    s: Session,
    base: dict,
    b: Batch,
    first: int,
    done: list[int],
    names: tuple[Metric, Metric, Metric] = BATCH_FIGURES,
) -> None:
    """A staggered or simultaneous batch's failures (of its `b.n` instances), wall time
    (from `first`, the first create call, to the last of `done`, when its instances were
    done: interactive, or their task's end) and amortized time, as the figures `names`
    (tti's, or another experiment's that batches as it does)."""
    at, n = b.at, b.n
    failed, wall_name, amortized = names
    s.record(failed.at(at).sample(n - len(done), **base))
    if not done:
        for m in (wall_name, amortized):
            s.record(m.at(at).sample(None, error="no instance became interactive", **base))
        return
    wall = (max(done) - first) / 1e6
    s.record(wall_name.at(at).sample(wall, **base))
    s.record(amortized.at(at).sample(wall / len(done), **base))


def estimate(cfg: TtiExperiment, cost: Costs) -> Estimate:
    """Every instance a launch and a command (a tenth of a launch), the warm-up one too;
    a quiet wait and `settle_s` per batch (each sequential instance a batch of its own)."""
    n = cfg.runs * sum(k for _, k in cfg.batches()) + cfg.warm_up  # and the warm-up one
    waits = cfg.runs * (cfg.sequential + len(cfg.batches()) - (cfg.sequential > 0))
    t = n * 1.1 * cost.launch(serving=True) + waits * (cfg.settle_s + QUIET_WAIT_S)
    t += cfg.runs * cfg.staggered * cfg.gap_ms / 1e3
    what = [f"{cfg.sequential} one by one"] if cfg.sequential else []
    what += [f"{cfg.staggered} at {cfg.gap_ms:g} ms apart"] if cfg.staggered else []
    what += [f"{', '.join(map(str, cfg.levels))} at once"] if cfg.levels else []
    first = "a warm-up instance, then " if cfg.warm_up else ""
    return Estimate(n, t, f"{first}{cfg.runs} x ({'; '.join(what)}), then a command in each")


TYPE = ExperimentType(
    "tti",
    TtiExperiment,
    run,
    UNIT,
    order=75,
    estimate=estimate,
    metrics=METRICS,
)
