"""`sqlite`: INSERTs into a fresh SQLite database on tmpfs, timed inside the instance
(guest/vb-sqlite.c against the host's libsqlite3; like Unikraft's SQLite benchmark,
60000 INSERTs, each its own transaction unless `rows_per_transaction` says otherwise).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from virtbench.workloads import Metric, ParseError, first_line

NAME = "sqlite"
ENDS = "exit"
PRIMARY = "inserts_per_s"
PRIMARY_UNIT, PRIMARY_DIRECTION = "rows/s", "higher"
DESCRIPTION = "SQLite: 60000 INSERTs on tmpfs, timed inside (inserts/s)"
GUEST_PROGRAMS = ("vb-sqlite",)


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rows: int = Field(default=60000, ge=1, le=100_000_000)
    rows_per_transaction: int = Field(default=1, ge=1)


def seconds(params: Params, level: None = None) -> float:
    """About how long one measurement takes (the catalog's estimate): ~10,000 INSERTs a
    second when each is its own transaction, natively here; slower sandboxes take longer."""
    del level
    return 1.0 + params.rows / (10_000 * params.rows_per_transaction**0.5)


def command(params: Params, level: None = None) -> tuple[str, ...]:
    del level
    return ("/bin/vb-sqlite", str(params.rows), str(params.rows_per_transaction))


def parse(output: str) -> list[Metric]:
    m = re.search(r"^sqlite rows=\d+ per_txn=\d+ dir=\S+ seconds=([\d.]+) inserts_per_s=([\d.]+)",
                  output, re.M)  # fmt: skip
    if m is None:
        raise ParseError(f"vb-sqlite: no result: {first_line(output)}")
    return [
        Metric("inserts_per_s", float(m.group(2)), "rows/s", "higher"),
        Metric("seconds", float(m.group(1)), "s", "lower"),
    ]
