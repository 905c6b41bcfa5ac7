"""`nginx`: nginx serving a small static file, driven by wrk from the host.

Defaults as S1 (Felter et al.): 30 connections for 20 s, wrk threads fitted to the host
(at most one per CPU, never more than connections). `connections` may be a list: a
concurrency sweep as S3 (1..1000); each level is one measurement. nginx runs as the
container's main process (`daemon off`), one worker, access log off, from the same
Debian binary in every runtime; its prefix is read-only and temporary files go to /tmp.
"""

from __future__ import annotations

import os
import re
from typing import Any

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

PORT = 18080
PREFIX = "/srv/nginx"
FIXED_PORT = 18081  # the http-fixed workload's fixed-size reply (S2)
FIXED_BODY = "x" * 1300
FILES = {
    f"{PREFIX}/nginx.conf".lstrip("/"): f"""\
master_process on;
worker_processes 1;
pid /tmp/vb-nginx.pid;
daemon off;
error_log stderr warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    keepalive_requests 1000000;
    client_body_temp_path /tmp/nginx-body;
    proxy_temp_path /tmp/nginx-proxy;
    fastcgi_temp_path /tmp/nginx-fastcgi;
    uwsgi_temp_path /tmp/nginx-uwsgi;
    scgi_temp_path /tmp/nginx-scgi;
    default_type text/html;
    server {{
        listen {PORT};
        root www;
        location / {{ }}
    }}
    server {{
        listen {FIXED_PORT};
        location / {{ default_type text/plain; return 200 "{FIXED_BODY}"; }}
    }}
}}
""",
    f"{PREFIX}/www/index.html".lstrip("/"): "<html><body>hello from virtbench</body></html>\n" * 10,
}


REQUESTS_PER_S = swept(
    "nginx",
    "requests_per_s",
    "req/s",
    "higher",
    "requests completed / the test's duration (wrk Requests/sec)",
    0.01,
    label="requests/s",
)
TRANSFER = swept(
    "nginx",
    "transfer",
    "MiB/s",
    "higher",
    "response bytes, headers included, per second (wrk Transfer/sec)",
    label="transfer rate",
)
LATENCY_AVG = swept(
    "nginx",
    "latency_avg",
    "ms",
    "lower",
    "mean time from a request sent to its response read (wrk)",
    label="mean latency",
)
LATENCY_P = swept(
    "nginx",
    "latency_p*",
    "ms",
    "lower",
    "a percentile (50, 75, 90, 99) of that time (wrk --latency)",
    label="latency p{}",
)
ERRORS = swept(
    "nginx",
    "errors",
    "count",
    "lower",
    "socket errors (connect, read, write, timeout) and non-2xx/3xx responses",
    1.0,
    label="errors and bad responses",
)
METRICS: tuple[Metric, ...] = (REQUESTS_PER_S, TRANSFER, LATENCY_AVG, LATENCY_P, ERRORS)


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    connections: int | list[int] = Field(default=30)
    duration_s: int = Field(default=20, ge=1, le=3600)
    threads: int | None = Field(default=None, ge=1, le=1024)  # None: fitted to the host
    path: str = "/index.html"


def argv(instance: str) -> tuple[str, ...]:
    del instance  # no blanks in argv: lxc.init.cmd cannot quote
    return (
        "/usr/sbin/nginx",
        "-e",
        "stderr",
        "-p",
        f"{PREFIX}/",
        "-c",
        f"{PREFIX}/nginx.conf",
    )


def levels(params: Params) -> list[int]:
    c = params.connections
    return list(c) if isinstance(c, list) else [c]


def threads_for(params: Params, connections: int) -> int:
    return min(params.threads or os.cpu_count() or 1, connections)


def client(address: str, params: Params, level: int, port: int = PORT) -> list[str]:
    return [
        "wrk",
        "--latency",
        "-t",
        str(threads_for(params, level)),
        "-c",
        str(level),
        "-d",
        f"{params.duration_s}s",
        f"http://{address}:{port}{params.path}",
    ]


_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}
_BYTES = {"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}


def _ms(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", text)
    if not m:
        raise ParseError(f"wrk: unreadable latency {text!r}")
    return float(m.group(1)) * _UNITS[m.group(2)]


def parse(output: str) -> list[workloads.Metric]:
    """wrk's text report (with --latency)."""
    rps = re.search(r"^Requests/sec:\s+([\d.]+)", output, re.M)
    if rps is None:
        raise ParseError(f"wrk: no result: {first_line(output)}")
    out = [figure(REQUESTS_PER_S, float(rps.group(1)))]
    tr = re.search(r"^Transfer/sec:\s+([\d.]+)([KMGT]?B)", output, re.M)
    if tr:
        mib = float(tr.group(1)) * _BYTES[tr.group(2)] / (1 << 20)
        out.append(figure(TRANSFER, mib))
    avg = re.search(r"^\s+Latency\s+(\S+)\s", output, re.M)
    if avg:
        out.append(figure(LATENCY_AVG, _ms(avg.group(1))))
    for pct, value in re.findall(r"^\s+(50|75|90|99)%\s+(\S+)", output, re.M):
        out.append(figure(LATENCY_P.of(pct), _ms(value)))
    errors = 0
    sock = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output
    )
    if sock:
        errors += sum(int(x) for x in sock.groups())
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    total = re.search(r"^\s*(\d+) requests in", output, re.M)
    if non2xx:
        bad = int(non2xx.group(1))
        if total and bad * 100 >= int(total.group(1)):  # the rate of error pages
            raise ParseError(f"wrk: {bad} of {total.group(1)} responses were not 2xx/3xx")
        errors += bad
    out.append(figure(ERRORS, float(errors)))
    return out


def seconds(params: Params, level: Any) -> float:
    """About how long one measurement takes here (the plan's estimate): its duration_s."""
    del level
    return params.duration_s + 1.0


WORKLOAD = Workload(
    "nginx",
    "serve",
    argv,
    "nginx static file, wrk from the host (requests/s, latency percentiles)",
    needs=Needs(host_binaries=("/usr/sbin/nginx",), files=FILES),
    measures=Measures(Params, parse, REQUESTS_PER_S, levels, seconds=seconds),
    serves=Serves(PORT, "wrk", client, image_serves="http", image_port=80),
    metrics=METRICS,
    order=40,
    metrics_order=10,
)
