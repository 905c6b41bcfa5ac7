"""What an instance costs on a host of a stated size and price (`report --host-price`):
how many instances fit on it and what each costs per hour, derived from what the run
measured, never measured itself.

  memory per instance   what the host loses per instance: the slope of its memory in use
                        against instances running (density.host_cost), or where the run
                        has no pile-up slope, each instance's cgroup memory
  idle CPU per instance density.idle_cpu (a density run with idle_cpu_s)
  instances per host    the host's memory / memory per instance, or its CPUs x 1000 /
                        idle millicores where that is fewer (the bound is said)
  cost                  per 1,000 instance-hours: 1,000 x the host's price per hour /
                        instances per host

Where a `task` ran, what a task costs: at the most tasks the run launched at once (N),
each took task.amortized (the batch's wall time / its tasks done) of the host's time, so

  tasks per hour        3,600,000 ms / task.amortized@N (this host, N at once)
  cost per task         the host's price per hour / tasks per hour

Each interval is carried from the figures' 95% CIs: their ends divided through (a bound
that reaches the method's resolution leaves that end open: "at least"). The host's whole
memory and CPUs are taken as the instances' (what its own system needs is not
subtracted): state less with --host-memory and --host-cpus.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rich.table import Table

from virtbench import metrics
from virtbench.experiments import density_figures as fig
from virtbench.experiments import task
from virtbench.experiments.density_idle import IDLE_CPU
from virtbench.report.cells import add_columns, fmt, span
from virtbench.report.fits import cost_fits
from virtbench.report.views.kind import standings
from virtbench.store.frame import Frame

HOST_COST, CGROUP = fig.HOST_COST.name, fig.CGROUP_MEMORY.name
IDLE, AMORTIZED = IDLE_CPU.name, task.AMORTIZED.name
HOURS = 1000  # the cost is given per this many instance-hours (per one: too many zeros)
PER = "USD / 1,000 inst.-hours"


@dataclass(frozen=True)
class Host:
    """The host the cost is worked out for: its price per hour, memory and CPUs."""

    price: float  # USD per hour
    memory_mib: float
    cpus: float


@dataclass(frozen=True)
class Figure:
    """A per-instance figure with its 95% CI (nan ends: none) and the least it can tell
    from zero (its method's resolution)."""

    value: float
    low: float
    high: float
    resolution: float

    def fit(self, capacity: float) -> tuple[float, float, float]:
        """How many fit in `capacity` (in the figure's unit): the figure, and the ends
        from its CI's (inf: no end, where a bound is within the resolution)."""

        def per(x: float) -> float:
            return math.inf if math.isnan(x) or x <= self.resolution else capacity / x

        low_end = self.high if not math.isnan(self.high) else self.value
        high_end = self.low if not math.isnan(self.low) else self.value
        return per(self.value), per(low_end), per(high_end)


def memory_figures(f: Frame) -> tuple[str, dict[str, Figure]]:
    """(what it is, runtime -> memory per instance in MiB): the host's cost slope where
    the run fitted one, else each instance's cgroup memory."""
    fitted = {rt: fit for (name, rt), fit in cost_fits(f).items() if name == HOST_COST}
    res = metrics.lookup(HOST_COST).resolution or 0.0
    if fitted:
        found = {rt: Figure(x.slope, x.ci_low, x.ci_high, res) for rt, x in fitted.items()}
        return "the host's memory in use per instance (its slope over the pile-up)", found
    return "each instance's cgroup memory", _medians(f, CGROUP)


def _medians(f: Frame, metric: str) -> dict[str, Figure]:
    rows = f.where("metric", metric) & ~f.warmup
    if not rows.any():
        return {}
    res = metrics.lookup(metric).resolution or 0.0
    return {st.runtime: Figure(st.value, st.low, st.high, res) for st in standings(f.take(rows))}


def table(f: Frame, host: Host, title: str) -> Table | None:
    """Per runtime with a memory figure: memory and idle CPU per instance, instances per
    host with what bounds them, and the cost per instance-hour; None without a pile-up."""
    basis, memory = memory_figures(f)
    if not memory:
        return None
    cpu = _medians(f, IDLE)
    t = Table(title=f"{title}: cost on a host of {_host(host)}", title_justify="left")
    heads = ["runtime", "memory / inst.", "idle CPU / inst.", "instances", "bound by", PER]
    add_columns(t, heads, ("runtime", "bound by"))
    for runtime, m in memory.items():
        by_memory = m.fit(host.memory_mib)
        c = cpu.get(runtime)
        by_cpu = c.fit(host.cpus * 1000) if c is not None else (math.inf,) * 3
        n = tuple(min(a, b) for a, b in zip(by_memory, by_cpu, strict=True))
        bound = "CPU" if by_cpu[0] < by_memory[0] else "memory"
        t.add_row(
            runtime,
            _cell(m, "MiB"),
            _cell(c, "m") if c is not None else "not measured",
            _instances(*n),
            bound,
            _price(host.price * HOURS, *n),
        )
    no_cpu = "" if cpu else " (not measured here: a density run with idle_cpu_s measures it)"
    t.caption = (
        f"derived, not measured: memory per instance is {basis}; idle CPU per instance is "
        f"density.idle_cpu{no_cpu}; instances = the host's memory / memory per instance, or "
        "its CPUs x 1000 / idle millicores where fewer; USD per 1,000 instance-hours = 1,000 "
        "x the host's price per hour / instances; each interval from the figures' 95% CIs, "
        "an end open where a bound is within the method's resolution; the host's whole "
        "memory and CPUs are the instances'"
    )
    t.caption_justify = "left"
    return t


def task_table(f: Frame, host: Host, title: str) -> Table | None:
    """Per runtime whose tasks ran at once: the time per task at the most at once, tasks
    per hour and the cost per task; None where no task ran at once."""
    levels: dict[str, int] = {}
    for metric in f.distinct("metric"):
        name, _, level = metric.partition("@")
        if name == AMORTIZED and level.isdigit():
            levels[metric] = int(level)
    if not levels:
        return None
    at = max(levels.values())
    per_task = _medians(f, f"{AMORTIZED}@{at}")
    t = Table(title=f"{title}: cost per task at {at} at once", title_justify="left")
    heads = ["runtime", "host time / task", "tasks / hour", "USD / task"]
    add_columns(t, heads, ("runtime",))
    for runtime, x in per_task.items():
        hourly = Figure(x.value, x.low, x.high, x.resolution).fit(3_600_000.0)
        t.add_row(runtime, _cell(x, "ms"), _instances(*hourly), _price(host.price, *hourly))
    t.caption = (
        f"derived, not measured: host time per task is task.amortized at {at} at once (the "
        "batch's wall time / its tasks done) on the run's own host, whatever --host-memory "
        "and --host-cpus say; tasks per hour = 3,600,000 ms / it; USD per task = the host's "
        "price per hour / tasks per hour; each interval from the figure's 95% CI"
    )
    t.caption_justify = "left"
    return t


def _host(host: Host) -> str:
    return f"{fmt(host.memory_mib / 1024)} GiB, {fmt(host.cpus)} CPUs at {fmt(host.price)} USD/hour"


def _cell(x: Figure, unit: str) -> str:
    """ "4.08 MiB (3.84-4.39)"; "< 0.001 m" within the method's resolution of 0."""
    if 0 <= x.value < x.resolution or (x.value == 0 and x.resolution == 0):
        return f"< {fmt(x.resolution)} {unit}" if x.resolution else f"0 {unit}"
    ci = f" ({span(x.low, x.high)})" if not math.isnan(x.low) else ""
    return f"{fmt(x.value)} {unit}{ci}"


def _instances(value: float, low: float, high: float) -> str:
    """ "1,234 (1,100-1,300)", whole instances; an open top: "at least 1,100"."""
    if math.isinf(value):
        return f"at least {math.floor(low):,}" if not math.isinf(low) else "no bound"
    if math.isinf(high):
        return f"{math.floor(value):,} (at least {math.floor(low):,})"
    return f"{math.floor(value):,} ({math.floor(low):,}-{math.floor(high):,})"


def _price(price: float, value: float, low: float, high: float) -> str:
    """The host's price over instances (`value`, CI `low`-`high`): "0.0012
    (0.0011-0.0014)"; where the instances' top is open, the price's bottom is: "at most"."""
    if math.isinf(low):
        return "no bound"
    if math.isinf(value):
        return f"at most {fmt(price / low)}"
    if math.isinf(high):
        return f"{fmt(price / value)} (at most {fmt(price / low)})"
    return f"{fmt(price / value)} ({fmt(price / high)}-{fmt(price / low)})"
