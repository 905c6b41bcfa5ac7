"""What a spec will do, and about how long it takes here, without starting anything.

Per experiment and runtime: the instances it starts and an estimate of its wall time,
from a simple model of each procedure that its type declares (`estimate` in its module,
adding up the costs of experiments/estimate.py): boot's is (warmups + runs) x workloads x
benchmark_times timed launches, density's runs x (memory settle window + `instances`
launches + their stops), and so on.

A launch costs what a start and a stop of the runtime take here: the median of this
host's earlier boot samples when the store has them (`launch_costs`), else a typical
figure for the runtime class. It is an estimate: the catalog and `--plan` say so, and
what was measured beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from virtbench.experiments.boot import SPAWN_TO_EXIT, TEARDOWN
from virtbench.experiments.estimate import DEFAULT_MEASURE_S

if TYPE_CHECKING:
    from virtbench.spec.resolved import Part, Plan, RuntimePlan


@dataclass(frozen=True)
class Step:
    """One experiment on one runtime."""

    experiment: str
    runtime: str
    launches: int
    seconds: float
    detail: str


def step(part: Part, runtime: RuntimePlan, costs: dict[str, float]) -> Step:
    """`part` on `runtime`, as its type estimates it."""
    e = part.estimate(runtime, costs)
    if e is None:
        return Step(part.type, runtime.label, 0, DEFAULT_MEASURE_S, "no model of this experiment")
    return Step(part.type, runtime.label, e.launches, e.seconds, e.detail)


def steps(plan: Plan, costs: dict[str, float] | None = None) -> list[Step]:
    """Every (experiment, runtime) of `plan` with its launches and estimated seconds."""
    costs = costs or {}
    return [step(part, plan.runtimes[r], costs) for part in plan.parts for r in part.runtimes]


def total_s(plan: Plan, costs: dict[str, float] | None = None) -> float:
    """The whole plan's estimated wall time, set-up of the run included."""
    return 10.0 + sum(s.seconds for s in steps(plan, costs))


def launch_costs(samples: list[Any]) -> dict[str, float]:
    """Start + stop seconds per runtime from earlier boot samples of this host (the
    median of spawn -> exit plus the median teardown), where there are at least 5."""
    by: dict[str, dict[str, list[float]]] = {}
    for x in samples:
        if x.experiment != "boot" or x.error or x.value is None or x.warmup:
            continue
        if x.metric in (SPAWN_TO_EXIT.name, TEARDOWN.name):
            by.setdefault(x.runtime, {}).setdefault(x.metric, []).append(x.value)
    out = {}
    for runtime, m in by.items():
        spawn = sorted(m.get(SPAWN_TO_EXIT.name, []))
        if len(spawn) < 5:
            continue
        down = sorted(m.get(TEARDOWN.name, [])) or [0.0]
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
