"""`boot`: how long an instance takes to come up, and to go away.

Timeline of one measurement (host monotonic clock):
  spawn              the launch call is issued
  spawn_to_started   the launcher returned (detached instances: the runtime's "run -d")
  spawn_to_first_output  VMs: the guest's first byte on the serial console
  spawn_to_ready     the `sleep` workload's probe datagram reached the host listener
  spawn_to_exit      the `hello` workload's main process exited (foreground launch)
  teardown           stopping and deleting a `sleep` instance took this long

Each repetition measures every runtime in turn, starting with a different runtime
each time so slow drift on the host does not favour one. Warm-ups are stored,
flagged, and left out of summaries.
"""

from __future__ import annotations

from virtbench import workloads
from virtbench.errors import InstanceError
from virtbench.experiments.failures import Failures
from virtbench.experiments.session import Session, total_runs
from virtbench.runtimes.base import Instance
from virtbench.spec import BootExperiment
from virtbench.store import Sample

# One unit of measurement (`run --resume` skips the finished ones): a sample's fields.
UNIT = ("runtime", "repetition", "workload")


def _ms(ns: int) -> float:
    return ns / 1e6


def _first_output(s: Session, inst: Instance, base: dict) -> None:
    """VMs: spawn -> the first byte of the guest's serial console, when there was one."""
    t = inst.extra.get("t_first_output_ns")
    if t is not None:
        value = _ms(t - inst.t_spawn_ns)
        s.record(Sample(metric="boot.spawn_to_first_output", value=value, unit="ms", **base))


def measure_once(
    s: Session,
    runtime: str,
    workload: str,
    rep: int,
    warmup: bool,
    timeout: float,
    experiment: str = "boot",
    params: dict | None = None,
    **labels: int,
) -> None:
    """One boot of `workload` under `runtime`; records its samples (or a failed one).
    `experiment`, `params` (added to the instance options) and `labels` (e.g.
    `background`) let scalability reuse it."""
    rt = s.runtimes[runtime]
    wl = workloads.get(workload)
    spec = s.instance_spec(runtime, wl.argv)
    base = dict(
        experiment=experiment,
        direction="lower",
        runtime=runtime,
        workload=workload,
        repetition=rep,
        warmup=warmup,
        params={**s.params(runtime), **(params or {})},
        **labels,
    )
    timed = s.timed(experiment, runtime, base["params"])  # quiet host, recorded in params
    if wl.ENDS == "exit":
        metric = "boot.spawn_to_exit"
        try:
            with timed:
                inst = rt.run_to_exit(spec, timeout)
        except InstanceError as exc:
            s.record(Sample(metric=metric, value=None, unit="ms", error=str(exc), **base))
            raise
        try:
            if inst.exit_code != 0:
                err = f"exit status {inst.exit_code}: {inst.log_tail()}"
                s.record(Sample(metric=metric, value=None, unit="ms", error=err, **base))
                raise InstanceError(f"{runtime}: {workload} {err}")
            assert inst.t_exit_ns is not None
            value = _ms(inst.t_exit_ns - inst.t_spawn_ns)
            _first_output(s, inst, base)
            s.record(Sample(metric=metric, value=value, unit="ms", **base))
        finally:
            rt.stop(inst)
        return
    metric = "boot.spawn_to_ready"
    inst = None
    try:
        with timed:
            inst = rt.start(spec, detach=True)
            t_ready = rt.wait_ready(inst, timeout)
        s.record(
            Sample(
                metric="boot.spawn_to_started",
                unit="ms",
                value=_ms(inst.t_started_ns - inst.t_spawn_ns),
                **base,
            )
        )
        _first_output(s, inst, base)
        s.record(Sample(metric=metric, value=_ms(t_ready - inst.t_spawn_ns), unit="ms", **base))
    except InstanceError as exc:
        s.record(Sample(metric=metric, value=None, unit="ms", error=str(exc), **base))
        raise
    finally:
        if inst is not None:
            seconds = rt.stop(inst)
            s.record(Sample(metric="boot.teardown", value=seconds * 1e3, unit="ms", **base))


def run(s: Session, cfg: BootExperiment) -> None:
    failures = Failures(s, "boot")
    for rep, warmup, order in s.schedule(
        cfg.warmups, cfg.runs, "boot", cfg.target_cv, cfg.run_limit()
    ):
        for runtime in order:
            for workload in cfg.workloads:
                unit = {"runtime": runtime, "repetition": rep, "workload": workload}
                if not s.pending("boot", warmup, **unit):
                    continue
                for _ in range(cfg.benchmark_times):
                    if failures.skip(runtime):
                        break
                    with failures.attempt(runtime):
                        measure_once(s, runtime, workload, rep, warmup, cfg.timeout_s)
                s.finished("boot", warmup, **unit)
        kind, total = ("warm-up", cfg.warmups) if warmup else ("repetition", total_runs(cfg))
        s.say(f"boot: {kind} {rep + 1}/{total} done")
