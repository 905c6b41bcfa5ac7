"""`iperf3`: network bandwidth between the host and the instance (iperf3 server inside,
client on the host, `-J` JSON). Tests: `tcp` (host -> instance), `tcp_reverse`
(instance -> host, `-R`) and `udp` at a stated rate (`udp_rate`, `-u -b`) with jitter
and loss. Each test is one client run against the same server instance.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from virtbench.workloads import Metric, ParseError, first_line

NAME = "iperf3"
ENDS = "serve"
PRIMARY = "tcp.gbit_s"
PRIMARY_UNIT, PRIMARY_DIRECTION = "Gbit/s", "higher"
DESCRIPTION = "iperf3 TCP bandwidth both ways, UDP jitter and loss at a set rate"
PORT = 15201
CLIENT = "iperf3"
HOST_BINARIES = ["/usr/bin/iperf3"]


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


def client(address: str, params: Params, level: str) -> list[str]:
    argv = ["iperf3", "-c", address, "-p", str(PORT), "-t", str(params.duration_s), "-J"]
    argv += ["-P", str(params.streams)]
    if level == "tcp_reverse":
        argv.append("-R")
    elif level == "udp":
        argv += ["-u", "-b", params.udp_rate]
    return argv


def parse(output: str) -> list[Metric]:
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
                Metric("udp.gbit_s", s["bits_per_second"] / 1e9, "Gbit/s", "higher"),
                Metric("udp.jitter_ms", s["jitter_ms"], "ms", "lower"),
                Metric("udp.lost_percent", s["lost_percent"], "%", "lower"),
            ]
        name = "tcp_reverse" if test.get("reverse") else "tcp"
        received = end["sum_received"]["bits_per_second"] / 1e9
        retrans = end["sum_sent"].get("retransmits", 0)
    except (KeyError, TypeError) as exc:
        raise ParseError(f"iperf3: unexpected JSON ({exc})") from None
    return [
        Metric(f"{name}.gbit_s", received, "Gbit/s", "higher"),
        Metric(f"{name}.retransmits", float(retrans), "count", "lower"),
    ]
