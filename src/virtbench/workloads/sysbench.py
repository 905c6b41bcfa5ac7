"""`sysbench`: sysbench's cpu (primes up to `cpu_max_prime`, S5's 10000), memory and
fileio tests inside the instance, each with 1..N threads (`threads`, a list sweeps); the
Debian binary and its libraries go into the artifact. One fresh instance per (test, mode,
threads). fileio runs `prepare`, `run` and `cleanup` in one instance (guest/vb-run) on the
instance's data directory on disk, modes `fileio_modes` (S5: seqrd, seqwr; 5 GB, 30 s --
`fileio_total_size` fits it to the disk).

Metrics: `cpu.events_per_s`, `cpu.latency_avg`/`_p95` (ms); `memory.mib_per_s`,
`memory.ops_per_s`; `fileio.<mode>.read_mib_per_s`/`written_mib_per_s`/`reads_per_s`/
`writes_per_s`/`fsyncs_per_s`; with several thread counts each gets `@t<threads>`.
"""

from __future__ import annotations

import re
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
    figure,
    first_line,
    swept,
)

FILEIO_MODES = ("seqwr", "seqrewr", "seqrd", "rndrd", "rndwr", "rndrw")

CPU_EVENTS_PER_S = swept(
    "sysbench",
    "cpu.events_per_s",
    "events/s",
    "higher",
    "prime searches up to cpu_max_prime per second, all threads",
    0.01,
    label="CPU events/s",
)
CPU_LATENCY = swept(
    "sysbench",
    "cpu.latency_*",
    "ms",
    "lower",
    "one event's time, avg / 95th percentile",
    0.01,
    label="CPU event latency {}",
)
MEMORY_MIB_PER_S = swept(
    "sysbench",
    "memory.mib_per_s",
    "MiB/s",
    "higher",
    "memory transferred per second (block size, operation as configured)",
    0.01,
    label="memory bandwidth",
)
MEMORY_OPS_PER_S = swept(
    "sysbench",
    "memory.ops_per_s",
    "ops/s",
    "higher",
    "memory block operations per second",
    0.01,
    label="memory operations/s",
)
FILEIO_MIB_PER_S = swept(
    "sysbench",
    "fileio.*_mib_per_s",
    "MiB/s",
    "higher",
    "a fileio mode's MiB read or written per second, on the data directory's disk",
    0.01,
    label="file I/O {} throughput",
)
FILEIO_PER_S = swept(
    "sysbench",
    "fileio.*_per_s",
    "ops/s",
    "higher",
    "a fileio mode's reads, writes or fsyncs per second",
    0.01,
    label="file I/O {}/s",
)
METRICS: tuple[Metric, ...] = (
    CPU_EVENTS_PER_S,
    CPU_LATENCY,
    MEMORY_MIB_PER_S,
    MEMORY_OPS_PER_S,
    FILEIO_MIB_PER_S,
    FILEIO_PER_S,
)


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tests: list[Literal["cpu", "memory", "fileio"]] = Field(
        default=["cpu", "memory", "fileio"], min_length=1
    )
    threads: int | list[int] = 1
    time_s: int = Field(default=10, ge=1, le=3600)
    cpu_max_prime: int = Field(default=10000, ge=3)
    memory_block_size: str = Field(default="1K", pattern=r"^\d+[KMG]?$")
    memory_total_size: str = Field(default="100G", pattern=r"^\d+[KMG]?$")
    memory_oper: Literal["read", "write"] = "write"
    fileio_modes: list[Literal["seqwr", "seqrewr", "seqrd", "rndrd", "rndwr", "rndrw"]] = Field(
        default=["seqrd", "seqwr", "rndrw"], min_length=1
    )
    fileio_total_size: str = Field(default="5G", pattern=r"^\d+[KMG]?$")
    fileio_num: int = Field(default=16, ge=1, le=1024)
    fileio_extra_flags: Literal["", "direct", "sync", "dsync"] = ""


def _threads(params: Params) -> list[int]:
    t = params.threads
    return list(t) if isinstance(t, list) else [t]


def levels(params: Params) -> list[str]:
    """`test:threads`, and `fileio.<mode>:threads` per fileio mode."""
    tests = [
        t2
        for t in params.tests
        for t2 in ([f"fileio.{m}" for m in params.fileio_modes] if t == "fileio" else [t])
    ]
    return [f"{test}:{n}" for test in tests for n in _threads(params)]


def label(params: Params, level: str) -> str:
    """Metric suffix: the thread count, when several are swept (the test is in the name)."""
    return f"@t{level.split(':')[1]}" if len(_threads(params)) > 1 else ""


def _fileio(params: Params, mode: str, threads: str) -> tuple[str, ...]:
    """prepare, run and cleanup in one instance, in its data directory."""
    common = [
        "fileio",
        f"--file-total-size={params.fileio_total_size}",
        f"--file-num={params.fileio_num}",
        f"--file-test-mode={mode}",
    ]
    if params.fileio_extra_flags:
        common.append(f"--file-extra-flags={params.fileio_extra_flags}")
    run = [f"--threads={threads}", f"--time={params.time_s}", *common, "run"]
    return (
        "/bin/vb-run",
        "--chdir",
        "/data",
        "--",
        "/usr/bin/sysbench",
        *common,
        "prepare",
        ";",
        "/usr/bin/sysbench",
        *run,
        ";",
        "/usr/bin/sysbench",
        *common,
        "cleanup",
    )


def command(params: Params, level: str) -> tuple[str, ...]:
    test, threads = level.split(":")
    if test.startswith("fileio."):
        return _fileio(params, test.split(".", 1)[1], threads)
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


FILEIO_HEADINGS = {  # "Doing <this> test" -> the mode
    "sequential write (creation)": "seqwr",
    "sequential rewrite": "seqrewr",
    "sequential read": "seqrd",
    "random read": "rndrd",
    "random write": "rndwr",
    "random r/w": "rndrw",
}


def _parse_fileio(output: str) -> list[workloads.Metric]:
    """The `run` step's report; prepare's and cleanup's lines around it are ignored."""
    m = re.search(r"^Doing (.+) test$", output, re.M)
    mode = FILEIO_HEADINGS.get(m.group(1)) if m else None
    if m is None or mode is None:
        raise ParseError(f"sysbench fileio: no test heading: {first_line(output)}")
    run = output[m.end() :]
    out = []
    for pattern, family, what in (
        (r"^\s+reads/s:\s+([\d.]+)", FILEIO_PER_S, "reads"),
        (r"^\s+writes/s:\s+([\d.]+)", FILEIO_PER_S, "writes"),
        (r"^\s+fsyncs/s:\s+([\d.]+)", FILEIO_PER_S, "fsyncs"),
        (r"^\s+read, MiB/s:\s+([\d.]+)", FILEIO_MIB_PER_S, "read"),
        (r"^\s+written, MiB/s:\s+([\d.]+)", FILEIO_MIB_PER_S, "written"),
    ):
        if (v := _num(pattern, run)) is not None:
            out.append(figure(family.of(f"{mode}.{what}"), v))
    if len(out) < 5:
        raise ParseError(f"sysbench fileio {mode}: incomplete report: {first_line(run)}")
    return out


def parse(output: str) -> list[workloads.Metric]:
    """One test's report (sysbench 1.0)."""
    out = []
    if re.search(r"^Doing .+ test$", output, re.M):
        return _parse_fileio(output)
    if (eps := _num(r"^\s+events per second:\s+([\d.]+)", output)) is not None:
        out.append(figure(CPU_EVENTS_PER_S, eps))
        for key, which in (("avg", "avg"), ("95th percentile", "p95")):
            if (v := _num(rf"^\s+{key}:\s+([\d.]+)", output)) is not None:
                out.append(figure(CPU_LATENCY.of(which), v))
    elif (mib := _num(r"MiB transferred \(([\d.]+) MiB/sec\)", output)) is not None:
        out.append(figure(MEMORY_MIB_PER_S, mib))
        if (ops := _num(r"^Total operations: \d+ \(\s*([\d.]+) per second\)", output)) is not None:
            out.append(figure(MEMORY_OPS_PER_S, ops))
    else:
        raise ParseError(f"sysbench: no result: {first_line(output)}")
    return out


def seconds(params: Params, level: Any) -> float:
    """About how long one measurement takes here (the plan's estimate): its time_s."""
    del level
    return params.time_s + 1.0


WORKLOAD = Workload(
    "sysbench",
    "exit",
    None,
    "sysbench cpu (primes), memory and fileio, 1..N threads",
    needs=Needs(
        static_programs=("vb-run",),  # fileio's prepare, run and cleanup in one instance
        host_binaries=("/usr/bin/sysbench",),
        data=True,  # fileio's files
    ),
    measures=Measures(Params, parse, CPU_EVENTS_PER_S, levels, label, seconds),
    inside=Inside(command),
    metrics=METRICS,
    order=90,
    metrics_order=60,
)
