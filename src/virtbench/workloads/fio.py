"""`fio`: disk I/O on the instance's data directory (on the host's disk, never tmpfs).

Tests (one fresh instance each): `randrw` as S4 (4 KiB blocks, O_DIRECT, iodepth 1,
psync, 50/50 mix, 30 s) and `seqread` / `seqwrite` (1 MiB blocks, O_DIRECT). fio lays
the file out before a read test; that is not timed. The same Debian binary runs in every
runtime; its JSON output is parsed.

Metrics per test and direction: `<test>.<read|write>.iops`, `.mib_per_s`, and completion
latency `.clat_p50` / `.clat_p99` (us).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from virtbench import workloads
from virtbench.figure import Metric
from virtbench.workloads.kind import (
    Inside,
    Measures,
    Needs,
    ParseError,
    Workload,
    declared,
    figure,
    first_line,
)

TESTS = {  # fio --rw, block size param
    "randrw": ("randrw", "random_bs"),
    "seqread": ("read", "seq_bs"),
    "seqwrite": ("write", "seq_bs"),
}

IOPS = declared(
    "fio",
    "*.*.iops",
    "IOPS",
    "higher",
    "a test's reads or writes per second (fio JSON)",
    label="{} {} IOPS",
)
MIB_PER_S = declared(
    "fio",
    "*.*.mib_per_s",
    "MiB/s",
    "higher",
    "a test's bytes read or written per second (fio bw_bytes)",
    1 / 2**20,
    label="{} {} throughput",
)
CLAT_P = declared(
    "fio",
    "*.*.clat_p*",
    "us",
    "lower",
    "a percentile (50, 99) of completion latency, submission -> completion (fio clat_ns)",
    0.001,
    label="{} {} completion latency p{}",
)
METRICS: tuple[Metric, ...] = (IOPS, MIB_PER_S, CLAT_P)


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tests: list[Literal["randrw", "seqread", "seqwrite"]] = Field(
        default=["randrw", "seqread", "seqwrite"], min_length=1
    )
    runtime_s: int = Field(default=30, ge=1, le=3600)
    size: str = Field(default="1G", pattern=r"^\d+[KMG]?$")  # the test file
    random_bs: str = Field(default="4k", pattern=r"^\d+[kmKM]?$")
    seq_bs: str = Field(default="1M", pattern=r"^\d+[kmKM]?$")
    iodepth: int = Field(default=1, ge=1, le=1024)
    rwmixread: int = Field(default=50, ge=0, le=100)
    direct: bool = True


def levels(params: Params) -> list[str]:
    return list(params.tests)


def label(params: Params, level: str) -> str:
    del params, level  # the test is in every metric's name
    return ""


def command(params: Params, level: str) -> tuple[str, ...]:
    rw, bs_param = TESTS[level]
    return (
        "/usr/bin/fio",
        f"--name={level}",
        "--filename=/data/fio.dat",
        f"--size={params.size}",
        f"--rw={rw}",
        f"--bs={getattr(params, bs_param)}",
        f"--direct={int(params.direct)}",
        f"--iodepth={params.iodepth}",
        "--ioengine=psync" if params.iodepth == 1 else "--ioengine=libaio",
        f"--rwmixread={params.rwmixread}",
        f"--runtime={params.runtime_s}",
        "--time_based",
        "--output-format=json",
    )


def parse(output: str) -> list[workloads.Metric]:
    """fio --output-format=json (3.x); anything before the first `{` (warnings) and after
    the document (a runtime's own last words, e.g. nspawn's) is skipped."""
    start = output.find("{")
    try:
        doc = json.JSONDecoder().raw_decode(output[start:])[0] if start >= 0 else None
    except json.JSONDecodeError:
        doc = None
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    if not jobs:
        raise ParseError(f"fio: no result: {first_line(output)}")
    job = jobs[0]
    if job.get("error"):
        raise ParseError(f"fio: job {job.get('jobname')} failed with error {job['error']}")
    test = job.get("jobname", "fio")
    out = []
    for direction in ("read", "write"):
        d = job.get(direction) or {}
        if not d.get("total_ios"):
            continue
        out.append(figure(IOPS.of(test, direction), float(d["iops"])))
        out.append(figure(MIB_PER_S.of(test, direction), d["bw_bytes"] / 2**20))
        pcts = (d.get("clat_ns") or {}).get("percentile") or {}
        for key, pct in (("50.000000", 50), ("99.000000", 99)):
            if key in pcts:
                out.append(figure(CLAT_P.of(test, direction, pct), pcts[key] / 1000.0))
    if not out:
        raise ParseError(f"fio: job {test} did no I/O")
    return out


def seconds(params: Params, level: Any) -> float:
    """About how long one measurement takes here (the plan's estimate): its runtime_s."""
    del level
    return params.runtime_s + 1.0


WORKLOAD = Workload(
    "fio",
    "exit",
    None,
    "fio randrw 4k direct iodepth 1 (S4) and sequential read/write, data on disk",
    needs=Needs(host_binaries=("/usr/bin/fio",), data=True),
    measures=Measures(Params, parse, IOPS.of("randrw", "read"), levels, label, seconds),
    inside=Inside(command),
    metrics=METRICS,
    order=110,
    metrics_order=70,
)
