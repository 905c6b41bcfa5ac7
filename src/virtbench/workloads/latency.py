"""`latency`: request/response round trips between the host and an instance.

guest/vb-rr serves TCP and UDP on one port inside the instance; the same static program
runs on the host as the client (`vb-rr ping`): `count` round trips per message size on one
TCP connection or as UDP datagrams (a reply missing after 1 s counts as lost), each timed
with the monotonic clock, after count/10 untimed warm-up trips. `icmp` pings the
instance's address with the host's ping (S3's network round trip). An image built
elsewhere that answers ping and nothing else (`serves = "ping"`: a Solo5 or MirageOS
unikernel's network stack) runs the `icmp` test only, and is ready when it answers one.

Metrics per test and size: `<tcp|udp>.<size>B.rtt_p50` / `_p90` / `_p99` / `_p999` /
`_avg` / `_min` / `_max` (us) and `.lost`; `icmp.rtt_avg` / `_min` / `_max` / `_mdev` (us)
and `icmp.loss_pct`.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

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

PORT = 15300
RTT_P = declared(
    "latency",
    "*.*B.rtt_p*",
    "us",
    "lower",
    "a percentile of round trips, message sent -> reply received, monotonic clock (vb-rr)",
    0.001,
    "latency",
    label="{} {}-byte round trip p{}",
)
RTT = declared(
    "latency",
    "*.*B.rtt_*",
    "us",
    "lower",
    "the mean, least or largest round trip (vb-rr)",
    0.001,
    label="{} {}-byte round trip {}",
)
LOST = declared(
    "latency",
    "*.*B.lost",
    "messages",
    "lower",
    "replies missing after 1 s",
    1.0,
    label="{} {}-byte replies lost",
)
ICMP_RTT = declared(
    "latency",
    "icmp.rtt_*",
    "us",
    "lower",
    "ping's round trip min / avg / max / mdev",
    1.0,
    label="ICMP round trip {}",
)
ICMP_LOSS_PCT = declared(
    "latency",
    "icmp.loss_pct",
    "%",
    "lower",
    "ping's packet loss",
    label="ICMP packet loss",
)
METRICS: tuple[Metric, ...] = (RTT_P, RTT, LOST, ICMP_RTT, ICMP_LOSS_PCT)


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tests: list[Literal["tcp", "udp", "icmp"]] = Field(default=["tcp", "udp", "icmp"], min_length=1)
    sizes: list[Annotated[int, Field(ge=8, le=65507)]] = Field(default=[64, 1024], min_length=1)
    count: int = Field(default=20000, ge=10, le=10_000_000)
    ping_count: int = Field(default=50, ge=1, le=100_000)
    ping_interval_s: float = Field(default=0.2, ge=0.002, le=10)


def argv(instance: str) -> tuple[str, ...]:
    del instance
    return ("/bin/vb-rr", "serve", str(PORT))


def levels(params: Params) -> list[str]:
    return [f"{t}:{size}" for t in params.tests for size in ([0] if t == "icmp" else params.sizes)]


def label(params: Params, level: str) -> str:
    del params, level  # test and size are in every metric's name
    return ""


def seconds(params: Params, level: str) -> float:
    """About how long one measurement takes (the catalog's estimate): ~30 us a round trip,
    or the ping interval."""
    if level.startswith("icmp"):
        return 1.0 + params.ping_count * params.ping_interval_s
    return 1.0 + params.count * 30e-6


def client(address: str, params: Params, level: str, port: int = PORT) -> list[str]:
    test, size = level.split(":")
    if test == "icmp":
        return [
            "ping",
            "-q",
            "-n",
            "-c",
            str(params.ping_count),
            "-i",
            f"{params.ping_interval_s:g}",
            "-W",
            "2",
            address,
        ]
    return ["/bin/vb-rr", "ping", test, address, str(port), str(params.count), size]


def icmp_only(level: str) -> bool:
    """The levels an image that answers only ping is measured at."""
    return level.startswith("icmp")


def _rtt(proto: str, size: str, key: str) -> Metric:
    """The round trip figure `key` (p50, p999, avg, min, max) of a test and size."""
    return RTT_P.of(proto, size, key[1:]) if key.startswith("p") else RTT.of(proto, size, key)


def parse(output: str) -> list[workloads.Metric]:
    """One `vb-rr ping` line, or ping -q's summary (iputils)."""
    m = re.search(r"^rr proto=(\w+) size=(\d+) count=(\d+) lost=(\d+) (.*)$", output, re.M)
    if m:
        proto, size, lost = m.group(1), m.group(2), float(m.group(4))
        figures = dict(kv.split("=") for kv in m.group(5).split())
        out = [
            figure(_rtt(proto, size, k[:-3]), float(v))
            for k, v in figures.items()
            if k.endswith("_us")
        ]
        return [*out, figure(LOST.of(proto, size), lost)]
    loss = re.search(r"(\d+) packets transmitted, (\d+) received.*?([\d.]+)% packet loss", output)
    rtt = re.search(r"^rtt min/avg/max/mdev = ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms", output, re.M)
    if loss and rtt:
        out = [
            figure(ICMP_RTT.of(k), float(v) * 1000.0)
            for k, v in zip(("min", "avg", "max", "mdev"), rtt.groups(), strict=True)
        ]
        return [*out, figure(ICMP_LOSS_PCT, float(loss.group(3)))]
    raise ParseError(f"latency: no result: {first_line(output)}")


WORKLOAD = Workload(
    "latency",
    "serve",
    argv,
    "TCP/UDP request-response round trips (vb-rr) and ICMP ping, percentiles",
    needs=Needs(static_programs=("vb-rr",)),
    measures=Measures(Params, parse, RTT_P.of("tcp", 64, 50), levels, label, seconds),
    # the client is the artifact's vb-rr, run on the host
    serves=Serves(
        PORT,
        "/bin/vb-rr",
        client,
        extra_clients=("ping",),
        image_serves="ping",
        image_port=0,
        image_protocol="icmp",
        image_levels=icmp_only,
    ),
    metrics=METRICS,
    order=140,
    metrics_order=90,
)
