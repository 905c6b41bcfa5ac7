"""`postgres`: PostgreSQL (the host's Debian binaries: 15 on Debian 12, 17 on Debian 13) in
the instance, pgbench from the host with a client-count sweep.

postgres refuses to run as root, so the instance starts guest/vb-run, which creates the
data directory `/data/pg` (on the host's disk) owned by the host's `postgres` user, drops
to that uid (the rootfs's /etc/passwd carries it), runs `initdb` (untimed; it needs
/bin/sh, so dash goes into the artifact) and execs the server with trust authentication
for the host's client, JIT off, GMT. pgbench initialises its tables once per instance
(`scale`), then runs `-M prepared` for `duration_s` at each client count (threads fitted
to the host). The server's port is open before it accepts queries: pg_isready is polled.

Metrics per client count (`@<clients>` when several): `tps` (without the initial
connection time), `latency_avg` (ms), `failed` (transactions).
"""

from __future__ import annotations

import os
import pwd
import re

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

PORT = 15432


def installed(root: str = "/usr/lib/postgresql") -> str:
    """The major version of the host's PostgreSQL (the newest, where several are; 15,
    Debian 12's, where none is: its needs then name what to install)."""
    found = [int(v) for v in os.listdir(root) if v.isdigit()] if os.path.isdir(root) else []
    return str(max(found, default=15))


VERSION = installed()
BIN = f"/usr/lib/postgresql/{VERSION}/bin"
CLIENT = f"{BIN}/pgbench"
USER = "postgres"
HBA = "/etc/virtbench/pg_hba.conf"

TPS = swept(
    "postgres",
    "tps",
    "tx/s",
    "higher",
    "transactions / the test's duration, without the initial connection time (pgbench)",
    1e-6,
    label="transactions/s",
)
LATENCY_AVG = swept(
    "postgres",
    "latency_avg",
    "ms",
    "lower",
    "pgbench's latency average",
    0.001,
    label="mean latency",
)
FAILED = swept(
    "postgres",
    "failed",
    "transactions",
    "lower",
    "failed transactions (pgbench)",
    1.0,
    label="failed transactions",
)
METRICS: tuple[Metric, ...] = (TPS, LATENCY_AVG, FAILED)


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    clients: int | list[int] = Field(default=[1, 4, 16])
    duration_s: int = Field(default=20, ge=1, le=3600)
    scale: int = Field(default=10, ge=1, le=10_000)  # pgbench -i -s (100,000 rows each)
    threads: int | None = Field(default=None, ge=1, le=1024)  # None: fitted to the host
    mode: str = Field(default="prepared", pattern="^(simple|extended|prepared)$")


def argv(instance: str) -> tuple[str, ...]:
    del instance
    pw = pwd.getpwnam(USER)
    return (
        "/bin/vb-run",
        "--mkdir",
        "/data/pg",
        "--user",
        f"{pw.pw_uid}:{pw.pw_gid}",
        "--env",
        "TZ=GMT",
        "--",
        f"{BIN}/initdb",
        "-D",
        "/data/pg",
        "-U",
        "postgres",
        "--auth=trust",
        "--no-locale",
        "-E",
        "UTF8",
        "--no-sync",
        ";",
        f"{BIN}/postgres",
        "-D",
        "/data/pg",
        "-k",
        "/data/pg",
        "-p",
        str(PORT),
        "-c",
        "listen_addresses=*",
        "-c",
        "jit=off",
        "-c",
        "timezone=GMT",
        "-c",
        "log_timezone=GMT",
        "-c",
        f"hba_file={HBA}",
        "-c",
        "dynamic_shared_memory_type=mmap",
    )


def seconds(params: Params, level: int) -> float:
    """About how long one measurement takes here (the catalog's estimate); the first
    level's includes pgbench's initialisation (~2 s per scale unit)."""
    fill = 2.0 * params.scale if level == levels(params)[0] else 0.0
    return 1.0 + params.duration_s + fill


def levels(params: Params) -> list[int]:
    c = params.clients
    return list(c) if isinstance(c, list) else [c]


def _conn(address: str, port: int = PORT) -> list[str]:
    return ["-h", address, "-p", str(port), "-U", "postgres"]


def ready(address: str, params: Params) -> list[str]:
    del params
    return [f"{BIN}/pg_isready", *_conn(address)]


def prepare(address: str, params: Params) -> list[list[str]]:
    return [[CLIENT, "-i", "-q", "-s", str(params.scale), *_conn(address), "postgres"]]


def client(address: str, params: Params, level: int, port: int = PORT) -> list[str]:
    threads = params.threads or max(1, min(level, os.cpu_count() or 1))
    return [
        CLIENT,
        "-c",
        str(level),
        "-j",
        str(min(threads, level)),
        "-T",
        str(params.duration_s),
        "-M",
        params.mode,
        *_conn(address, port),
        "postgres",
    ]


def parse(output: str) -> list[workloads.Metric]:
    """pgbench's summary."""
    tps = re.search(r"^tps = ([\d.]+) \(without initial connection time\)", output, re.M)
    if tps is None:
        raise ParseError(f"pgbench: no result: {first_line(_errors(output) or output)}")
    out = [figure(TPS, float(tps.group(1)))]
    if lat := re.search(r"^latency average = ([\d.]+) ms", output, re.M):
        out.append(figure(LATENCY_AVG, float(lat.group(1))))
    if failed := re.search(r"^number of failed transactions: (\d+)", output, re.M):
        out.append(figure(FAILED, float(failed.group(1))))
    return out


def _errors(output: str) -> str:
    return "\n".join(x for x in output.splitlines() if "error" in x)


WORKLOAD = Workload(
    "postgres",
    "serve",
    argv,
    f"PostgreSQL {VERSION}, pgbench TPC-B-like from the host, client sweep",
    needs=Needs(
        static_programs=("vb-run",),  # creates the data directory, drops root, runs initdb
        host_binaries=(
            f"{BIN}/postgres",
            f"{BIN}/initdb",
            "/bin/sh",  # initdb runs postgres through popen()
            f"/usr/lib/postgresql/{VERSION}/lib/plpgsql.so",
            f"/usr/lib/postgresql/{VERSION}/lib/dict_snowball.so",
        ),
        host_dirs=(f"/usr/share/postgresql/{VERSION}",),
        users=(USER,),
        files={HBA.lstrip("/"): "local all all trust\nhost all all 0.0.0.0/0 trust\n"},
        data=True,
    ),
    measures=Measures(Params, parse, TPS, levels, seconds=seconds),
    serves=Serves(
        PORT, CLIENT, client, extra_clients=(f"{BIN}/pg_isready",), ready=ready, prepare=prepare
    ),
    metrics=METRICS,
    order=120,
    metrics_order=40,
)
