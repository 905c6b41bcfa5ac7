"""`throughput`: a server in the instance, a client on the host, figures from the client.

For each repetition, runtime (rotated as in boot) and serving workload: start a fresh
instance running the server, wait until its TCP port accepts connections, run the
workload's client once per level of its swept parameter (e.g. wrk's connections), parse
the client's output and store every figure, then stop the instance. Clients run on the
host, outside the instance's cgroup, and talk to the instance over the host network or
the run's bridge (never anything else); `none` cannot be reached, so it is an error.
"""

from __future__ import annotations

from virtbench.errors import InstanceError
from virtbench.experiments.failures import Failures
from virtbench.experiments.session import Session
from virtbench.experiments.worker import Worker, check_reachable
from virtbench.spec import ThroughputExperiment

# One unit of measurement (`run --resume` skips the finished ones): a sample's fields.
UNIT = ("runtime", "repetition", "workload")


def check(s: Session, cfg: ThroughputExperiment) -> None:
    """Before any measurement: clients installed, every server reachable from the host."""
    for name in cfg.workloads:
        check_reachable(s, "throughput", name, s.spec.runtimes)


def measure(
    s: Session, cfg: ThroughputExperiment, runtime: str, name: str, rep: int, warmup: bool
) -> None:
    """One repetition of one workload: a fresh server (or a fresh measuring instance per
    level), every level measured, every figure stored as soon as it is parsed."""
    worker = Worker(
        s, runtime, name, cfg.params_for(name), cfg.ready_timeout_s, cfg.client_timeout_s
    )
    labels = {"repetition": rep, "warmup": warmup}
    with worker:
        try:
            worker.start()
        except InstanceError as exc:  # stored with its reason: counted, never averaged
            s.record(worker.failed("throughput", worker.levels[0], str(exc), **labels))
            raise
        worker.measure_levels("throughput", **labels)


def run(s: Session, cfg: ThroughputExperiment) -> None:
    failures = Failures(s, "throughput")
    for rep, warmup, order in s.schedule(
        cfg.warmups, cfg.runs, "throughput", cfg.target_cv, cfg.run_limit()
    ):
        for runtime in order:
            for name in cfg.workloads:
                if failures.skip(runtime):
                    break
                unit = {"runtime": runtime, "repetition": rep, "workload": name}
                if not s.pending("throughput", warmup, **unit):
                    continue
                kind = "warm-up" if warmup else "run"
                s.say(f"throughput: {name} on {runtime} ({kind} {rep + 1})")
                with failures.attempt(runtime, name):
                    measure(s, cfg, runtime, name, rep, warmup)
                s.finished("throughput", warmup, **unit)
