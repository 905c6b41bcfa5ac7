"""`syscall`: system call and page-fault cost inside the instance (guest/vb-syscall.c).

getppid; read (/dev/zero), write (/dev/null) and UDP sendto+recvfrom on loopback with
each payload of `sizes` (1 B..8 KiB); open+close; stat; fork+exit+wait; first-touch page
fault; and per k of `page_fault_pages`, the first touch of k fresh pages
(`page_fault_<k>p_ns`, all k touches). Each
operation runs `batches` calibrated batches of ~`batch_ms`; every batch's ns/op is one
sample, so the distribution is kept. Metric names: `<op>_ns` or `<op>_<bytes>b_ns`.
"""

from __future__ import annotations

import re
from typing import Annotated

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

SIZED = ("read", "write", "sendto_recvfrom")
LINE = re.compile(
    r"^syscall (\w+) (bytes|pages)=(\d+) batch=\d+ iters=\d+ ns_per_op=([\d.]+)", re.M
)
MAX_BYTES = 8192  # vb-syscall's buffer
PAGE_FAULT_NS = declared(
    "syscall",
    "page_fault_*p_ns",
    "ns",
    "lower",
    "the first touch of k fresh anonymous pages, all k touches timed, the mapping not (vb-syscall)",
    1.0,
    label="first touch of {} pages",
)
OP_NS = declared(
    "syscall",
    "*_ns",
    "ns",
    "lower",
    "one operation's cost: a calibrated batch's time / its iterations (vb-syscall)",
    0.1,
    label="{} cost",
)
METRICS: tuple[Metric, ...] = (PAGE_FAULT_NS, OP_NS)
PRIMARY = OP_NS.of("getppid")
FAULT = OP_NS.of("page_fault")  # the first touch of one page, which a result must hold


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    batches: int = Field(default=10, ge=1, le=10_000)
    batch_ms: float = Field(default=20.0, gt=0, le=10_000)
    # payloads of read, write and sendto+recvfrom (S4 swept 1 B to 8 KiB in 256 B steps:
    # [1, 256, 512, ..., 8192])
    sizes: list[Annotated[int, Field(ge=1, le=MAX_BYTES)]] = Field(
        default=[1, 64, 512, 4096, 8192], min_length=1, max_length=64
    )
    # first-touch cost of k fresh pages, per k (S4: 1..10); none by default
    page_fault_pages: list[Annotated[int, Field(ge=1, le=64)]] = Field(default=[], max_length=64)


def seconds(params: Params, level: None = None) -> float:
    """About how long one measurement takes (the catalog's estimate): every batch of each
    operation, and about two batches' worth of calibration each."""
    del level
    ops = 5 + 3 * len(params.sizes) + len(params.page_fault_pages)
    return 1.0 + ops * (params.batches + 2) * params.batch_ms / 1e3


def command(params: Params, level: None = None) -> tuple[str, ...]:
    del level
    sizes = ",".join(map(str, params.sizes))
    pages = ",".join(map(str, params.page_fault_pages))
    return ("/bin/vb-syscall", str(params.batches), f"{params.batch_ms:g}", sizes, pages)


def parse(output: str) -> list[workloads.Metric]:
    out = []
    for op, kind, size, ns in LINE.findall(output):
        if kind == "pages":
            fig = PAGE_FAULT_NS.of(size)
        else:
            fig = OP_NS.of(f"{op}_{size}b" if op in SIZED else op)
        out.append(figure(fig, float(ns)))
    if not {PRIMARY.name, FAULT.name} <= {m.name for m in out}:
        raise ParseError(f"vb-syscall: incomplete result: {first_line(output)}")
    return out


WORKLOAD = Workload(
    "syscall",
    "exit",
    None,
    "syscall and page-fault cost (ns/op), payload sweep 1 B..8 KiB",
    needs=Needs(static_programs=("vb-syscall",)),
    measures=Measures(Params, parse, PRIMARY, seconds=seconds),
    inside=Inside(command),
    metrics=METRICS,
    order=100,
    metrics_order=140,
)
