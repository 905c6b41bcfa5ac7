"""`scalability`: how a worker's performance changes as idle instances pile up (S1).

For each runtime (one at a time: instances of different runtimes never share the host)
and each run, with the worker's server started once (serving workers):
  0. wait until the host's memory in use held still for `memory_settle_s` (an earlier
     pile-up's teardown goes on in the kernel for seconds; Session.settle).
  1. at the current background count n (0 first): sleep `settle_s` while measuring host
     CPU idle %, then read MemAvailable % and swap free %; stored as
       host.cpu_idle_pct, host.mem_available_pct, host.swap_free_pct   (background = n)
     Warm-ups (n = 0 only, flagged) come before the first point.
  2. measure the worker `measurements_per_point` times (default: 5 boots, or 1 run of a
     serving workload; the report's trend goes through each point's median; a failure
     is stored with its reason, three in a row end the run); every figure is stored
     with background = n:
       boot.spawn_to_exit                 worker `boot`: a hello instance, spawn -> exit
       <the workload's metrics>           any workload that yields figures (nginx+wrk...)
  3. unless n reached the final count (`instances`, or `instances_per_benchmark` x
     `benchmark_times`): start `instances_per_benchmark` more background
     instances (idle `sleep`, `nginx` or `redis`, network `background_network`), each
     waited for until its ready datagram arrives:
       scalability.launch                 spawn -> ready of that background instance (ms)
     and go back to 1.
The memory guard stops growth before the host runs short or swaps: MemAvailable below
`guard_available_pct` % of MemTotal or `guard_available_mib`, or swap in use growing by
more than 64 MiB since the run began. The point growth got to is still measured; why it
stopped is an event and `scalability.reached` (background instances at the end). Then
the worker and every background instance are stopped: `scalability.teardown_per_instance`.

S1's flags map directly: `--runs 5 --benchmark-times 3 --instances-per-benchmark 10` is
five runs of 4 points (0, 10, 20, 30 background instances); `--step` and `--max` name
the step and the final count instead.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any

from virtbench import workloads
from virtbench.errors import InstanceError, SpecError
from virtbench.experiments import boot
from virtbench.experiments.estimate import Costs, Estimate
from virtbench.experiments.failures import Failures
from virtbench.experiments.kind import ExperimentType
from virtbench.experiments.scalability_config import ScalabilityExperiment
from virtbench.experiments.session import Session
from virtbench.experiments.trial import Trial
from virtbench.experiments.worker import Job, Worker, check_reachable
from virtbench.figure import MONO, NS_MS, SPAWN, Metric, pile_metric
from virtbench.measure import sampler
from virtbench.runtimes.base import Instance

# One unit of measurement (`run --resume` skips the finished ones): a sample's fields.
UNIT = ("runtime", "repetition")

# The figures it records (virtbench.figure), beside the worker's, boot's and the host's.
LAUNCH = pile_metric(
    "scalability.launch",
    "ms",
    "lower",
    SPAWN + "a background instance's ready datagram reached the host" + MONO,
    resolution=NS_MS,
    side=True,
    label="background time to ready",
)
REACHED = pile_metric(
    "scalability.reached",
    "instances",
    "higher",
    "background instances running when growth stopped (the target, the memory guard, "
    "swapping, a failure)",
    resolution=1.0,
    repeated=False,
    compared=False,
    side=True,
    label="background instances reached",
)
TEARDOWN_PER_INSTANCE = pile_metric(
    "scalability.teardown_per_instance",
    "ms",
    "lower",
    "stopping every background instance, one after another, / their count" + MONO,
    resolution=NS_MS,
    side=True,
    label="teardown per background instance",
)
ANY = pile_metric(
    "scalability.*",
    "",
    None,
    "a scalability figure not declared here",
    lower_bound=None,
    label="scalability {}",
)
METRICS = (LAUNCH, REACHED, TEARDOWN_PER_INSTANCE, ANY)


MIB = 1024 * 1024


def check(s: Session, cfg: ScalabilityExperiment) -> None:
    """Before any measurement: the worker is reachable, and idle servers in the
    background would not fight over one host port."""
    if cfg.worker != "boot":
        check_reachable(s, "scalability", cfg.worker, s.spec.runtimes)
    if cfg.background == "sleep":
        return
    serves = workloads.get(cfg.background).serves
    port = serves.port if serves is not None else None
    for runtime in s.spec.runtimes:
        if s.runtimes[runtime].effective_network(cfg.background_network) == "host":
            raise SpecError(
                f"scalability: {runtime} runs background instances on the host network, so "
                f"idle {cfg.background} instances would all bind port {port}: use background "
                '= "sleep", or background_network = "none" on a runtime with its own network'
            )


def background_argv(name: str) -> Any:
    """The background instance's command: it signals ready over the probe first (servers
    are wrapped in vb-ready, which then execs them)."""
    wl = workloads.get(name)
    argv = wl.argv
    assert argv is not None, f"{name} has no command of its own to run in the background"
    if wl.ends == "ready":
        return argv
    return lambda instance: ("/bin/vb-ready", "{probe}", instance, *argv(instance))


def growth_stop(
    info: dict[str, int], limit: int, swap_base: int, n: int, swap_limit: int = 64 * MIB
) -> str:
    """Why no more background instances may start ("" when they may), from the host's
    meminfo `info`: MemAvailable below `limit`, or swap in use grown past `swap_limit`."""
    avail = info["MemAvailable"]
    if avail < limit:
        return (
            f"memory guard: MemAvailable {avail / MIB:.0f} MiB < {limit / MIB:.0f} MiB "
            f"after {n} background instances"
        )
    swap_used = info.get("SwapTotal", 0) - info.get("SwapFree", 0)
    if swap_used - swap_base > swap_limit:
        return (
            f"memory guard: swap in use grew by more than {swap_limit / MIB:.0f} MiB after "
            f"{n} background instances (guard_swap_growth_mib)"
        )
    return ""


@dataclass(frozen=True)
class Stop:
    """Why a pile-up stopped growing: it reached its target, or what kept it from it."""

    reached: bool
    why: str


class PileUp:
    """One run of one runtime: the worker measured at each point as idle background
    instances pile up, then everything stopped."""

    def __init__(self, s: Session, cfg: ScalabilityExperiment, runtime: str, rep: int) -> None:
        self.s, self.cfg, self.runtime, self.rep = s, cfg, runtime, rep
        self.rt = s.runtimes[runtime]
        self.worker = None
        if cfg.worker != "boot":
            self.worker = Worker(s, runtime, Job.of(cfg, cfg.worker))
        self.params = {
            **s.params(runtime),
            "background_workload": cfg.background,
            "background_network": self.rt.effective_network(cfg.background_network),
            "step": cfg.instances_per_benchmark,
            "instances_target": cfg.target,
        }
        info = s.host.meminfo()
        self.limit = max(
            int(cfg.guard_available_pct / 100 * info["MemTotal"]),
            cfg.guard_available_mib * MIB,
        )
        self.swap_base = info.get("SwapTotal", 0) - info.get("SwapFree", 0)
        self.argv = background_argv(cfg.background)
        self.background: list[Instance] = []
        self.failures = 0  # the worker's failures in a row
        self.what = f"scalability: {runtime} run {rep + 1}"

    def record(
        self,
        metric: Metric,
        value: float | None,
        n: int,
        *,
        error: str = "",
        params: dict | None = None,
    ) -> None:
        """Record `metric` = `value` at `n` background instances."""
        self.s.record(
            metric.sample(
                value,
                experiment="scalability",
                runtime=self.runtime,
                workload="hello" if self.worker is None else self.cfg.worker,
                repetition=self.rep,
                background=n,
                params=self.params if params is None else params,
                error=error,
            )
        )

    def measure_worker(self, n: int, warmup: bool) -> None:
        if self.worker is None:
            boot.measure_once(
                self.s,
                Trial(self.runtime, "hello", self.rep, warmup),
                self.cfg.timeout_s,
                "scalability",
                self.params,
                background=n,
            )
            return
        self.worker.measure_levels(
            "scalability", params=self.params, repetition=self.rep, warmup=warmup, background=n
        )

    def point(self, n: int) -> None:
        """Host availability, then the worker's measurements, at n background instances."""
        host = {m.name: m for m in sampler.FIGURES}  # the host's figures, by their names
        for name, value in self.s.host.availability(self.cfg.settle_s).items():
            self.record(host[name], value, n)
        for _ in range(self.cfg.per_point):
            try:
                self.measure_worker(n, warmup=False)
                self.failures = 0
            except InstanceError:  # stored as a failed sample; three in a row end the run
                self.failures += 1
                if self.failures == 3:
                    raise
        self.s.say(f"{self.what}: measured at {n} background instances")

    def grow(self, count: int) -> Stop | None:
        """Start `count` more background instances; why growth stopped (None if it did not)."""
        s, cfg = self.s, self.cfg
        for _ in range(count):
            i = len(self.background)
            guard = cfg.guard_swap_growth_mib * MIB
            stop = growth_stop(s.host.meminfo(), self.limit, self.swap_base, i, guard)
            if stop:
                return Stop(False, stop)
            spec = s.instance_spec(self.runtime, self.argv, network=cfg.background_network)
            timed: dict = {**self.params}  # the launch's quiet wait goes in its sample
            try:  # an instance that never gets ready is stopped, not counted
                inst, t_ready = s.start_ready(
                    self.runtime, spec, cfg.timeout_s, ("scalability", timed)
                )
                self.background.append(inst)
            except InstanceError as exc:
                self.record(LAUNCH, None, i, error=str(exc), params=timed)
                return Stop(False, f"background instance {i + 1} failed: {exc}")
            value = (t_ready - inst.t_spawn_ns) / 1e6
            self.record(LAUNCH, value, i, params=timed)
        return None

    def pile(self) -> Stop:
        """Warm-ups, the point at 0, then a step of growth and a point until the target."""
        cfg, target = self.cfg, self.cfg.target
        if self.worker is not None:
            self.worker.start()
        # caches stay: boots right after a drop ran 8.5-9 ms against 6.8 warm (crun)
        self.params.update(self.s.settle(cfg.memory_settle_s, self.what, drop=False))
        for _ in range(cfg.warmups):
            with contextlib.suppress(InstanceError):  # stored, flagged; never summarised
                self.measure_worker(0, warmup=True)
        self.point(0)
        while len(self.background) < target:
            n = len(self.background)
            stop = self.grow(min(cfg.instances_per_benchmark, target - n))
            if len(self.background) > n:  # measure where growth got to, even if it stopped
                self.point(len(self.background))
            if stop is not None:
                return stop
        return Stop(True, f"reached the target of {target}")

    def stop_all(self) -> float:
        """Stop the worker and every background instance, past failures; seconds taken to
        stop the background."""
        errors = []
        if self.worker is not None:
            try:
                self.worker.stop()
            except Exception as exc:  # the background must still go
                errors.append(f"the worker: {exc}")
        t0 = time.monotonic()
        errors += self.rt.stop_each(self.background)
        teardown = time.monotonic() - t0
        for error in errors:
            self.s.event("warning", f"{self.what}: could not stop {error}")
        return teardown

    def run(self) -> None:
        try:
            stop = self.pile()
        except InstanceError as exc:
            stop = Stop(False, f"the worker failed: {exc}")
        finally:
            teardown = self.stop_all()
        n = len(self.background)
        self.record(REACHED, float(n), n)
        if n:
            self.record(TEARDOWN_PER_INSTANCE, teardown * 1e3 / n, n)
        done = n == self.cfg.target and stop.reached
        self.s.event(
            "info" if done else "warning",
            f"{self.what}: stopped at {n} background instances ({stop.why})",
        )


def run(s: Session, cfg: ScalabilityExperiment) -> None:
    # A pile-up stops at its own first failure; only a dead engine (EngineGone) skips
    # a runtime's remaining repetitions.
    failures = Failures(s, "scalability")
    for runtime in s.spec.runtimes:
        for rep in range(cfg.runs):  # a pile-up stopped half-way is redone whole on --resume
            if failures.skip(runtime):
                break
            if s.pending("scalability", False, runtime=runtime, repetition=rep):
                PileUp(s, cfg, runtime, rep).run()
                s.finished("scalability", False, runtime=runtime, repetition=rep)


def estimate(cfg: ScalabilityExperiment, cost: Costs) -> Estimate:
    """runs x (memory settle + the pile-up's launches + at each point the worker's
    measurements and `settle_s`)."""
    points = cfg.target // cfg.instances_per_benchmark + 1
    grow = cfg.target * cost.launch(cfg.background != "sleep")
    if cfg.worker == "boot":
        one = cost.timed_launch()
    else:
        one = cost.launch(True) + cost.worker(cfg.worker, cfg.params_for(cfg.worker))
    per_rep = (
        cfg.memory_settle_s
        + grow
        + points * (cfg.per_point * one + cfg.settle_s)
        + (cfg.warmups * one)
    )
    n = cfg.runs * (cfg.target + points * cfg.per_point)
    return Estimate(
        n, cfg.runs * per_rep, f"{cfg.runs} x {points} points up to {cfg.target} background"
    )


TYPE = ExperimentType(
    "scalability",
    ScalabilityExperiment,
    run,
    UNIT,
    order=40,
    check=check,
    estimate=estimate,
    metrics=METRICS,
)
