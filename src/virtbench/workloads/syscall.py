"""`syscall`: system call and page-fault cost inside the instance (guest/vb-syscall.c).

getppid; read (/dev/zero), write (/dev/null) and UDP sendto+recvfrom on loopback with
payloads 1 B..8 KiB; open+close; stat; fork+exit+wait; first-touch page fault. Each
operation runs `batches` calibrated batches of ~`batch_ms`; every batch's ns/op is one
sample, so the distribution is kept. Metric names: `<op>_ns` or `<op>_<bytes>b_ns`.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from virtbench.workloads import Metric, ParseError, first_line

NAME = "syscall"
ENDS = "exit"
PRIMARY = "getppid_ns"
PRIMARY_UNIT, PRIMARY_DIRECTION = "ns", "lower"
DESCRIPTION = "syscall and page-fault cost (ns/op), payload sweep 1 B..8 KiB"
SIZED = ("read", "write", "sendto_recvfrom")
LINE = re.compile(r"^syscall (\w+) bytes=(\d+) batch=\d+ iters=\d+ ns_per_op=([\d.]+)", re.M)


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    batches: int = Field(default=10, ge=1, le=10_000)
    batch_ms: float = Field(default=20.0, gt=0, le=10_000)


def seconds(params: Params, level: None = None) -> float:
    """About how long one measurement takes (the catalog's estimate): every batch of each
    call, ~12 calls."""
    del level
    return 1.0 + 12 * params.batches * params.batch_ms / 1e3


def command(params: Params, level: None = None) -> tuple[str, ...]:
    del level
    return ("/bin/vb-syscall", str(params.batches), f"{params.batch_ms:g}")


def parse(output: str) -> list[Metric]:
    out = []
    for op, size, ns in LINE.findall(output):
        name = f"{op}_{size}b_ns" if op in SIZED else f"{op}_ns"
        out.append(Metric(name, float(ns), "ns", "lower"))
    if not any(m.name == PRIMARY for m in out) or "page_fault_ns" not in {m.name for m in out}:
        raise ParseError(f"vb-syscall: incomplete result: {first_line(output)}")
    return out
