"""`iperf3`: network bandwidth between the host and the instance (iperf3 server inside,
client on the host, `-J` JSON). Tests: `tcp` (host -> instance), `tcp_reverse`
(instance -> host, `-R`) and `udp` at a stated rate (`udp_rate`, `-u -b`) with jitter
and loss. Each test is one client run against the same server instance.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from virtbench import workloads
from virtbench.figure import Metric
from virtbench.workloads.kind import (
    Measures,
    Needs,
    ParseError,
    Serves,
    Workload,
    declared,
    figure,
    first_line,
)

PORT = 15201
GBIT_S = declared(
    "iperf3",
    "*.gbit_s",
    "Gbit/s",
    "higher",
    "bits the receiver got per second over the test (iperf3 -J)",
    label="{} throughput",
)
RETRANSMITS = declared(
    "iperf3",
    "*.retransmits",
    "count",
    "lower",
    "TCP retransmits on the sender",
    1.0,
    label="{} retransmits",
)
UDP_JITTER_MS = declared(
    "iperf3",
    "udp.jitter_ms",
    "ms",
    "lower",
    "UDP packet delay variation (iperf3)",
    label="UDP jitter",
)
UDP_LOST_PERCENT = declared(
    "iperf3",
    "udp.lost_percent",
    "%",
    "lower",
    "UDP datagrams lost at the stated rate",
    label="UDP datagrams lost",
)
METRICS: tuple[Metric, ...] = (GBIT_S, RETRANSMITS, UDP_JITTER_MS, UDP_LOST_PERCENT)


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tests: list[Literal["tcp", "tcp_reverse", "udp"]] = Field(
        default=["tcp", "tcp_reverse", "udp"], min_length=1
    )
    duration_s: int = Field(default=10, ge=1, le=3600)
    udp_rate: str = Field(default="100M", pattern=r"^\d+[KMG]?$")
    streams: int = Field(default=1, ge=1, le=128)


def argv(instance: str) -> tuple[str, ...]:
    del instance
    return ("/usr/bin/iperf3", "-s", "-p", str(PORT))


def levels(params: Params) -> list[str]:
    return list(params.tests)


def label(params: Params, level: str) -> str:
    del params, level
    return ""  # the test is part of every metric's name


def client(address: str, params: Params, level: str, port: int = PORT) -> list[str]:
    argv = ["iperf3", "-c", address, "-p", str(port), "-t", str(params.duration_s), "-J"]
    argv += ["-P", str(params.streams)]
    if level == "tcp_reverse":
        argv.append("-R")
    elif level == "udp":
        argv += ["-u", "-b", params.udp_rate]
    return argv


def parse(output: str) -> list[workloads.Metric]:
    start = output.find("{")
    try:
        data = json.loads(output[start:]) if start >= 0 else {}
    except ValueError:
        data = {}
    if not data or data.get("error"):
        raise ParseError(f"iperf3: {data.get('error') or first_line(output)}")
    try:
        test = data["start"]["test_start"]
        end = data["end"]
        if test["protocol"] == "UDP":
            s = end["sum"]
            return [
                figure(GBIT_S.of("udp"), s["bits_per_second"] / 1e9),
                figure(UDP_JITTER_MS, s["jitter_ms"]),
                figure(UDP_LOST_PERCENT, s["lost_percent"]),
            ]
        name = "tcp_reverse" if test.get("reverse") else "tcp"
        received = end["sum_received"]["bits_per_second"] / 1e9
        retrans = end["sum_sent"].get("retransmits", 0)
    except (KeyError, TypeError) as exc:
        raise ParseError(f"iperf3: unexpected JSON ({exc})") from None
    return [
        figure(GBIT_S.of(name), received),
        figure(RETRANSMITS.of(name), float(retrans)),
    ]


def seconds(params: Params, level: Any) -> float:
    """About how long one measurement takes here (the plan's estimate): its duration_s."""
    del level
    return params.duration_s + 1.0


WORKLOAD = Workload(
    "iperf3",
    "serve",
    argv,
    "iperf3 TCP bandwidth both ways, UDP jitter and loss at a set rate",
    needs=Needs(host_binaries=("/usr/bin/iperf3",)),
    measures=Measures(Params, parse, GBIT_S.of("tcp"), levels, label, seconds),
    serves=Serves(PORT, "iperf3", client),
    metrics=METRICS,
    order=60,
    metrics_order=80,
)
