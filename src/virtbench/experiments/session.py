"""What an experiment procedure gets: the run's runtimes, artifact, probe and store.

The session names instances (`vb-<run-id>-<n>`), records samples the moment they
exist, and turns a spec's instance options into an InstanceSpec for a runtime.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from rich.markup import escape

from virtbench import experiments, naming
from virtbench.artifacts import Artifact
from virtbench.errors import SpecError
from virtbench.experiments import adaptive
from virtbench.experiments.order import Predecessors, orders, seed_for
from virtbench.loadgen import Clients
from virtbench.measure.machine import Host
from virtbench.measure.probe import ProbeListener
from virtbench.measure.quiet import Quiet
from virtbench.measure.sampler import HostSampler
from virtbench.measure.topology import Topology, parse_cpulist
from virtbench.runtimes.base import Instance, InstanceSpec, Runtime
from virtbench.store import Sample, Store


class RunSpec(Protocol):
    """What a session reads of its run's spec (virtbench.spec.Spec is one)."""

    runtimes: list[str]
    sysctl: dict[str, str]
    order_seed: int | None

    def model_copy(self, *, update: dict[str, Any]) -> Any: ...


@dataclass
class Session:
    run_id: str
    spec: RunSpec
    store: Store
    artifact: Artifact
    probe: ProbeListener
    runtimes: dict[str, Runtime]
    # Does a figure measure one thing again each repetition (its CV counts toward
    # `target_cv`)? The metric registry's `is_repeated`.
    repeated: Callable[[str, str], bool]
    say: Callable[[str], None] = print
    # Each runtime's instance options ([instance] with its overrides), as the resolved
    # spec gives them (spec/resolved.py)
    instances: dict[str, Any] = dataclasses.field(default_factory=dict)
    # Units of measurement already finished: (experiment, key) from the store when the
    # run is resumed (`run --resume`), and every unit this session finishes.
    done: set[tuple[str, str]] = dataclasses.field(default_factory=set)
    resumed: bool = False
    # On resume: units the interruption cut short, whose earlier samples stay until the
    # unit has been measured again whole (then they go: `finished`), and when it began.
    superseded: set[tuple[str, str]] = dataclasses.field(default_factory=set)
    resumed_at: float = 0.0
    # Every timed launch waits for a quiet host (measure/quiet.py); the runner gives it
    # the runtimes' "previous instance gone" check and calibrates it before the run.
    quiet: Quiet = dataclasses.field(default_factory=Quiet)
    sampler: HostSampler | None = None  # held (no tick) while a launch is timed
    # Every host-level reading an experiment takes (memory, CPU idle, topology) goes
    # through this one object (measure/machine.py), which a test may replace.
    host: Host = dataclasses.field(default_factory=Host)
    # Where serving workloads' clients run: this host, or a load generator of its own
    # (loadgen/remote.py, `run --loadgen HOST`).
    clients: Clients = dataclasses.field(default_factory=Clients)
    # The running experiment's place in the spec: a spec may hold several experiments of
    # one type (a study's), whose units and samples must stay apart (params
    # `experiment_index` when it is not the first).
    experiment_index: int = 0
    _counter: int = 0
    _pred: Predecessors = dataclasses.field(default_factory=Predecessors)
    _topology: Topology | None = None

    def instance(self, runtime: str) -> Any:
        """`runtime`'s instance options (InstanceOptions)."""
        return self.instances[runtime]

    @property
    def order_seed(self) -> int:
        """Seeds the runtimes' order (the spec's `order_seed`, else from the run id)."""
        return seed_for(self.run_id, self.spec.order_seed)

    @contextlib.contextmanager
    def only(self, runtimes: list[str], index: int = 0) -> Iterator[None]:
        """While the spec's `index`-th experiment runs: the spec as it sees it, naming
        only the runtimes that run it (a study's part that applies to some of its
        systems); its units and samples carry `index`."""
        whole = self.spec
        self.spec = whole.model_copy(update={"runtimes": list(runtimes)})
        self.experiment_index = index
        try:
            yield
        finally:
            self.spec, self.experiment_index = whole, 0

    @contextlib.contextmanager
    def timed(
        self, experiment: str, runtime: str, params: dict[str, Any], wait: bool = True
    ) -> Iterator[None]:
        """Around one timed launch: wait for a quiet host first and record in `params`
        how long that took, whether it was reached, the load seen and the runtime measured
        just before (`predecessor`), prime the host (measure/quiet.py `Primer`); hold the
        host sampler (and the garbage collector) while the launch runs. `wait` false: a
        launch of a pile-up, which follows the previous one at once, neither waited for nor
        primed (as S1's runner does; pile-ups are one runtime at a time, never compared
        across an order)."""
        if wait:
            params.update(self.quiet.wait().params())
        params["predecessor"] = self._pred.take(experiment, runtime)
        was = gc.isenabled()
        gc.disable()  # no collection of this process's garbage inside a timed launch
        try:
            with self.sampler.hold() if self.sampler is not None else contextlib.nullcontext():
                if wait and self.quiet.enabled:  # a pile-up's launches are warm already
                    self.quiet.prime()
                yield
        finally:
            if was:
                gc.enable()

    def instance_spec(
        self,
        runtime: str,
        argv: Callable[[str], tuple[str, ...]],
        *,
        data: bool = False,
        cpus: str | None = None,
        network: str | None = None,
        pids_limit: int | None = None,
        memory_mib: int | None = None,
    ) -> InstanceSpec:
        """A fresh instance name, its command (`argv(name)`), and the spec's options;
        `data`: give it a data directory on disk; `cpus`, `network`, `pids_limit`:
        override the spec's (isolation pins and bounds its attackers, scalability's
        background needs no network)."""
        self._counter += 1
        opts = self.instance(runtime)
        name = naming.instance(self.run_id, self._counter)
        return InstanceSpec(
            name=name,
            argv=argv(name),
            rootfs=self.artifact.path,
            network=network or opts.network,
            memory_mib=memory_mib or opts.memory_mib,
            cpus=cpus if cpus is not None else opts.cpus,
            pids_limit=pids_limit or opts.pids_limit,
            data=data,
            sysctls=tuple(self.spec.sysctl.items()),
        )

    def start_ready(
        self,
        runtime: str,
        spec: InstanceSpec,
        timeout: float,
        timed: tuple[str, dict[str, Any]] | None = None,
    ) -> tuple[Instance, int]:
        """Start a detached instance and wait for its ready datagram: (instance, host
        monotonic ns of the datagram). If it never comes, or the instance ends first, the
        instance is stopped and InstanceError raised with how it ended and its console
        output. `timed` (experiment, params): a timed launch of a pile-up
        (`Session.timed` without the quiet wait), recorded in those params."""
        rt = self.runtimes[runtime]
        ctx = self.timed(timed[0], runtime, timed[1], wait=False) if timed else None
        with ctx or contextlib.nullcontext():
            inst = rt.start(spec, detach=True)
            try:
                t_ready = rt.wait_ready(inst, timeout)
            except BaseException:
                rt.stop(inst)
                raise
        return inst, t_ready

    def worker_cpus(self, runtime: str) -> str:
        """Where a measured worker's instance runs, the same in every experiment: the
        spec's `cpus` for this runtime, else the last online CPU (as isolation pins it)."""
        opts = self.instance(runtime)
        if opts.cpus is not None:
            return opts.cpus
        return str(self.topology().default_worker_cpu())

    def client_cpus(self, instance_cpus: str) -> str:
        """Where host-side clients run: every online CPU the instance does not use (all of
        them when it uses every one: then they share, and the placement says so)."""
        online = self.topology().cpus
        taken = set(parse_cpulist(instance_cpus))
        rest = [c for c in online if c not in taken] or list(online)
        return ",".join(map(str, rest))

    def topology(self) -> Topology:
        """The host's CPUs (read once per session, through the host seam)."""
        if self._topology is None:
            self._topology = self.host.topology()
        return self._topology

    def network(self, runtime: str) -> str:
        """The network `runtime`'s instances really get."""
        return self.runtimes[runtime].effective_network(self.instance(runtime).network)

    def params(self, runtime: str) -> dict[str, Any]:
        """Instance options as really applied, recorded with every sample, and how the
        runtime runs them beyond those (a VM's firmware)."""
        opts, rt = self.instance(runtime), self.runtimes[runtime]
        return {
            "network": self.network(runtime),
            "memory_mib": opts.memory_mib,
            "cpus": opts.cpus,
            "pids_limit": opts.pids_limit if rt.applies_pids_limit() else None,
            "artifact": self.artifact.digest[:16],
            **rt.conditions(),
        }

    def record(self, sample: Sample) -> None:
        rt = self.runtimes.get(sample.runtime)
        emulated = (rt is not None and rt.emulated) or self.host.emulated()
        if emulated and not sample.emulated:  # functional only
            sample = dataclasses.replace(sample, emulated=True)
        if self.experiment_index and sample.experiment != "image":
            params = {**sample.params, "experiment_index": self.experiment_index}
            sample = dataclasses.replace(sample, params=params)
        if self.clients.where != "local" and "role" not in sample.params:  # two hosts
            sample = dataclasses.replace(sample, params={**sample.params, "role": "sut"})
        self.store.add_sample(self.run_id, sample)

    def event(self, level: str, message: str) -> None:
        self.store.add_event(self.run_id, level, message, said=True)
        colour = "yellow" if level == "warning" else "cyan"
        self.say(f"[{colour}]{level}[/]: {escape(message)}")

    def settle(self, spec_window_s: float, what: str, drop: bool = True) -> dict[str, Any]:
        """Before a pile-up: wait until the host's memory in use held still for the
        window (measure/machine.py `settle_memory`), so what an earlier teardown left to
        the kernel's deferred work (cgroups, namespaces, RCU frees, seconds long) lands
        in neither its memory figures nor its first timings. The params to store with
        its samples; a host that never settled is said in an event. `drop`: drop caches
        first (for memory figures; timings after a drop start cold)."""
        waited, settled = self.host.settle_memory(settle_window(spec_window_s), drop=drop)
        if not settled:
            self.event(
                "warning",
                f"{what}: the host's memory in use was still changing "
                f"after {waited:.0f} s; its figures may carry that drift",
            )
        return {"memory_settle_wait_s": round(waited, 2), "memory_settled": settled}

    @staticmethod
    def unit_key(experiment: str, labels: dict[str, Any], index: int = 0) -> str:
        """The key of one unit of `experiment` (the fields its type's `unit` names), and
        of the spec's `index`-th experiment where that is not the first."""
        values = [labels[f] for f in experiments.get(experiment).unit]
        return json.dumps([{"experiment_index": index}, *values] if index else values)

    @staticmethod
    def sample_unit(smp: Sample) -> str:
        """The key of the unit a stored sample belongs to."""
        index = int(smp.params.get("experiment_index", 0) or 0)
        return Session.unit_key(smp.experiment, dataclasses.asdict(smp), index)

    def pending(self, experiment: str, warmup: bool, **labels: Any) -> bool:
        """Must this unit be measured? Warm-ups always are; a unit finished before the run
        was interrupted is not measured again on `--resume`."""
        key = self.unit_key(experiment, labels, self.experiment_index)
        return warmup or (experiment, key) not in self.done

    def finished(self, experiment: str, warmup: bool, **labels: Any) -> None:
        """Mark a unit finished (its samples, failed ones too, are all in the store). A
        unit the interruption of a resumed run cut short replaces its earlier samples
        only when measured again without a failure; otherwise both stay, the unit stays
        unfinished (a later resume tries it again) and the run ends failed."""
        if warmup:
            return
        key = self.unit_key(experiment, labels, self.experiment_index)
        if set(labels) != set(experiments.get(experiment).unit):
            raise ValueError(f"{experiment}: a unit is {experiments.get(experiment).unit}")
        if (experiment, key) in self.superseded and not self._replace(experiment, key):
            return
        self.store.add_unit(self.run_id, experiment, key)
        self.done.add((experiment, key))

    def _replace(self, experiment: str, key: str) -> bool:
        """A cut-short unit measured again: drop its samples from before the resume if
        the new ones hold no failure; whether they were replaced."""

        def ours(smp: Sample) -> bool:
            return smp.experiment == experiment and not smp.warmup and self.sample_unit(smp) == key

        fresh = [x for x in self.store.samples(self.run_id) if ours(x) and x.t >= self.resumed_at]
        if any(x.error for x in fresh):
            self.event(
                "warning",
                f"resume: {experiment} {key} failed again; its samples "
                "from before the interruption are kept",
            )
            return False
        self.store.discard_samples(self.run_id, lambda x: not (ours(x) and x.t < self.resumed_at))
        self.superseded.discard((experiment, key))
        return True

    def schedule(
        self,
        warmups: int,
        runs: int,
        experiment: str = "",
        targets: list[adaptive.Target] | None = None,
        max_runs: int | None = None,
    ) -> Iterator[tuple[int, bool, list[str]]]:
        """(repetition, warm-up?, runtimes in order) for every repetition, warm-ups first;
        the orders are the rows of a seeded Williams design (experiments/order.py), so
        each runtime follows each other equally often and slow drift favours none.
        With `targets` (experiments/adaptive.py), repetitions go on past `runs` until every
        target is met, or `max_runs` are done; either way an event says which, and why."""
        rows = orders(list(self.spec.runtimes), self.order_seed)
        since = 0.0 if self.resumed else time.time()  # resumed: the samples before count
        # resumed: no stop before the repetitions begun before the interruption are done
        floor = max(runs, self.begun(experiment) if self.resumed and targets else 0)
        i = 0
        while True:
            done = i - warmups
            if done >= floor and (
                not targets
                or max_runs is None
                or adaptive.stop(
                    self, experiment, targets, adaptive.Progress(done, max_runs, since)
                )
            ):
                return
            warmup = i < warmups
            yield (i if warmup else done), warmup, list(rows[i % len(rows)])
            i += 1

    def repetitions(
        self, experiment: str, cfg: Any, targets: list[adaptive.Target] | None = None
    ) -> Iterator[tuple[int, bool, list[str]]]:
        """`schedule` as an experiment's config says (warmups, runs, target_cv, max_runs);
        `targets`: the experiment's own, besides the CV one."""
        mine = list(targets or [])
        if cfg.target_cv is not None:
            mine.insert(0, adaptive.cv_target(self, experiment, cfg.target_cv))
        return self.schedule(cfg.warmups, cfg.runs, experiment, mine, cfg.run_limit())

    def begun(self, experiment: str) -> int:
        """1 + the highest repetition this experiment (at this index) stored a sample of."""
        index = self.experiment_index or 0
        reps = [
            x.repetition
            for x in self.store.samples(self.run_id)
            if x.experiment == experiment
            and not x.warmup
            and x.params.get("experiment_index", 0) == index
        ]
        return max(reps, default=-1) + 1


def total_runs(cfg: Any) -> str:
    """How many repetitions an experiment does: "10", or "10-100" when adaptive."""
    limit = cfg.run_limit()
    return str(cfg.runs) if limit is None or limit == cfg.runs else f"{cfg.runs}-{limit}"


SETTLE_ENV = "VIRTBENCH_MEMORY_SETTLE_S"


def settle_window(spec_window_s: float) -> float:
    """The spec's memory_settle_s, unless VIRTBENCH_MEMORY_SETTLE_S overrides it for
    every run (seconds, >= 0)."""
    raw = os.environ.get(SETTLE_ENV)
    if raw is None:
        return spec_window_s
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 600:
        raise SpecError(f"{SETTLE_ENV}={raw!r}: give seconds between 0 and 600")
    return value
