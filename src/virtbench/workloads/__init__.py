"""Workloads: what runs inside an instance. One module each, with a fixed contract:

NAME            the name used in specs
ENDS            "exit" (the instance's exit is the measured event), "ready" (the probe's
                datagram), or "serve" (a server a host-side client drives: throughput)
argv(instance)  the command inside the instance, paths inside the artifact;
                `{probe}` stands for the ready-probe address the runtime fills in

Serving workloads (ENDS == "serve") also give:
HOST_BINARIES   host programs copied into the artifact with their libraries
FILES           {path in rootfs: text} config and data files for the artifact
PORT            the TCP port the server listens on
PRIMARY         the metric a failed measurement is stored under
CLIENT          the host program that drives it (checked before the run)
Params          pydantic model of the client parameters (spec `[experiment.params.NAME]`)
client(address, params, level)  the client's argv for one measurement
parse(output)   -> [Metric]: a pure parser of the client's output (ParseError if it failed)
levels(params)  the values of the swept parameter (e.g. connections), one measurement each
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from virtbench.errors import VirtbenchError

BUILTIN = {
    "hello": "virtbench.workloads.hello",
    "sleep": "virtbench.workloads.sleep",
    "nginx": "virtbench.workloads.nginx",
    "redis": "virtbench.workloads.redis",
}


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
    return importlib.import_module(BUILTIN[name])


def serving() -> list[str]:
    """Workloads a host-side client drives (the throughput experiment's)."""
    return [n for n in BUILTIN if get(n).ENDS == "serve"]


def first_line(text: str, limit: int = 160) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:limit]
    return "(no output)"
