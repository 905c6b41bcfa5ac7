"""`sysbench`: sysbench's cpu (primes up to `cpu_max_prime`, S5's 10000) and memory tests
inside the instance, each with 1..N threads (`threads`, a list sweeps); the Debian binary
and its libraries go into the artifact. One fresh instance per (test, threads).

Metrics: `cpu.events_per_s`, `cpu.latency_avg`/`_p95` (ms); `memory.mib_per_s`,
`memory.ops_per_s`; with several thread counts each gets `@t<threads>`.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from virtbench.workloads import Metric, ParseError, first_line

NAME = "sysbench"
ENDS = "exit"
PRIMARY = "cpu.events_per_s"
PRIMARY_UNIT, PRIMARY_DIRECTION = "events/s", "higher"
DESCRIPTION = "sysbench cpu (primes) and memory, 1..N threads"
HOST_BINARIES = ["/usr/bin/sysbench"]


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tests: list[Literal["cpu", "memory"]] = Field(default=["cpu", "memory"], min_length=1)
    threads: int | list[int] = 1
    time_s: int = Field(default=10, ge=1, le=3600)
    cpu_max_prime: int = Field(default=10000, ge=3)
    memory_block_size: str = Field(default="1K", pattern=r"^\d+[KMG]?$")
    memory_total_size: str = Field(default="100G", pattern=r"^\d+[KMG]?$")
    memory_oper: Literal["read", "write"] = "write"


def _threads(params: Params) -> list[int]:
    t = params.threads
    return list(t) if isinstance(t, list) else [t]


def levels(params: Params) -> list[str]:
    return [f"{test}:{n}" for test in params.tests for n in _threads(params)]


def label(params: Params, level: str) -> str:
    """Metric suffix: the thread count, when several are swept (the test is in the name)."""
    return f"@t{level.split(':')[1]}" if len(_threads(params)) > 1 else ""


def command(params: Params, level: str) -> tuple[str, ...]:
    test, threads = level.split(":")
    argv = ["/usr/bin/sysbench", f"--threads={threads}", f"--time={params.time_s}"]
    if test == "cpu":
        argv.append(f"--cpu-max-prime={params.cpu_max_prime}")
    else:
        argv += [
            f"--memory-block-size={params.memory_block_size}",
            f"--memory-total-size={params.memory_total_size}",
            f"--memory-oper={params.memory_oper}",
        ]
    return (*argv, test, "run")


def _num(pattern: str, text: str) -> float | None:
    m = re.search(pattern, text, re.M)
    return float(m.group(1)) if m else None


def parse(output: str) -> list[Metric]:
    """One test's report (sysbench 1.0)."""
    out = []
    if (eps := _num(r"^\s+events per second:\s+([\d.]+)", output)) is not None:
        out.append(Metric("cpu.events_per_s", eps, "events/s", "higher"))
        for key, name in (("avg", "latency_avg"), ("95th percentile", "latency_p95")):
            if (v := _num(rf"^\s+{key}:\s+([\d.]+)", output)) is not None:
                out.append(Metric(f"cpu.{name}", v, "ms", "lower"))
    elif (mib := _num(r"MiB transferred \(([\d.]+) MiB/sec\)", output)) is not None:
        out.append(Metric("memory.mib_per_s", mib, "MiB/s", "higher"))
        if (ops := _num(r"^Total operations: \d+ \(\s*([\d.]+) per second\)", output)) is not None:
            out.append(Metric("memory.ops_per_s", ops, "ops/s", "higher"))
    else:
        raise ParseError(f"sysbench: no result: {first_line(output)}")
    return out
