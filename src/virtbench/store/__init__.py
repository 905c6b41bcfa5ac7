"""The results store: one row per sample, committed as measured, in SQLite (a results
directory, WAL mode) or PostgreSQL (`--store postgresql://...`, which a fleet shares).

  records.py     what is stored: `Sample`, `RunRecord` (plain records, no behaviour)
  migrations.py  the schema, one migration per version
  backend.py     a database connection saying that SQL in its dialect (SQLite here)
  core.py        `Store`: the same SQL on any backend
  postgres.py    `PgStore`: the PostgreSQL connection (only it needs psycopg)

`open_store` picks the backend from the location. The store knows nothing of runtimes or
experiments: a sample is a flat record.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from virtbench.errors import VirtbenchError
from virtbench.store.backend import Backend, Row, SqliteBackend
from virtbench.store.core import DB_NAME, Store
from virtbench.store.migrations import MIGRATIONS, SCHEMA_VERSION
from virtbench.store.records import Direction, RunRecord, Sample

__all__ = [
    "DB_NAME",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "Backend",
    "Direction",
    "Row",
    "RunRecord",
    "Sample",
    "SqliteBackend",
    "Store",
    "open_store",
]

_URL = re.compile(r"^(postgres|postgresql)://", re.IGNORECASE)


def open_store(location: str | Path, alive: Callable[[str], bool] | None = None) -> Store:
    """The store at `location`: a `postgresql://` URL (shared, e.g. by a fleet), or a results
    directory holding the SQLite database; `alive` as `Store`'s."""
    text = str(location)
    if isinstance(location, str) and _URL.match(text):
        from virtbench.store.postgres import PgStore  # only a PostgreSQL store needs psycopg

        return PgStore(text, alive)
    if isinstance(location, str) and re.match(r"^[a-z][a-z0-9+.-]*://", text, re.IGNORECASE):
        scheme = text.split("://", 1)[0]
        raise VirtbenchError(
            f"--store {scheme}://...: unknown kind of store; give a results directory "
            "or a postgresql://user@host/database URL"
        )
    return Store(Path(location), alive)
