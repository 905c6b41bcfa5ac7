"""`memcached`: memcached (one worker thread) driven from the host by vb-mcload
(guest/vb-mcload.c), a closed-loop client that keeps one request outstanding per
connection and times each from its send to its reply's last byte (S4: memcached p99 over
a connection sweep).

Before each measurement the client sets every key once (untimed); then `connections`
connections issue gets (`get_percent` of requests) and sets of `value_bytes` for
`duration_s`. `connections` may be a list: one measurement per level, `@<n>` in the
metric names. Metrics: `ops_per_s` and latency `p50_us`, `p90_us`, `p99_us`, `p999_us`
(1 us histogram buckets), `misses` (gets of a key the server had dropped).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from virtbench import workloads
from virtbench.figure import Metric
from virtbench.workloads.kind import (
    Measures,
    Needs,
    ParseError,
    Serves,
    Workload,
    figure,
    first_line,
    swept,
)

PORT = 11311
# memcached raises its open-files limit to its connection limit, and a container's hard
# limit is often 1024: the connections a measurement may open stay below it
MAX_CONNECTIONS = 800
RESULT = re.compile(
    r"^mcload conns=(\d+) seconds=([\d.]+) ops=(\d+) ops_per_s=([\d.]+) gets=\d+ sets=\d+ "
    r"misses=(\d+) errors=\d+ p50_us=([\d.]+) p90_us=([\d.]+) p99_us=([\d.]+) "
    r"p999_us=([\d.]+) max_us=([\d.]+) over_100ms=(\d+)$",
    re.M,
)
OPS_PER_S = swept(
    "memcached",
    "ops_per_s",
    "ops/s",
    "higher",
    "gets and sets completed / the test's duration, one outstanding per connection (vb-mcload)",
    0.1,
    label="operations/s",
)
LATENCY_P = swept(
    "memcached",
    "p*_us",
    "us",
    "lower",
    "a percentile (50, 90, 99, 99.9) of the time from a request's send to its reply's "
    "last byte (1 us buckets)",
    1.0,
    label="request latency p{}",
)
MISSES = swept(
    "memcached",
    "misses",
    "gets",
    "lower",
    "gets of a key the server no longer held",
    1.0,
    label="cache misses",
)
METRICS: tuple[Metric, ...] = (OPS_PER_S, LATENCY_P, MISSES)


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    connections: int | list[int] = Field(default=[1, 4, 16, 64])
    duration_s: int = Field(default=10, ge=1, le=3600)
    keys: int = Field(default=10_000, ge=1, le=10_000_000)
    value_bytes: int = Field(default=32, ge=1, le=65536)
    get_percent: int = Field(default=90, ge=0, le=100)

    @field_validator("connections")
    @classmethod
    def _range(cls, v: int | list[int]) -> int | list[int]:
        for n in v if isinstance(v, list) else [v]:
            if not 1 <= n <= MAX_CONNECTIONS:
                raise ValueError(f"{n} is not in 1..{MAX_CONNECTIONS} (the server's limit)")
        if isinstance(v, list) and not v:
            raise ValueError("give at least one connection count")
        return v


def argv(instance: str) -> tuple[str, ...]:
    del instance
    return (
        "/usr/bin/memcached",
        "-u",
        "root",
        "-p",
        str(PORT),
        "-U",
        "0",
        "-t",
        "1",
        "-c",
        str(MAX_CONNECTIONS + 100),
        "-m",
        "64",
    )


def levels(params: Params) -> list[int]:
    c = params.connections
    return list(c) if isinstance(c, list) else [c]


def seconds(params: Params, level: int) -> float:
    """About how long one measurement takes (the catalog's estimate): the fill at ~20,000
    sets a second, then the duration."""
    del level
    return 1.0 + params.keys / 20_000 + params.duration_s


def client(address: str, params: Params, level: int, port: int = PORT) -> list[str]:
    return [
        "/bin/vb-mcload",
        address,
        str(port),
        str(level),
        str(params.duration_s),
        str(params.keys),
        str(params.value_bytes),
        str(params.get_percent),
    ]


def parse(output: str) -> list[workloads.Metric]:
    m = RESULT.search(output)
    if m is None:
        raise ParseError(f"vb-mcload: no result: {first_line(output)}")
    ops_per_s, misses = float(m.group(4)), float(m.group(5))
    out = [figure(OPS_PER_S, ops_per_s)]
    for pct, group in (("50", 6), ("90", 7), ("99", 8), ("999", 9)):
        out.append(figure(LATENCY_P.of(pct), float(m.group(group))))
    out.append(figure(MISSES, misses))
    return out


WORKLOAD = Workload(
    "memcached",
    "serve",
    argv,
    "memcached, closed-loop gets/sets from the host with latency percentiles",
    needs=Needs(host_binaries=("/usr/bin/memcached",)),
    measures=Measures(Params, parse, OPS_PER_S, levels, seconds=seconds),
    serves=Serves(PORT, "/bin/vb-mcload", client, image_serves="memcached", image_port=11211),
    metrics=METRICS,
    order=170,
    metrics_order=30,
)
