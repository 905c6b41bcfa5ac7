"""`isolation`: how much a misbehaving neighbour slows a well-behaved instance (S1).

The worker's instance is pinned to one CPU (`worker_cpu`, default the last online one).
Each repetition, for each runtime (rotated as in boot), the worker is measured under
every condition, in an order rotated by repetition so slow drift favours none:
  baseline             no attacker (attacker = "", placement = ""); with baseline =
                       "busy", a spinner on every CPU outside the worker's core
  <attacker>/<place>   attacker instances of the same runtime (or of `attacker_runtime`:
                       an image that serves one program cannot run an attacker), one per
                       CPU the placement says (measure/topology.py; all-other: every CPU
                       outside the worker's core, SMT siblings included), each started and
                       waited for until its ready datagram arrives, then `settle_s` before
                       the worker runs
Every figure the worker yields is stored with its attacker and placement labels. After
each attacked measurement the attackers must still be running (a neighbour that died
early would flatter the runtime); if one is not, the measurement is stored as failed with
its console output. Attackers are stopped after every measurement. Placements the host
cannot offer, or that would pin the attackers exactly as an earlier placement does (all-other
on a 2-CPU host is other-cpu), are skipped, with the reason stored as an event; so is a
memory-holding attacker (memory, mempressure, disk) whose instances at a placement would
together hold more than half of MemAvailable (all-other on a host with many CPUs)
(isolation_neighbours.py).

Repetitions adapt (isolation_precision.py): after `runs`, they go on until every
slowdown's 95% CI is at most `ci_target_pct` points wide or max_runs are done, and the
run says which; before any attack, each runtime's worker is measured alone `pilot` times
and a baseline too spread for the target is said.

Slowdown (report/isolation_table.py) compares the medians of attacked and baseline
measurements of the workload's primary metric, in the direction that metric improves:
  slowdown = worse / better - 1, with a bootstrap 95% CI; positive means slower.
"""

from __future__ import annotations

import time

from virtbench.errors import InstanceError, SpecError
from virtbench.experiments import isolation_precision as precision
from virtbench.experiments.estimate import Costs, Estimate
from virtbench.experiments.failures import Failures
from virtbench.experiments.isolation_config import IsolationExperiment
from virtbench.experiments.isolation_neighbours import (
    SPINNER,
    TASKS_PEAK,
    Condition,
    Neighbours,
    condition_labels,
    conditions,
    start_attackers,
)
from virtbench.experiments.kind import ExperimentType
from virtbench.experiments.session import Session, total_runs
from virtbench.experiments.trial import Trial
from virtbench.experiments.worker import Job, Worker, check_reachable
from virtbench.figure import Metric
from virtbench.measure.topology import Topology

# One unit of measurement (`run --resume` skips the finished ones): a sample's fields.
UNIT = ("runtime", "repetition", "attacker", "placement")

# The figures it records (virtbench.figure), beside its worker's.
ANY = Metric(
    "isolation.*",
    "",
    None,
    "an isolation figure not declared here",
    lower_bound=None,
    headline=False,
    label="isolation {}",
)
METRICS = (TASKS_PEAK, ANY)


def worker_cpu(cfg: IsolationExperiment, topo: Topology) -> int:
    cpu = topo.default_worker_cpu() if cfg.worker_cpu is None else cfg.worker_cpu
    if cpu not in topo.cpus:
        online = ",".join(map(str, topo.cpus))
        raise SpecError(f"isolation: worker_cpu {cpu} is not an online CPU (online: {online})")
    return cpu


def check(s: Session, cfg: IsolationExperiment) -> None:
    """Before any measurement: the worker CPU exists and a serving worker is reachable."""
    worker_cpu(cfg, s.host.topology())
    check_reachable(s, "isolation", cfg.worker, s.spec.runtimes)


def measure(
    s: Session, cfg: IsolationExperiment, worker: Worker, cond: Condition, trial: Trial
) -> None:
    """The worker once (every level) under one condition, in `trial`'s repetition;
    samples stored as they come."""
    name, _, cpus = cond
    attacker_runtime = cfg.attacker_runtime or worker.runtime
    rt = s.runtimes[attacker_runtime]  # the attackers' runtime
    labels = condition_labels(cfg, cond, trial.repetition, trial.warmup, rt)
    neighbours = Neighbours(cfg, rt, name, cpus)
    try:
        if cpus:  # attackers, or a busy baseline's spinners
            try:
                neighbours.running = start_attackers(
                    s, cfg, attacker_runtime, name or SPINNER, cpus
                )
            except InstanceError as exc:  # stored with its reason: counted, never averaged
                s.record(worker.failed("isolation", worker.levels[0], str(exc), **labels))
                raise
            time.sleep(cfg.settle_s)
        worker.measure_levels("isolation", check=neighbours.alive, quiet=not cpus, **labels)
    finally:
        neighbours.stop(s, worker, labels)


def run(s: Session, cfg: IsolationExperiment) -> None:
    topo = s.host.topology()
    cpu = worker_cpu(cfg, topo)
    conds = conditions(s, cfg, topo, cpu)
    if len(topo.cpus) < 4:
        s.event(
            "info",
            f"isolation: {len(topo.cpus)} CPUs: the host's clients and virtbench itself share "
            "CPUs with the worker and the attackers",
        )
    failures = Failures(s, "isolation")
    job = Job.of(cfg, cfg.worker)
    precision.pilot(s, cfg, cpu)
    targets = [precision.slowdown_target(s, cfg)] if precision.adapts(cfg) else []
    for rep, warmup, order in s.repetitions("isolation", cfg, targets):
        shift = rep % len(conds)
        for runtime in order:
            units = [
                {"runtime": runtime, "repetition": rep, "attacker": a, "placement": p}
                for a, p, *_ in conds[shift:] + conds[:shift]
            ]
            todo = [u for u in units if s.pending("isolation", warmup, **u)]
            if failures.skip(runtime) or not todo:
                continue
            worker = Worker(s, runtime, job, cpus=str(cpu))
            with worker:
                try:
                    worker.start()
                except InstanceError as exc:
                    s.record(
                        worker.failed(
                            "isolation", worker.levels[0], str(exc), repetition=rep, warmup=warmup
                        )
                    )
                    failures.failed(runtime, exc)
                    for u in todo:  # settled as in an uninterrupted run: not retried
                        s.finished("isolation", warmup, **u)
                    continue
                for cond, unit in zip(conds[shift:] + conds[:shift], units, strict=True):
                    if failures.skip(runtime):
                        break
                    if unit not in todo:
                        continue
                    with failures.attempt(runtime, cond[0] or "baseline"):
                        measure(s, cfg, worker, cond, Trial(runtime, cfg.worker, rep, warmup))
                    s.finished("isolation", warmup, **unit)
        kind, total = ("warm-up", cfg.warmups) if warmup else ("repetition", total_runs(cfg))
        s.say(f"isolation: {kind} {rep + 1}/{total} done")


def offered(cfg: IsolationExperiment) -> int:
    """How many of the placements this host offers (distinct CPU sets: all-other on a
    2-CPU host is other-cpu; no SMT sibling, no smt-sibling)."""
    try:
        topo = Topology.detect()
    except OSError:
        return len(cfg.placements)
    cpu = topo.default_worker_cpu() if cfg.worker_cpu is None else cfg.worker_cpu
    sets = {tuple(c) for p in cfg.placements if (c := topo.placement(p, cpu)[0])}
    return len(sets)


def estimate(cfg: IsolationExperiment, cost: Costs) -> Estimate:
    """runs x conditions (attackers x placements, plus the baseline) x (attacker launches
    + settle_s + the worker's measurement), plus the baseline check's measurements; with a
    CI target, `runs` is the least it does (the most is run_limit)."""
    reps = cfg.warmups + cfg.runs
    places = offered(cfg)
    conds = 1 + len(cfg.attackers) * places
    worker = cost.worker(cfg.worker, cfg.params_for(cfg.worker))
    one = worker + cost.launch()
    attack = len(cfg.attackers) * places * (cost.launch() + cfg.settle_s)
    n = reps * (conds + len(cfg.attackers) * places)
    pilot = cfg.pilot if precision.adapts(cfg) else 0
    seconds = reps * (conds * one + attack) + (pilot * worker + cost.launch() if pilot else 0)
    return Estimate(n, seconds, f"{reps} x {conds} conditions")


TYPE = ExperimentType(
    "isolation",
    IsolationExperiment,
    run,
    UNIT,
    order=50,
    check=check,
    estimate=estimate,
    metrics=METRICS,
)
