"""Workloads: what runs inside an instance. One module each, with a fixed contract:

NAME            the name used in specs
ENDS            "exit" (the instance's exit is the measured event), "ready" (the probe's
                datagram), or "serve" (a server a host-side client drives: throughput)
argv(instance)  the command inside the instance, paths inside the artifact;
                `{probe}` stands for the ready-probe address the runtime fills in
                (boot/density workloads and servers; measuring programs give `command`)

Measuring workloads (the throughput experiment's) also give:
Params          pydantic model of their parameters (spec `[experiment.params.NAME]`)
parse(output)   -> [Metric]: a pure parser of the output (ParseError if it failed)
PRIMARY, PRIMARY_UNIT, PRIMARY_DIRECTION   the metric a failed measurement is stored under
HOST_BINARIES   optional: host programs copied into the artifact with their libraries
GUEST_PROGRAMS  optional: dynamically linked guest/ programs (to /bin, with libraries)
HOST_DIRS       optional: host directories copied whole (a server's share/ and lib/)
USERS           optional: host users (e.g. postgres) the rootfs's /etc/passwd must know
FILES           optional: {path in rootfs: text} config and data files for the artifact
                (or a function returning them, called when the artifact is built)
DATA            optional: True when the instance needs a data directory on disk at /data
                (fio's O_DIRECT, a database's files)
and either, for a server a host client drives (ENDS == "serve"):
PORT            the TCP port the server listens on
CLIENT          the host program that drives it (checked before the run); a path under
                /bin/vb- is one of the artifact's static programs, run from the artifact
EXTRA_CLIENTS   optional: other host programs some levels use (checked too)
client(address, params, level[, port])  the client's argv for one measurement; `port`
                is given where the server listens elsewhere than PORT (an image's own
                `port`: the workloads an image may serve take it, runtimes/vm_guest.py)
PROTOCOL        optional: "udp" when readiness is a datagram answered (default: the TCP
                port accepting a connection)
levels(params)  the values of the swept parameter (e.g. connections), one measurement each
client_timeout_s(params, level)  optional: the most one client run may take (a client
                known to stall for good), below the experiment's client_timeout_s
ready(address, params)    optional: a host command polled until it exits 0 (a database
                that accepts connections before it accepts queries)
prepare(address, params)  optional: host commands run once per server instance, untimed,
                before the measurements (create and fill tables)
or, for a program that measures inside the instance and prints (ENDS == "exit"):
command(params, level)  its argv inside the instance (one fresh instance per level)
levels(params)  optional: the swept parameter's values (e.g. threads); default one run
label(params, level)  optional: the metric suffix of a level (default "@<level>" when
                several levels are measured, else none)
and, for either:
LEVEL           optional: what the swept level is, for plots (default: connections /
                clients / threads)
seconds(params, level)  optional: about how long one measurement takes here (`virtbench
                catalog`'s estimate; default the parameters' duration_s/time_s/runtime_s)
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from virtbench.errors import VirtbenchError

BUILTIN = {
    "hello": "virtbench.workloads.hello",
    "sleep": "virtbench.workloads.sleep",
    "beat": "virtbench.workloads.beat",
    "nginx": "virtbench.workloads.nginx",
    "redis": "virtbench.workloads.redis",
    "iperf3": "virtbench.workloads.iperf3",
    "sqlite": "virtbench.workloads.sqlite",
    "stream": "virtbench.workloads.stream",
    "sysbench": "virtbench.workloads.sysbench",
    "syscall": "virtbench.workloads.syscall",
    "fio": "virtbench.workloads.fio",
    "postgres": "virtbench.workloads.postgres",
    "mariadb": "virtbench.workloads.mariadb",
    "latency": "virtbench.workloads.latency",
    "udp-echo": "virtbench.workloads.udp_echo",
    "http-fixed": "virtbench.workloads.http_fixed",
    "memcached": "virtbench.workloads.memcached",
}

# Other names users know a workload by (S1 and the issue tracker call vb-sqlite "sqlite-bench").
ALIASES = {"sqlite-bench": "sqlite"}


class ParseError(VirtbenchError):
    """A client's output holds no result (it failed, or its format is not understood)."""


@dataclass(frozen=True)
class Metric:
    """One figure a client reported."""

    name: str  # e.g. "requests_per_s", "get.latency_p99"
    value: float
    unit: str
    direction: str  # "higher" or "lower" is better


def names() -> list[str]:
    return list(BUILTIN)


def get(name: str) -> ModuleType:
    return importlib.import_module(BUILTIN[ALIASES.get(name, name)])


def measuring() -> list[str]:
    """Workloads that yield figures (the throughput experiment's): servers a host-side
    client drives, and programs that measure inside the instance and print the result."""
    return [n for n in BUILTIN if hasattr(get(n), "parse")]


def first_line(text: str, limit: int = 160) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:limit]
    return "(no output)"
