"""`burst`: many instances launched at the same moment, as an orchestrator starts sandboxes
for a wave of requests.

At each level N (a sweep such as 1, 10, 50, 100): N instances are prepared one after
another, untimed (ledger, bundle, network, as boot prepares one); after a quiet wait, all
are launched at once. Where the launch is a launcher command (crun, runc, runsc, lxc,
LXD, podman, native), one thread issues the N commands back to back, as `xargs -P`
does, and N threads wait for them and for each ready datagram: a thread per launch
would hand Python's lock from thread to thread between spawns, each handoff waiting for
a CPU the launchers already hold. Engine API calls (docker) and VMMs are made by N
threads released together by a barrier. bench/burst_vs_xargs.py holds the launcher to a
shell's `xargs -P`. Per level and repetition:

  burst.spawn_to_ready@N  each instance: its own launch call -> its ready datagram
                          (a failed one: its reason); params launch_offset_ms: its launch
                          call after the burst's first
  burst.p50/p95/p99/max@N those of the burst's successful instances (numpy's linear
                          percentiles), one value per burst
  burst.ready_per_s@N     instances ready / (last ready - first launch call)
  burst.failed@N          instances that did not become ready
  burst.host_cpu@N        the host's CPUs busy over the burst (/proc/stat)

Then every instance is stopped; the next level waits `settle_s`. One unit of measurement
(`run --resume`) is a runtime's every level in one repetition.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import Field, field_validator

from virtbench import workloads
from virtbench.errors import InstanceError
from virtbench.experiments.estimate import QUIET_WAIT_S, Costs, Estimate
from virtbench.experiments.failures import Failures
from virtbench.experiments.kind import ExperimentType
from virtbench.experiments.session import Session
from virtbench.experiments.together import Launched, launch_together, levels
from virtbench.figure import MONO, NS_MS, Metric
from virtbench.runtimes.base import Instance
from virtbench.store import Sample
from virtbench.tables.base import (
    CommonExperiment,
)

UNIT = ("runtime", "repetition", "workload")

# The figures it records (virtbench.figure), each at its level (`@<level>`).
SPAWN_TO_READY = Metric(
    "burst.spawn_to_ready",
    "ms",
    "lower",
    "each instance of the burst: its own launch call -> its ready datagram reached the host" + MONO,
    resolution=NS_MS,
    headline=False,
    label="time to ready in a burst",
)


def _quantile(name: str, word: str) -> Metric:
    q = name.partition(".")[2]
    return Metric(
        name,
        "ms",
        "lower",
        f"the {q} of the burst's spawn_to_ready, one per burst" + MONO,
        resolution=NS_MS,
        headline=q == "p50",
        label=f"{word} time to ready at once",
    )


P50 = _quantile("burst.p50", "median")
P95 = _quantile("burst.p95", "p95")
P99 = _quantile("burst.p99", "p99")
MAX = _quantile("burst.max", "slowest")
READY_PER_S = Metric(
    "burst.ready_per_s",
    "instances/s",
    "higher",
    "instances ready over the time from the burst's first launch call to its last ready datagram",
    resolution=None,
    label="instances ready/s",
)
FAILED = Metric(
    "burst.failed",
    "instances",
    "lower",
    "instances of the burst that did not become ready (each with its reason as a failed "
    "burst.spawn_to_ready)",
    compared=False,
    side=True,
    label="instances not ready",
)
HOST_CPU = Metric(
    "burst.host_cpu",
    "%",
    "lower",
    "the host's CPUs busy from the burst's first launch call to its last ready (or "
    "failure), /proc/stat",
    repeated=False,
    compared=False,
    headline=False,
    side=True,
    label="host CPU busy",
)
METRICS = (SPAWN_TO_READY, P50, P95, P99, MAX, READY_PER_S, FAILED, HOST_CPU)


class BurstExperiment(CommonExperiment):
    """`levels`: at each, that many instances are launched at the same moment, each timed
    from its own launch call to its ready probe; every level `runs` times."""

    type: Literal["burst"]
    workload: Literal["sleep"] = "sleep"
    levels: list[int] = Field(default=[1, 10, 50, 100], min_length=1)
    runs: int = Field(default=3, ge=1, le=1000)
    timeout_s: float = Field(default=120.0, gt=0, le=3600)
    settle_s: float = Field(default=1.0, ge=0, le=600)  # after a level's instances are stopped

    _levels = field_validator("levels")(lambda cls, v: levels(v))

    def instance_workloads(self) -> list[str]:
        return [self.workload]


QUANTILES = {P50: 50, P95: 95, P99: 99, MAX: 100}


def run(s: Session, cfg: BurstExperiment) -> None:
    failures = Failures(s, "burst")
    for rep, warmup, order in s.schedule(0, cfg.runs, "burst"):
        for runtime in order:
            unit = {"runtime": runtime, "repetition": rep, "workload": cfg.workload}
            if not s.pending("burst", warmup, **unit):
                continue
            for level in cfg.levels:
                if failures.skip(runtime):
                    break
                with failures.attempt(runtime):
                    burst_once(s, runtime, level, rep, cfg)
                time.sleep(cfg.settle_s)
            s.finished("burst", warmup, **unit)
        s.say(f"burst: repetition {rep + 1}/{cfg.runs} done")


def burst_once(s: Session, runtime: str, level: int, rep: int, cfg: BurstExperiment) -> None:
    """One burst of `level` instances of `runtime`; records its samples. InstanceError
    when not one instance became ready (the runtime's failures count it)."""
    rt = s.runtimes[runtime]
    wl = workloads.get(cfg.workload)
    assert wl.argv is not None, f"{cfg.workload} runs no argv of its own"
    params = {**s.params(runtime), "level": level}
    base = dict(
        experiment="burst",
        runtime=runtime,
        workload=cfg.workload,
        repetition=rep,
        params=params,
    )
    prepared: list[Instance] = []
    errors: list[str] = []
    try:
        for _ in range(level):
            try:
                prepared.append(rt.prepare(s.instance_spec(runtime, wl.argv)))
            except InstanceError as exc:  # this one fails; the burst goes on with the rest
                errors.append(str(exc))
        with s.timed("burst", runtime, params):
            busy0 = s.host.cpu_busy()
            results = launch_together(rt, prepared, cfg.timeout_s)
            burst = Burst(level, results, errors, busy0, s.host.cpu_busy())
    finally:
        stop_errors = rt.stop_each(prepared)
    if stop_errors:
        s.event(
            "warning",
            f"burst: {runtime}: {len(stop_errors)} instances could not be "
            f"stopped: {stop_errors[0]}",
        )
    record(s, base, burst)


@dataclass(frozen=True)
class Burst:
    """What one burst gave: its size, each instance launched, why those that could not
    even be prepared failed, and the host's CPU counters (busy, total) before and after."""

    level: int
    launched: list[Launched]
    errors: list[str]
    busy_before: tuple[int, int]
    busy_after: tuple[int, int]


def record(s: Session, base: dict, burst: Burst) -> None:
    """The burst's samples: each instance's, then the burst's own figures."""
    level, launched, errors = burst.level, burst.launched, burst.errors
    at = level
    ok = _each_instance(s, base, at, launched, errors)
    s.record(FAILED.at(at).sample(level - len(ok), **base))
    s.record(_host_cpu(base, at, burst.busy_before, burst.busy_after))
    if not ok:
        why = launched[0].why if launched else errors[0]  # every one failed
        for q in QUANTILES:
            s.record(q.at(at).sample(None, error=why, **base))
        raise InstanceError(
            f"{base['runtime']}: no instance of a burst of {level} became ready: {why}"
        )
    times = np.array([(r - sp) / 1e6 for sp, r in ok])
    for q, pct in QUANTILES.items():
        s.record(q.at(at).sample(float(np.percentile(times, pct)), **base))
    window_s = (max(r for _, r in ok) - min(x.spawn_ns for x in launched)) / 1e9
    s.record(READY_PER_S.at(at).sample(len(ok) / window_s, **base))


def _each_instance(
    s: Session, base: dict, at: int, launched: list[Launched], errors: list[str]
) -> list[tuple[int, int]]:
    """Each instance's burst.spawn_to_ready: those that could not even be prepared
    (`errors`), then those launched, each with its launch call's offset after the
    burst's first; returns the (launch call, ready) times of those that became ready."""
    for why in errors:  # instances that could not even be prepared
        s.record(SPAWN_TO_READY.at(at).sample(None, error=why, **base))
    ok = []
    results = [(x.spawn_ns, None if x.why else x.ready_ns, x.why) for x in launched]
    first = min((spawn for spawn, _, _ in results), default=0)
    for spawn, ready, why in results:
        value = None if ready is None else (ready - spawn) / 1e6
        # when its launch call came, after the burst's first: how together they were
        params = {**base["params"], "launch_offset_ms": round((spawn - first) / 1e6, 3)}
        s.record(SPAWN_TO_READY.at(at).sample(value, error=why, **{**base, "params": params}))
        if ready is not None:
            ok.append((spawn, ready))
    return ok


def _host_cpu(base: dict, at: int, busy0: tuple[int, int], busy1: tuple[int, int]) -> Sample:
    """burst.host_cpu: the host's CPUs busy between the two /proc/stat readings (busy,
    total); none where the burst was shorter than the counters' tick."""
    total = busy1[1] - busy0[1]
    cpu = 100 * (busy1[0] - busy0[0]) / total if total > 0 else None
    return HOST_CPU.at(at).sample(
        cpu,
        error=""
        if total > 0
        else "the burst was shorter than the CPU counters' "
        "tick (/proc/stat: 10 ms): below what they resolve",
        **base,
    )


def estimate(cfg: BurstExperiment, cost: Costs) -> Estimate:
    """runs x each level's launches, and a quiet wait and `settle_s` per burst."""
    n = cfg.runs * sum(cfg.levels)
    t = n * cost.launch() + cfg.runs * len(cfg.levels) * (cfg.settle_s + QUIET_WAIT_S)
    return Estimate(n, t, f"{cfg.runs} x bursts of {', '.join(map(str, cfg.levels))}")


TYPE = ExperimentType(
    "burst",
    BurstExperiment,
    run,
    UNIT,
    order=70,
    estimate=estimate,
    metrics=METRICS,
)
