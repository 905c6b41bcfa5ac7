"""What a workload declares about itself, once, in its own module.

A module of this package whose `WORKLOAD` is a `Workload` is a workload: `workloads.get`
finds it, the artifact packs what its `needs` name, the experiments start its `argv`,
drive its server (`serves`) or run its measuring program (`inside`) and parse what it
printed (`measures`), and the metric registry holds its `metrics`. Nothing else lists
workloads.

A workload's figures are declared once, each a module-level constant of its module, all
of them in order in its `METRICS`: its parser gives a figure's constant and its value
(`figure(REQUESTS_PER_S, value)`, a family's member `figure(LATENCY_P.of(99), value)`),
and the unit and direction come from the declaration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import BaseModel

from virtbench import figure as model
from virtbench.errors import VirtbenchError
from virtbench.store.records import Direction

Ends = Literal["exit", "ready", "serve"]
Argv = Callable[[str], tuple[str, ...]]
LEVEL_NAME = "level (connections / clients / threads)"  # a swept level, unless declared


class ParseError(VirtbenchError):
    """A client's output holds no result (it failed, or its format is not understood)."""


@dataclass(frozen=True)
class Metric:
    """One figure a client reported."""

    name: str  # e.g. "requests_per_s", "get.latency_p99"
    value: float
    unit: str
    direction: Direction  # "higher" or "lower" is better


def first_line(text: str, limit: int = 160) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:limit]
    return "(no output)"


def declared(
    workload: str,
    name: str,
    unit: str,
    direction: Direction,
    includes: str,
    resolution: float | None = None,
    plot: model.PlotKind | None = None,
    label: str = "",
) -> model.Metric:
    """A workload's figure (or family of figures, `name` a pattern) for its `METRICS`;
    `label` is what a person reads for it (a pattern's with one `{}` per wildcard)."""
    return model.Metric(
        name,
        unit,
        direction,
        includes,
        resolution=resolution,
        plot=plot,
        workload=workload,
        label=label,
    )


def swept(
    workload: str,
    name: str,
    unit: str,
    direction: Direction,
    includes: str,
    resolution: float | None = None,
    label: str = "",
) -> model.Metric:
    """A figure of a workload that sweeps a numeric level (connections, clients, threads):
    drawn against it."""
    return declared(workload, name, unit, direction, includes, resolution, "concurrency", label)


def figure(declared: model.Metric, value: float) -> Metric:
    """The parsed figure `declared` = `value`, in the unit and direction it is declared
    in: one of its workload's constants, or a family's member (`LATENCY_P.of(99)`)."""
    if declared.is_pattern or declared.direction is None:
        raise ParseError(f"{declared.name}: a parsed figure is one declared with its unit")
    return Metric(declared.name, value, declared.unit, declared.direction)


def one_level(params: Any) -> list[Any]:
    """One measurement, at no level."""
    del params
    return [None]


@dataclass(frozen=True)
class Needs:
    """What the artifact must hold for the workload, beyond the minimal rootfs.

    static_programs  virtbench's own static programs (guest/, musl) it runs in the
                     instance, in /bin of every rootfs (artifacts/rootfs.py builds them)
    host_binaries    host programs copied with their libraries into the `rootfs-servers`
                     artifact, so every runtime runs the same bytes
    guest_programs   dynamically linked guest/ programs (to /bin, with their libraries)
    host_dirs        host directories copied whole (a server's share/ and lib/) ...
    skip             ... but for what lies under a directory of theirs with one of these
                     names (a language's own tests)
    users            host users (e.g. postgres) the rootfs's /etc/passwd must know
    files            {path in the rootfs: text or bytes}: config and data files, or a
                     function returning them, called when the artifact is built
    data             the instance needs a data directory on disk at /data (fio's
                     O_DIRECT, a database's files)
    """

    static_programs: tuple[str, ...] = ()
    host_binaries: tuple[str, ...] = ()
    guest_programs: tuple[str, ...] = ()
    host_dirs: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
    files: Mapping[str, str | bytes] | Callable[[], Mapping[str, str | bytes]] = field(
        default_factory=dict
    )
    data: bool = False

    @property
    def servers(self) -> bool:
        """Whether it needs the `rootfs-servers` artifact (host or dynamic programs)."""
        return bool(self.host_binaries or self.guest_programs)

    def file_texts(self) -> Mapping[str, str | bytes]:
        """Its `files`, the function called where it is one."""
        return self.files() if callable(self.files) else self.files


@dataclass(frozen=True)
class Measures:
    """A workload that yields figures: throughput's, and the worker of scalability,
    isolation and min_memory.

    params      pydantic model of its parameters (spec `[experiment.params.<name>]`)
    parse       `parse(output)` -> [Metric]: a pure parser of the output (ParseError if it
                holds no result); each figure built with `figure(CONSTANT, value)`
    primary     the figure a failed measurement is stored under: one of its metrics, or
                a member of one of its families (`REQUESTS_PER_S.of("get")`)
    levels      `levels(params)`: the values of the swept parameter (connections, threads,
                tests), one measurement each; default one measurement at no level
    label       `label(params, level)`: the metric suffix of a level; None: "@<level>"
                when several levels are measured, else none
    seconds     `seconds(params, level)`: about how long one measurement takes here (the
                plan's and `virtbench catalog`'s estimate); None: 10 s
                (experiments/estimate.py)
    level_name  what the swept level is, for plots
    """

    params: type[BaseModel]
    parse: Callable[[str], list[Metric]]
    primary: model.Metric
    levels: Callable[[Any], list[Any]] = one_level
    label: Callable[[Any, Any], str] | None = None
    seconds: Callable[[Any, Any], float] | None = None
    level_name: str = LEVEL_NAME

    def suffix(self, params: Any, level: Any) -> str:
        """What a figure's name gets at `level` (`label`, or its default)."""
        if self.label is not None:
            return self.label(params, level)
        return f"@{level}" if len(self.levels(params)) > 1 else ""


@dataclass(frozen=True)
class Serves:
    """A server in the instance that a host-side client drives (`ends = "serve"`).

    port              the port the server listens on
    client_program    the host program that drives it (checked before the run); a path
                      under /bin/vb- is one of the artifact's static programs, run from
                      the artifact
    client            `client(address, params, level, port)`: the client's argv for one
                      measurement; `port` is where the server listens (its own `port`, or
                      an image's: runtimes/vm/guest.py)
    extra_clients     other host programs some levels use (checked too)
    protocol          how readiness is probed: "tcp", the port accepting a connection, or
                      "udp", a datagram answered
    ready             `ready(address, params)`: a host command polled until it exits 0 (a
                      database that accepts connections before it accepts queries)
    prepare           `prepare(address, params)`: host commands run once per server
                      instance, untimed, before the measurements (create and fill tables)
    client_timeout_s  `client_timeout_s(params, level)`: the most one client run may take
                      (a client known to stall for good), below the experiment's own
    image_serves      what an image built elsewhere that serves it says in its options
                      (`serves = "http"`: runtimes/vm/guest.py), "" for none
    image_port        the port such an image listens on unless its `port` says
    image_protocol    how such an image's readiness is probed when not `protocol`:
                      "icmp", an echo request answered (an image that answers ping only)
    image_levels      `image_levels(level)`: whether such an image answers the client at
                      `level` (None: at every level); the others are not run on it
    """

    port: int
    client_program: str
    client: Callable[[str, Any, Any, int], list[str]]
    extra_clients: tuple[str, ...] = ()
    protocol: Literal["tcp", "udp"] = "tcp"
    ready: Callable[[str, Any], list[str]] | None = None
    prepare: Callable[[str, Any], list[list[str]]] | None = None
    client_timeout_s: Callable[[Any, Any], float] | None = None
    image_serves: str = ""
    image_port: int | None = None
    image_protocol: Literal["tcp", "udp", "icmp"] | None = None
    image_levels: Callable[[Any], bool] | None = None

    @property
    def clients(self) -> tuple[str, ...]:
        """Every host program it is driven with."""
        return (self.client_program, *self.extra_clients)

    def preparation(self, address: str, params: Any) -> list[list[str]]:
        """The commands of `prepare`, none without it."""
        return self.prepare(address, params) if self.prepare is not None else []

    def time_limit(self, params: Any, level: Any, limit: float) -> float:
        """The most one client run at `level` may take, `limit` at most."""
        if self.client_timeout_s is None:
            return limit
        return min(limit, self.client_timeout_s(params, level))


@dataclass(frozen=True)
class Inside:
    """A program that measures inside the instance and prints (`ends = "exit"`): one fresh
    instance per level.

    command  `command(params, level)`: its argv inside the instance
    """

    command: Callable[[Any, Any], tuple[str, ...]]


@dataclass(frozen=True)
class Workload:
    """A workload: what runs inside an instance, and how it is measured.

    name           the name used in specs and stored with its samples
    ends           "exit" (the instance's exit is the measured event), "ready" (the probe's
                   datagram) or "serve" (a server a host-side client drives)
    argv           `argv(instance)`: the command inside the instance, paths inside the
                   artifact; `{probe}` stands for the ready-probe address the runtime fills
                   in; None for a program measuring inside (its `inside.command` is it)
    description    one line: what it runs and measures
    needs          what the artifact must hold for it
    measures       how its figures are had (None: it yields none, as hello and sleep)
    serves         the server a host-side client drives (ends = "serve")
    inside         the program measuring inside (a measuring workload with ends = "exit")
    aliases        other names specs may give it (S1 calls sqlite "sqlite-bench")
    metrics        its figures, declared once (its module's `METRICS`)
    order          where it stands among the workloads (`names()`, `measuring()`, listings)
    metrics_order  where its figures stand in the metric registry (a lookup without a
                   workload takes the first workload's); None: as `order`
    """

    name: str
    ends: Ends
    argv: Argv | None
    description: str
    needs: Needs = Needs()
    measures: Measures | None = None
    serves: Serves | None = None
    inside: Inside | None = None
    aliases: tuple[str, ...] = ()
    metrics: tuple[model.Metric, ...] = ()
    order: int = 1000
    metrics_order: int | None = None

    def __post_init__(self) -> None:
        problem = self._inconsistency()
        if problem:
            raise ValueError(f"workload {self.name}: {problem}")

    def _inconsistency(self) -> str:
        if (self.ends == "serve") != (self.serves is not None):
            return 'a server (serves) is what ends = "serve" means'
        if self.inside is not None and self.ends != "exit":
            return 'a program measuring inside (inside) ends = "exit"'
        if (self.measures is not None) != (self.serves is not None or self.inside is not None):
            return "a measuring workload (measures) serves or measures inside, and only it"
        if self.argv is None and self.inside is None:
            return "an instance runs argv, or the command of inside"
        if any(m.workload != self.name for m in self.metrics):
            return "its metrics are declared with workload=<its name>"
        if not all(m.unit and m.direction for m in self.metrics):
            return "each of its metrics declares its unit and direction"
        if self.measures is not None and not self._declares(self.measures.primary):
            return f"its primary figure {self.measures.primary.name} is not one of its metrics"
        return ""

    def _declares(self, figure: model.Metric) -> bool:
        """Whether `figure` is one of its metrics, or a member of one of its families
        (`of`), as declared."""
        found = None if figure.is_pattern else model.first_match(self.metrics, figure.name)
        return found is not None and replace(found, name=figure.name) == figure

    def declaration(self, name: str) -> model.Metric:
        """The declaration of its figure `name` (an exact name, else the first pattern)."""
        found = model.first_match(self.metrics, name)
        if found is None:
            raise KeyError(f"{self.name} declares no figure {name}")
        return found
