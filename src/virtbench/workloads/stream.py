"""`stream`: the STREAM copy/scale/add/triad kernels (guest/vb-stream.c), one thread,
inside the instance; best rate over `times` passes (first not counted), as STREAM does.

Array size: `elements` doubles per array (default 2^24 = 128 MiB each, 384 MiB in all;
STREAM's rule is at least 4x the last-level cache). The instance needs that much memory.
"""

from __future__ import annotations

import re

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

KERNELS = ("copy", "scale", "add", "triad")

MB_S = declared(
    "stream",
    "*_mb_s",
    "MB/s",
    "higher",
    "a STREAM kernel's best rate over the passes (vb-stream)",
    0.1,
    label="{} bandwidth",
)
METRICS: tuple[Metric, ...] = (MB_S,)


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    elements: int = Field(default=1 << 24, ge=1000, le=1 << 31)
    times: int = Field(default=10, ge=2, le=1000)


def seconds(params: Params, level: None = None) -> float:
    """About how long one measurement takes (the catalog's estimate): four kernels over
    three arrays of doubles `times` times at ~5 GB/s."""
    del level
    return 1.0 + 4 * 3 * 8 * params.elements * params.times / 5e9


def command(params: Params, level: None = None) -> tuple[str, ...]:
    del level
    return ("/bin/vb-stream", str(params.elements), str(params.times))


def parse(output: str) -> list[workloads.Metric]:
    found = dict(re.findall(r"^stream (\w+) best_mb_s=([\d.]+)", output, re.M))
    if set(found) != set(KERNELS):
        raise ParseError(f"vb-stream: no result: {first_line(output)}")
    return [figure(MB_S.of(k), float(found[k])) for k in KERNELS]


WORKLOAD = Workload(
    "stream",
    "exit",
    None,
    "STREAM copy/scale/add/triad memory bandwidth (MB/s), one thread",
    needs=Needs(static_programs=("vb-stream",)),
    measures=Measures(Params, parse, MB_S.of("triad"), seconds=seconds),
    inside=Inside(command),
    metrics=METRICS,
    order=80,
    metrics_order=130,
)
