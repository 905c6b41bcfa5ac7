"""The measured workload ("worker") that throughput, scalability and isolation share.

A worker is one workload that yields figures, under one runtime:
  serve   a server in one instance, started once (`start`): wait until its TCP port
          accepts connections and its readiness check passes, run its preparation
          (untimed); then each `measure(level)` runs the host-side client once and parses
          what it printed. Clients run on the host, outside the instance's cgroup, over
          the host network or the run's bridge (never anything else).
  exit    a program that measures inside the instance: each `measure(level)` starts a
          fresh instance, waits for its exit and parses its console output.
Samples are built by `sample()`, so every experiment labels them the same way: the
metric name with its level suffix, the workload's parameters and the instance options.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from virtbench import workloads
from virtbench.errors import InstanceError, SpecError
from virtbench.experiments.session import Session
from virtbench.host.proc import CommandError
from virtbench.loadgen import Clients
from virtbench.measure.portready import PORT_FREE_WAIT_S, answers, port_open, wait_bindable
from virtbench.measure.procstat import ProcWatch
from virtbench.runtimes.base import Instance, Runtime
from virtbench.store import Direction, Sample
from virtbench.tables.base import Measuring


@dataclass(frozen=True)
class Job:
    """What a worker measures, and how long it may take: the workload `name` with its
    `params` (its table of the spec's `params`, validated), how long its server may take
    to open its port and pass its readiness check (`ready_timeout`), and the time limit
    of its client, or of its measuring instance (`client_timeout`), in seconds."""

    name: str
    params: Any
    ready_timeout: float
    client_timeout: float

    @classmethod
    def of(cls, cfg: Measuring, name: str) -> Job:
        """The workload `name` as the experiment `cfg` measures it."""
        return cls(name, cfg.params_for(name), cfg.ready_timeout_s, cfg.client_timeout_s)


def ended(rt: Runtime, inst: Instance, what: str) -> InstanceError | None:
    """The error to raise if the server instance has ended (how, and its last output)."""
    why = rt.observe.exit_reason(inst)
    if why is None:
        return None
    return InstanceError(f"the server {why} {what}: {inst.log_tail()}")


def wait_port(
    rt: Runtime, inst: Instance, address: str, port: int, timeout: float, *, protocol: str = "tcp"
) -> None:
    """Until `address:port` accepts a connection (UDP: answers a datagram; ICMP: `address`
    answers ping); raise if the server ends or is slow."""
    icmp = protocol == "icmp"
    what = f"{address} answered ping" if icmp else f"port {port} opened"
    missing = f"{address} does not answer ping" if icmp else f"port {port} not open"
    deadline = time.monotonic() + timeout
    while not answers(address, port, protocol):
        if err := ended(rt, inst, f"before {what}"):
            raise err
        if time.monotonic() > deadline:
            raise InstanceError(f"{missing} after {timeout:g} s: {inst.log_tail()}")
        time.sleep(0.05)


def check_reachable(s: Session, experiment: str, name: str, runtimes: list[str]) -> None:
    """Before any measurement: a serving workload's clients are installed and its
    server is reachable from the host under every runtime."""
    serves = workloads.get(name).serves
    if serves is None:
        return
    if why := s.clients.need(serves.clients, s.artifact.path):
        raise SpecError(f"{experiment}: {name} {why}")
    for runtime in runtimes:
        if s.network(runtime) == "none":
            raise SpecError(
                f"{experiment}: {runtime} has network none, so the host's "
                f"{serves.client_program} cannot "
                f'reach {name}: set [instance] network = "bridge" or "host" '
                f"(or in [runtime.{runtime}])"
            )


def prepare_server(rt: Runtime, inst: Instance, address: str, job: Job, clients: Clients) -> None:
    """Untimed, once per server instance after its port opened: wait until the workload's
    readiness check passes (a database still starting accepts connections and refuses
    queries), then run its client-side preparation (create and fill tables), both where
    its clients run."""
    wl, params, ready_timeout = workloads.get(job.name), job.params, job.ready_timeout
    artifact = inst.spec.rootfs
    serves = wl.serves
    assert serves is not None, f"{wl.name} serves nothing"
    if serves.ready is not None:
        argv = serves.ready(address, params)
        deadline = time.monotonic() + ready_timeout
        while (res := clients.run(argv, artifact, 30)).returncode != 0:
            if err := ended(rt, inst, f"before {wl.name} was ready"):
                raise err
            if time.monotonic() > deadline:
                raise InstanceError(f"{wl.name} not ready after {ready_timeout:g} s: {res.brief()}")
            time.sleep(0.2)
    for argv in serves.preparation(address, params):
        try:
            res = clients.run(argv, artifact, job.client_timeout)
        except CommandError as exc:  # timed out
            raise InstanceError(f"{wl.name} preparation: {exc}") from None
        if res.returncode != 0:
            raise InstanceError(f"{wl.name} preparation ({argv[0]}) failed: {res.brief()}")


class Worker:
    """One measuring workload under one runtime; `cpus` pins its instance."""

    def __init__(
        self,
        s: Session,
        runtime: str,
        job: Job,
        cpus: str | None = None,
        memory_mib: int | None = None,
    ) -> None:
        self.s = s
        self.memory_mib = memory_mib  # in place of the spec's (min_memory's probes)
        self.runtime = runtime
        self.job = job
        self.name = name = job.name
        self.wl = workloads.get(name)
        measures = self.wl.measures
        assert measures is not None, f"{name} yields no figures"
        self.measures = measures
        self.params = params = job.params
        self.ready_timeout = job.ready_timeout
        self.client_timeout = job.client_timeout
        self.rt = s.runtimes[runtime]
        # where its server listens: the workload's port, or an image's own (`serves.port`)
        serves = self.wl.serves
        self.port: int = self.rt.serves.port(name) or (serves.port if serves is not None else 0)
        self.inst: Instance | None = None
        self.address = ""
        # an image built elsewhere may answer some of the client's levels only (ping)
        self.image = self.rt.serves.service(name)
        every = measures.levels(params)
        self.answered = [v for v in every if self.image is None or self.image.answers(name, v)]
        self.skipped = [str(v) for v in every if v not in self.answered]
        self.levels: list[Any] = self.answered or every
        # The same placement in every experiment: the instance on the worker CPU(s),
        # its clients on the others (recorded with every sample).
        self.cpus = cpus if cpus is not None else s.worker_cpus(runtime)
        self.client_cpus = s.client_cpus(self.cpus)
        self.base_params = {**s.params(runtime), **params.model_dump(mode="json")}
        self.base_params.update(cpus=self.cpus, client_cpus=self.client_cpus)

    @property
    def serves(self) -> bool:
        return self.wl.serves is not None

    def _spec(self, argv: Any) -> Any:
        return self.s.instance_spec(
            self.runtime,
            argv,
            data=self.wl.needs.data,
            cpus=self.cpus,
            memory_mib=self.memory_mib,
        )

    def start(self) -> None:
        """Start the server (serving workloads; nothing for the others)."""
        serves = self.wl.serves
        if serves is None or self.inst is not None:
            return
        wl, port = self.wl, serves.port
        self._levels_answered()
        if self.s.network(self.runtime) == "host" and port_open(
            "127.0.0.1", port
        ):  # we would measure it instead
            raise InstanceError(
                f"{self.name} on {self.runtime}: port {port} on the host is already in use "
                "by another process: stop it"
            )
        tcp = serves.protocol == "tcp"
        if self.s.network(self.runtime) == "host" and tcp and not wait_bindable(port):
            raise InstanceError(
                f"{self.name} on {self.runtime}: port {port} on the host cannot be bound "
                f"after {PORT_FREE_WAIT_S:g} s (a socket holds it: `ss -tanp sport = "
                f":{port}` shows whose)"
            )
        self.inst = self.rt.start(self._spec(wl.argv), detach=True)
        protocol = self.image.protocol if self.image else serves.protocol
        at = (self.rt, self.inst, self.inst.address or "127.0.0.1", self.port, self.ready_timeout)
        wait_port(*at, protocol=protocol)
        clients = self.s.clients  # where the client runs: here, or a load generator
        self.address = clients.address(self.inst.address, self.s.network(self.runtime))
        self.base_params.update(clients.client_params(self.address))
        if why := clients.reach(self.address, self.port, protocol, self.ready_timeout):
            raise InstanceError(why)
        prepare_server(self.rt, self.inst, self.address, self.job, clients)

    def _levels_answered(self) -> None:
        """Say which levels an image built elsewhere does not answer; raise if none."""
        skipped = self.skipped
        if not skipped:
            return
        where = f"{self.name} on {self.runtime}"
        if not self.answered:
            raise InstanceError(
                f"{where}: its image answers none of {', '.join(skipped)}: give "
                f"{self.name} a level it answers"
            )
        self.s.event("info", f"{where}: its image does not answer {', '.join(skipped)}: not run")

    def measure(self, level: Any) -> list[workloads.Metric]:
        """One measurement at `level`: the client once, or a fresh measuring instance."""
        wl, serves, parse = self.wl, self.wl.serves, self.measures.parse
        if serves is None:
            inside = wl.inside
            assert inside is not None, f"{wl.name} neither serves nor measures inside"
            once = self.rt.run_to_exit(
                self._spec(lambda _name: inside.command(self.params, level)), self.client_timeout
            )
            try:
                if once.exit_code != 0:
                    raise InstanceError(f"{wl.name} exited {once.exit_code}: {once.log_tail()}")
                try:
                    return parse(once.log_path.read_text(errors="replace"))
                except workloads.ParseError as exc:
                    raise InstanceError(f"{wl.name}: {exc}") from None
            finally:
                self.rt.stop(once)
        inst = self.inst
        if inst is None:
            raise InstanceError(f"{self.name}: the server is not running")
        where = f"at level {level}" if len(self.levels) > 1 else ""
        if err := ended(self.rt, inst, f"before the measurement {where}".rstrip()):
            raise err
        try:
            # its own port, or an image's
            argv = serves.client(self.address, self.params, level, self.port)
            # a client known to stall past its duration has a limit of its own
            limit = serves.time_limit(self.params, level, self.client_timeout)
            # here: pinned away from the instance
            res = self.s.clients.run(argv, self.s.artifact.path, limit, self.client_cpus)
            metrics = parse(res.stdout + res.stderr)
        except (CommandError, workloads.ParseError) as exc:  # timed out, or nothing to parse
            # A server that died under its client is the reason, not the client's output.
            deadline = time.monotonic() + 2  # a killed server takes a moment to be reaped
            while (err := ended(self.rt, inst, f"during the measurement {where}".rstrip())) is None:
                if time.monotonic() > deadline:
                    raise InstanceError(f"{self.name} client at level {level}: {exc}") from None
                time.sleep(0.1)
            raise err from None
        # Figures a client got from a server that died half-way are not a measurement.
        if err := ended(self.rt, inst, f"during the measurement {where}".rstrip()):
            raise err
        return metrics

    def measure_levels(
        self,
        experiment: str,
        check: Callable[[], None] | None = None,
        quiet: bool = True,
        **labels: Any,
    ) -> None:
        """Every level measured once, each figure stored as soon as it is parsed; `check`
        runs after each measurement, before its figures count. A failure is stored under
        the level it hit, with its reason (counted, never averaged), and raised. `quiet`:
        each measurement waits for a quiet host first (not next to attackers), and its
        samples record that wait."""
        given = labels.pop("params", {})
        for level in self.levels:
            waited = self.s.quiet.wait().params() if quiet else {}
            labels["params"] = {**given, **waited}
            watch = self.watch(experiment, level, labels)
            try:
                sampler = self.s.sampler  # there is a watch only with a sampler
                with sampler.watching(watch) if watch and sampler else contextlib.nullcontext():
                    metrics = self.measure(level)
                if check is not None:
                    check()
            except InstanceError as exc:
                self.s.record(self.failed(experiment, level, str(exc), **labels))
                raise
            labels["params"] = {**labels["params"], **self._client_busy(level)}
            measured = {**labels, "params": {**labels["params"], **self._by_client()}}
            for m in metrics:
                fields = (m.name, m.value, m.unit, m.direction)
                self.s.record(self.sample(experiment, *fields, level=level, **measured))
            for name, (value, unit) in watch.end().items() if watch else ():
                sample = self.sample(experiment, name, value, unit, "lower", level=level, **labels)
                self.s.record(sample)

    def _by_client(self) -> dict[str, Any]:
        """What the client's own figures record when it ran on another host: that host's
        role (the host under test's figures say "sut": Session.record)."""
        return {"role": "loadgen"} if self.serves and self.s.clients.where != "local" else {}

    def _client_busy(self, level: Any) -> dict[str, Any]:
        """What the last measurement's samples record of its client's host (a load
        generator's CPU use); a client that had no CPU left is said to have measured
        itself."""
        trial = self.s.clients.trial() if self.serves else {}
        if trial.get("client_saturated"):
            whose = "the load generator's" if "loadgen_cpus" in trial else "its client's"
            self.s.event(
                "warning",
                f"{self.name} on {self.runtime} at {level}: {whose} CPUs were "
                f"{trial['client_cpu_pct']:g}% busy: that figure measured the client",
            )
        return trial

    def watch(self, experiment: str, level: Any, labels: dict[str, Any]) -> ProcWatch | None:
        """The resource watch of a server's measurement (its processes and its runtime's
        daemons, sampled at the host sampler's period); None without a sampler, or for a
        program measuring inside a fresh instance of its own."""
        if self.s.sampler is None or not self.serves or self.inst is None:
            return None
        inst, rt = self.inst, self.rt
        # one series per measurement: which experiment (and which of the spec's), repetition,
        # condition and point
        which = f"{experiment}{self.s.experiment_index or ''}"
        keys = ("repetition", "attacker", "placement", "background")
        where = ",".join([which, *(str(labels.get(k, "")) for k in keys)])
        prefix = f"proc/{self.runtime}/{self.name}/{where}/{level}"
        if labels.get("warmup"):
            prefix += "/pilot" if labels.get("params", {}).get("pilot") else "/warmup"
        return ProcWatch(
            prefix,
            lambda: rt.observe.pids(inst),
            rt.daemons.pids(),
            stalls=lambda: rt.observe.stall_totals(inst),
        )

    def stop(self) -> None:
        if self.inst is not None:
            inst, self.inst = self.inst, None
            self.rt.stop(inst)

    def metric_name(self, metric: str, level: Any) -> str:
        return metric + self.measures.suffix(self.params, level)

    def sample(
        self,
        experiment: str,
        metric: str,
        value: float | None,
        unit: str,
        direction: Direction,
        *,
        level: Any = None,
        error: str = "",
        **labels: Any,
    ) -> Sample:
        """A sample of this worker (at `level`, if any): `labels` are the Sample's own
        fields (repetition, warmup, background, attacker, placement); extra params go in
        `params=`."""
        return Sample(
            metric=self.metric_name(metric, level),
            value=value,
            unit=unit,
            direction=direction,
            error=error,
            **self.labels(experiment, level, **labels),
        )

    def labels(self, experiment: str, level: Any = None, **labels: Any) -> dict[str, Any]:
        """The fields of a sample of this worker (at `level`, if any) but its figure's:
        `labels` as `sample` takes them."""
        params = {**self.base_params, **labels.pop("params", {})}
        if level is not None:
            params["level"] = level
        return dict(
            experiment=experiment, runtime=self.runtime, workload=self.name, params=params, **labels
        )

    def failed(self, experiment: str, level: Any, error: str, **labels: Any) -> Sample:
        """The sample of a failed measurement, under the workload's primary metric."""
        primary = self.measures.primary
        # a workload's metrics each declare their direction (kind.py's Workload checks)
        assert primary.direction is not None, f"{primary.name} declares no direction"
        fields = (primary.name, None, primary.unit, primary.direction)
        return self.sample(experiment, *fields, level=level, error=error, **labels)

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
