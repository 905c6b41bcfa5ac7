"""`redis`: redis-server with persistence off, driven by redis-benchmark from the host.

Defaults as S1: 30 clients, pipeline 16, GET and SET; `requests` per test is
configurable. Metrics per test from `--csv`: requests/s and latency avg/p50/p95/p99.
"""

from __future__ import annotations

import csv
import io

from pydantic import BaseModel, ConfigDict, Field

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

PORT = 16379
CONF = "/etc/virtbench/redis.conf"
FILES = {
    CONF.lstrip("/"): f"""\
port {PORT}
bind 0.0.0.0
protected-mode no
daemonize no
save ""
appendonly no
dir /tmp
logfile ""
""",
}


REQUESTS_PER_S = swept(
    "redis",
    "*.requests_per_s",
    "req/s",
    "higher",
    "a test's (GET, SET) requests / its duration, pipelined (redis-benchmark)",
    0.01,
    label="{} requests/s",
)
LATENCY = swept(
    "redis",
    "*.latency_*",
    "ms",
    "lower",
    "a test's request latency, avg / p50 / p95 / p99 (redis-benchmark)",
    0.001,
    label="{} latency {}",
)
METRICS: tuple[Metric, ...] = (REQUESTS_PER_S, LATENCY)


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    clients: int | list[int] = Field(default=30)
    pipeline: int = Field(default=16, ge=1, le=10_000)
    requests: int = Field(default=1_000_000, ge=1000)
    tests: list[str] = Field(default=["get", "set"], min_length=1)
    value_bytes: int = Field(default=3, ge=1, le=1 << 20)


def argv(instance: str) -> tuple[str, ...]:
    del instance
    return ("/usr/bin/redis-server", CONF)


def levels(params: Params) -> list[int]:
    c = params.clients
    return list(c) if isinstance(c, list) else [c]


def seconds(params: Params, level: int) -> float:
    """About how long one measurement takes here (the catalog's estimate): every test's
    requests at ~100,000 a second."""
    del level
    return 1.0 + params.requests * len(params.tests) / 100_000


def client(address: str, params: Params, level: int, port: int = PORT) -> list[str]:
    return [
        "redis-benchmark",
        "-h",
        address,
        "-p",
        str(port),
        "-c",
        str(level),
        "-P",
        str(params.pipeline),
        "-n",
        str(params.requests),
        "-d",
        str(params.value_bytes),
        "-t",
        ",".join(params.tests),
        "--csv",
    ]


def parse(output: str) -> list[workloads.Metric]:
    """redis-benchmark --csv (redis 7: test, rps, avg/min/p50/p95/p99/max latency ms)."""
    lines = [x for x in output.splitlines() if x.startswith('"')]
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    if not rows or "rps" not in rows[0]:
        raise ParseError(f"redis-benchmark: no result: {first_line(output)}")
    out = []
    for row in rows:
        test = row["test"].lower()
        try:
            out.append(figure(REQUESTS_PER_S.of(test), float(row["rps"])))
            for key in ("avg", "p50", "p95", "p99"):
                ms = float(row[f"{key}_latency_ms"])
                out.append(figure(LATENCY.of(test, key), ms))
        except (KeyError, ValueError) as exc:
            raise ParseError(f"redis-benchmark: unreadable row {row}: {exc}") from None
    return out


WORKLOAD = Workload(
    "redis",
    "serve",
    argv,
    "redis-server (no persistence), redis-benchmark GET/SET from the host",
    needs=Needs(host_binaries=("/usr/bin/redis-server",), files=FILES),
    measures=Measures(Params, parse, REQUESTS_PER_S.of("get"), levels, seconds=seconds),
    serves=Serves(PORT, "redis-benchmark", client, image_serves="redis", image_port=6379),
    metrics=METRICS,
    order=50,
    metrics_order=20,
)
