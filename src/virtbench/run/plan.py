"""What a spec will do, and about how long it takes here, without starting anything.

Per experiment and runtime: the instances it starts and an estimate of its wall time,
from a simple model of each procedure:

  boot          (warmups + runs) x workloads x benchmark_times timed launches
  density       runs x (memory settle window + `instances` launches + their stops)
  scalability   runs x (memory settle + the pile-up's launches + at each point the
                worker's measurements and `settle_s`)
  throughput    runs x per workload (a server launch + each level's measurement)
  isolation     runs x conditions (attackers x placements, plus the baseline) x
                (attacker launches + settle_s + the worker's measurement)
  min_memory    about log2((high - low) / step) + 2 probes x runs x (a launch + the
                workload's measurement)

A launch costs what a start and a stop of the runtime take here: the median of this
host's earlier boot samples when the store has them (`launch_costs`), else a typical
figure for the runtime class below; a timed launch adds the quiet-host wait. A
measurement costs its workload's `seconds(params, level)` when the workload says, else the
duration its parameters name (`duration_s`, `time_s`, `runtime_s`), else 10 s.
It is an estimate: the catalog and `--plan` say so, and what was measured beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from virtbench import runtimes as runtime_registry
from virtbench import workloads

if TYPE_CHECKING:
    from virtbench.spec import Spec

# Start + stop of one instance, seconds, where the store has no earlier boot of the
# runtime: typical figures of this class of host (2 vCPUs).
TYPICAL_LAUNCH_S = {
    "native": 0.01,
    "runc": 0.06,
    "crun": 0.04,
    "runsc": 0.4,
    "docker": 0.5,
    "podman": 0.8,
    "lxc": 0.1,
    "lxd": 2.0,
    "nspawn": 0.15,
    "qemu": 0.3,
    "firecracker": 0.1,
    "cloud-hypervisor": 0.1,
}
LINUX_GUEST_S = 3.0  # a Linux guest under emulation boots in ~1.8 s here, plus its stop
DEFAULT_LAUNCH_S = 1.0
QUIET_WAIT_S = 0.15  # a timed launch first waits for a quiet host
DEFAULT_MEASURE_S = 10.0


@dataclass(frozen=True)
class Step:
    """One experiment on one runtime."""

    experiment: str
    runtime: str
    launches: int
    seconds: float
    detail: str


def launch_s(runtime: str, driver: str, costs: dict[str, float], serving: bool = False) -> float:
    """Seconds one start and stop of `runtime` (on the built-in label `driver`) take (a
    Linux guest for a VM's server)."""
    if runtime in costs:
        return costs[runtime]
    base = runtime_registry.split(driver)[0]
    family = getattr(runtime_registry.get(base), "family", None)
    if serving and family is not None and family.value == "vm":
        return LINUX_GUEST_S
    return TYPICAL_LAUNCH_S.get(base, DEFAULT_LAUNCH_S)


def measure_s(name: str, params: Any, level: Any) -> float:
    """Seconds one measurement of workload `name` at `level` takes."""
    wl = workloads.get(name)
    if hasattr(wl, "seconds"):
        return float(wl.seconds(params, level))
    for field in ("duration_s", "time_s", "runtime_s"):
        if hasattr(params, field):
            return float(getattr(params, field)) + 1.0
    return DEFAULT_MEASURE_S


def worker_s(name: str, params: Any) -> float:
    """Seconds a worker's measurement takes (every level of it)."""
    wl = workloads.get(name)
    levels = wl.levels(params) if hasattr(wl, "levels") else [None]
    return sum(measure_s(name, params, lv) for lv in levels)


def _steps(exp: Any, runtime: str, driver: str, costs: dict[str, float]) -> Step:
    kind = exp.type
    if kind == "boot":
        n = (exp.warmups + exp.runs) * len(exp.workloads) * exp.benchmark_times
        t = n * (launch_s(runtime, driver, costs) + QUIET_WAIT_S)
        return Step(kind, runtime, n, t, f"{n} timed launches")
    if kind == "density":
        n = exp.runs * exp.instances
        t = exp.runs * exp.memory_settle_s + n * launch_s(runtime, driver, costs)
        return Step(kind, runtime, n, t, f"{exp.runs} x {exp.instances} instances")
    if kind == "scalability":
        points = exp.target // exp.instances_per_benchmark + 1
        serving = exp.background != "sleep"
        grow = exp.target * launch_s(runtime, driver, costs, serving)
        if exp.worker == "boot":
            one = launch_s(runtime, driver, costs) + QUIET_WAIT_S
        else:
            one = launch_s(runtime, driver, costs, True) + worker_s(
                exp.worker, exp.params_for(exp.worker)
            )
        per_rep = (
            exp.memory_settle_s + grow + points * (exp.per_point * one + exp.settle_s)
            + (exp.warmups * one)
        )  # fmt: skip
        n = exp.runs * (exp.target + points * exp.per_point)
        return Step(kind, runtime, n, exp.runs * per_rep,
                    f"{exp.runs} x {points} points up to {exp.target} background")  # fmt: skip
    if kind == "throughput":
        reps = exp.warmups + exp.runs
        each = sum(
            launch_s(runtime, driver, costs, True) + worker_s(w, exp.params_for(w))
            for w in exp.workloads
        )
        n = reps * len(exp.workloads)
        return Step(kind, runtime, n, reps * each,
                    f"{reps} x {len(exp.workloads)} workloads")  # fmt: skip
    if kind == "isolation":
        reps = exp.warmups + exp.runs
        places = offered(exp)
        conds = 1 + len(exp.attackers) * places
        one = worker_s(exp.worker, exp.params_for(exp.worker)) + launch_s(runtime, driver, costs)
        attack = len(exp.attackers) * places * (launch_s(runtime, driver, costs) + exp.settle_s)
        n = reps * (conds + len(exp.attackers) * places)
        return Step(kind, runtime, n, reps * (conds * one + attack),
                    f"{reps} x {conds} conditions")  # fmt: skip
    if kind == "min_memory":
        probes = 2 + math.ceil(math.log2(max(2, (exp.high_mib - exp.low_mib) // exp.step_mib)))
        one = launch_s(runtime, driver, costs, True) + worker_s(
            exp.workload, exp.params_for(exp.workload)
        )
        n = probes * exp.runs
        return Step(kind, runtime, n, n * one, f"about {probes} probes x {exp.runs}")
    if kind == "burst":
        n = exp.runs * sum(exp.levels)
        t = n * launch_s(runtime, driver, costs) + exp.runs * len(exp.levels) * (
            exp.settle_s + QUIET_WAIT_S
        )
        return Step(
            kind, runtime, n, t, f"{exp.runs} x bursts of {', '.join(map(str, exp.levels))}"
        )
    if kind == "exec":  # one instance per repetition; a command's exec ~ a launch's tenth
        execs = exp.runs * 2 * exp.count
        t = exp.runs * launch_s(runtime, driver, costs) + execs * (
            0.1 * launch_s(runtime, driver, costs) + 0.005
        )
        return Step(kind, runtime, exp.runs, t, f"{exp.runs} x 2 commands x {exp.count}")
    if kind == "pause":
        t = exp.runs * (launch_s(runtime, driver, costs) + exp.cycles * (exp.hold_s + 0.1))
        return Step(kind, runtime, exp.runs, t, f"{exp.runs} x {exp.cycles} pause/resume cycles")
    if kind == "snapshot":  # a checkpoint and a restore ~ a few launches
        t = exp.runs * (4 * launch_s(runtime, driver, costs) + exp.gone_s + 1)
        return Step(kind, runtime, 2 * exp.runs, t, f"{exp.runs} x checkpoint and restore")
    return Step(kind, runtime, 0, DEFAULT_MEASURE_S, "no model of this experiment")


def offered(exp: Any) -> int:
    """How many of an isolation experiment's placements this host offers (distinct CPU
    sets: all-other on a 2-CPU host is other-cpu; no SMT sibling, no smt-sibling)."""
    from virtbench.measure.topology import Topology

    try:
        topo = Topology.detect()
    except OSError:
        return len(exp.placements)
    cpu = topo.default_worker_cpu() if exp.worker_cpu is None else exp.worker_cpu
    sets = {tuple(c) for p in exp.placements if (c := topo.placement(p, cpu)[0])}
    return len(sets)


def steps(spec: Spec, costs: dict[str, float] | None = None) -> list[Step]:
    """Every (experiment, runtime) of `spec` with its launches and estimated seconds."""
    costs = costs or {}
    return [
        _steps(exp, runtime, spec.driver_of(runtime), costs)
        for exp in spec.experiment
        for runtime in spec.runtimes_of(exp)
    ]


def total_s(spec: Spec, costs: dict[str, float] | None = None) -> float:
    """The whole spec's estimated wall time, set-up of the run included."""
    return 10.0 + sum(s.seconds for s in steps(spec, costs))


def launch_costs(samples: list[Any]) -> dict[str, float]:
    """Start + stop seconds per runtime from earlier boot samples of this host (the
    median of spawn -> exit plus the median teardown), where there are at least 5."""
    by: dict[str, dict[str, list[float]]] = {}
    for x in samples:
        if x.experiment != "boot" or x.error or x.value is None or x.warmup:
            continue
        if x.metric in ("boot.spawn_to_exit", "boot.teardown"):
            by.setdefault(x.runtime, {}).setdefault(x.metric, []).append(x.value)
    out = {}
    for runtime, m in by.items():
        spawn = sorted(m.get("boot.spawn_to_exit", []))
        if len(spawn) < 5:
            continue
        down = sorted(m.get("boot.teardown", [])) or [0.0]
        out[runtime] = (spawn[len(spawn) // 2] + down[len(down) // 2]) / 1e3
    return out


def duration(seconds: float) -> str:
    """`45 s`, `12 min`, `3.5 h`, `2.1 days`."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
