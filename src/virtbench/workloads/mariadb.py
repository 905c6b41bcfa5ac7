"""`mariadb`: MariaDB 10.11 (the host's Debian mariadbd) in the instance, sysbench OLTP
from the host, as S5 did against MySQL: read-only, write-only and read-write, with a
thread-count sweep.

The instance starts guest/vb-run, which bootstraps a fresh data directory `/data/db` on
the host's disk (`mariadbd --bootstrap` fed the system-table SQL the Debian package ships,
plus an `sbtest` database and user reachable from the host; no shell needed) and execs
the server (binary log off, no name resolution, InnoDB's native AIO off in every runtime:
gVisor's io_uring makes it abort). Its port opens only once it is ready.
sysbench creates and fills `tables` x `table_size` rows once per instance (untimed), then
runs each test for `duration_s` at each thread count, in a fresh server per repetition.

Metrics per test (`@t<threads>` when several): `<test>.tps`, `<test>.qps`,
`<test>.latency_avg` / `_p95` (ms), `<test>.errors` (ignored errors).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from virtbench import workloads
from virtbench.errors import VirtbenchError
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

PORT = 13306
SHARE = "/usr/share/mysql"
INIT_SQL = "/etc/virtbench/mariadb-init.sql"
# what mariadb-install-db feeds `mariadbd --bootstrap` (help tables, GIS procedures and
# the sys schema left out), then the benchmark's database and user
SYSTEM_SQL = (
    "mysql_system_tables.sql",
    "mysql_performance_tables.sql",
    "mysql_system_tables_data.sql",
)
# InnoDB's native AIO is off everywhere: under gVisor (runsc 2022) io_uring_wait_cqe fails
# and mariadbd aborts; one configuration for every runtime keeps the comparison fair.
SERVER_OPTS = (
    "--no-defaults",
    "--user=root",
    "--datadir",
    "/data/db",
    "--skip-log-bin",
    f"--lc-messages-dir={SHARE}",
    f"--character-sets-dir={SHARE}/charsets",
    "--innodb-use-native-aio=0",
)


TPS = swept(
    "mariadb",
    "*.tps",
    "tx/s",
    "higher",
    "an OLTP test's transactions per second (sysbench)",
    0.01,
    label="{} transactions/s",
)
QPS = swept(
    "mariadb",
    "*.qps",
    "queries/s",
    "higher",
    "an OLTP test's queries per second (sysbench)",
    0.01,
    label="{} queries/s",
)
LATENCY = swept(
    "mariadb",
    "*.latency_*",
    "ms",
    "lower",
    "an OLTP transaction's latency, avg / 95th percentile (sysbench)",
    0.01,
    label="{} latency {}",
)
ERRORS = swept(
    "mariadb",
    "*.errors",
    "errors",
    "lower",
    "errors sysbench ignored and retried (deadlocks)",
    1.0,
    label="{} errors retried",
)
METRICS: tuple[Metric, ...] = (TPS, QPS, LATENCY, ERRORS)


def files() -> dict[str, str]:
    """The SQL `mariadbd --bootstrap` is fed, read from the host's package when the
    artifact is built."""
    parts = ["create database if not exists mysql;", "use mysql;", "SET @auth_root_socket=NULL;"]
    for name in SYSTEM_SQL:
        path = Path(SHARE) / name
        if not path.is_file():
            raise VirtbenchError(f"{path} not found on the host (install mariadb-server-core)")
        parts.append(path.read_text())
    parts.append("CREATE DATABASE sbtest;")
    parts.append("INSERT INTO global_priv VALUES ('%','sbtest',@all_privileges);")
    return {INIT_SQL.lstrip("/"): "\n".join(parts) + "\n"}


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tests: list[Literal["read_only", "write_only", "read_write"]] = Field(
        default=["read_only", "write_only", "read_write"], min_length=1
    )
    threads: int | list[int] = Field(default=[10, 40, 70])  # S5: concurrency 10..70
    duration_s: int = Field(default=20, ge=1, le=3600)
    tables: int = Field(default=8, ge=1, le=1000)
    table_size: int = Field(default=1_000_000, ge=1)


def argv(instance: str) -> tuple[str, ...]:
    del instance
    return (
        "/bin/vb-run",
        "--mkdir",
        "/data/db",
        "--stdin",
        INIT_SQL,
        "--",
        "/usr/sbin/mariadbd",
        *SERVER_OPTS,
        "--bootstrap",
        "--log-warnings=0",
        "--max_allowed_packet=8M",
        "--net_buffer_length=16K",
        ";",
        "/usr/sbin/mariadbd",
        *SERVER_OPTS,
        f"--port={PORT}",
        "--bind-address=0.0.0.0",
        "--socket=/data/mysqld.sock",
        "--skip-name-resolve",
    )


def _threads(params: Params) -> list[int]:
    t = params.threads
    return list(t) if isinstance(t, list) else [t]


def seconds(params: Params, level: str) -> float:
    """About how long one measurement takes here (the catalog's estimate); the first
    level's includes filling the tables (~50,000 rows a second)."""
    fill = params.tables * params.table_size / 50_000 if level == levels(params)[0] else 0.0
    return 2.0 + params.duration_s + fill


def levels(params: Params) -> list[str]:
    return [f"{test}:{n}" for test in params.tests for n in _threads(params)]


def label(params: Params, level: str) -> str:
    return f"@t{level.split(':')[1]}" if len(_threads(params)) > 1 else ""


def _common(address: str, params: Params, port: int = PORT) -> list[str]:
    return [
        "--db-driver=mysql",
        f"--mysql-host={address}",
        f"--mysql-port={port}",
        "--mysql-user=sbtest",
        "--mysql-password=",
        "--mysql-db=sbtest",
        f"--tables={params.tables}",
        f"--table-size={params.table_size}",
    ]


def prepare(address: str, params: Params) -> list[list[str]]:
    return [["sysbench", "oltp_read_write", *_common(address, params), "prepare"]]


def client(address: str, params: Params, level: str, port: int = PORT) -> list[str]:
    test, threads = level.split(":")
    return [
        "sysbench",
        f"oltp_{test}",
        *_common(address, params, port),
        f"--threads={threads}",
        f"--time={params.duration_s}",
        "--report-interval=0",
        "run",
    ]


def parse(output: str) -> list[workloads.Metric]:
    """sysbench 1.0 OLTP report; the test is read from its query mix."""
    tx = re.search(r"^\s+transactions:\s+\d+\s+\(([\d.]+) per sec\.\)", output, re.M)
    q = re.search(r"^\s+queries:\s+\d+\s+\(([\d.]+) per sec\.\)", output, re.M)
    reads = re.search(r"^\s+read:\s+(\d+)", output, re.M)
    writes = re.search(r"^\s+write:\s+(\d+)", output, re.M)
    if not (tx and q and reads and writes):
        fatal = [x for x in output.splitlines() if x.startswith("FATAL")]
        raise ParseError(f"sysbench oltp: no result: {first_line(fatal[0] if fatal else output)}")
    r, w = int(reads.group(1)), int(writes.group(1))
    test = "read_write" if r and w else "read_only" if r else "write_only"
    out = [
        figure(TPS.of(test), float(tx.group(1))),
        figure(QPS.of(test), float(q.group(1))),
    ]
    for key, which in (("avg", "avg"), ("95th percentile", "p95")):
        if m := re.search(rf"^\s+{key}:\s+([\d.]+)", output, re.M):
            out.append(figure(LATENCY.of(test, which), float(m.group(1))))
    if err := re.search(r"^\s+ignored errors:\s+(\d+)", output, re.M):
        out.append(figure(ERRORS.of(test), float(err.group(1))))
    return out


WORKLOAD = Workload(
    "mariadb",
    "serve",
    argv,
    "MariaDB, sysbench OLTP read-only / write-only / read-write from the host",
    needs=Needs(
        static_programs=("vb-run",),  # bootstraps the data directory, then the server
        host_binaries=("/usr/sbin/mariadbd", f"{SHARE}/english/errmsg.sys"),
        host_dirs=(f"{SHARE}/charsets",),
        files=files,
        data=True,
    ),
    measures=Measures(Params, parse, TPS.of("read_only"), levels, label, seconds),
    serves=Serves(PORT, "sysbench", client, prepare=prepare),
    metrics=METRICS,
    order=130,
    metrics_order=50,
)
