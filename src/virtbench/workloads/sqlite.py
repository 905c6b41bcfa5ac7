"""`sqlite`: INSERTs into a fresh SQLite database on tmpfs, timed inside the instance
(guest/vb-sqlite.c against the host's libsqlite3; like Unikraft's SQLite benchmark,
60000 INSERTs, each its own transaction unless `rows_per_transaction` says otherwise).
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

INSERTS_PER_S = declared(
    "sqlite",
    "inserts_per_s",
    "rows/s",
    "higher",
    "rows INSERTed per second, timed inside the instance (vb-sqlite)",
    0.1,
    label="inserts/s",
)
SECONDS = declared(
    "sqlite",
    "seconds",
    "s",
    "lower",
    "the INSERTs' time, inside the instance",
    1e-6,
    label="time for the inserts",
)
METRICS: tuple[Metric, ...] = (INSERTS_PER_S, SECONDS)


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rows: int = Field(default=60000, ge=1, le=100_000_000)
    rows_per_transaction: int = Field(default=1, ge=1)


def seconds(params: Params, level: None = None) -> float:
    """About how long one measurement takes (the catalog's estimate): ~10,000 INSERTs a
    second when each is its own transaction, natively here; slower sandboxes take longer."""
    del level
    root: float = params.rows_per_transaction**0.5
    return 1.0 + params.rows / (10_000 * root)


def command(params: Params, level: None = None) -> tuple[str, ...]:
    del level
    return ("/bin/vb-sqlite", str(params.rows), str(params.rows_per_transaction))


def parse(output: str) -> list[workloads.Metric]:
    m = re.search(
        r"^sqlite rows=\d+ per_txn=\d+ dir=\S+ seconds=([\d.]+) inserts_per_s=([\d.]+)",
        output,
        re.M,
    )
    if m is None:
        raise ParseError(f"vb-sqlite: no result: {first_line(output)}")
    return [
        figure(INSERTS_PER_S, float(m.group(2))),
        figure(SECONDS, float(m.group(1))),
    ]


WORKLOAD = Workload(
    "sqlite",
    "exit",
    None,
    "SQLite: 60000 INSERTs on tmpfs, timed inside (inserts/s)",
    needs=Needs(guest_programs=("vb-sqlite",)),
    measures=Measures(Params, parse, INSERTS_PER_S, seconds=seconds),
    inside=Inside(command),
    aliases=("sqlite-bench",),  # S1 and the issue tracker call vb-sqlite so
    metrics=METRICS,
    order=70,
    metrics_order=120,
)
