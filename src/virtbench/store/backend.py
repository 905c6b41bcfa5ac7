"""The results store's schema and the database connections it runs on.

The SQL is written once, in SQLite's words (`?` placeholders, `INTEGER PRIMARY KEY`, `REAL`);
a `Backend` says it in its own dialect. The differences, all here and in postgres.py:

  what                      SQLite                       PostgreSQL
  placeholders              ?                            %s
  row id                    INTEGER PRIMARY KEY          BIGINT GENERATED ... AS IDENTITY
  floating point            REAL (8 bytes)               DOUBLE PRECISION (REAL is 4 bytes)
  schema version            PRAGMA user_version          one-row table virtbench_meta
  concurrent migrations     BEGIN IMMEDIATE              a transaction-scoped advisory lock
  journal                   WAL, synchronous=NORMAL      (the server's own)

Upserts use `INSERT ... ON CONFLICT (...) DO UPDATE`, which both speak. Every statement
holds one lock (the host sampler's thread writes while the main thread does), each write
outside a transaction commits at once, and a failed write becomes a StoreError.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from virtbench.errors import StoreError, VirtbenchError
from virtbench.store.migrations import MIGRATIONS, SCHEMA_VERSION, statements

Row = dict[str, Any]


class Backend:
    """One connection to a results database, shared by the threads of one process.

    Subclasses connect, say the SQL in their dialect and turn their driver's write errors
    into a reason; everything else (locking, transactions, migrations) is here."""

    location: str  # where the store is, for messages: a path, or a URL without its password
    integrity_errors: tuple[type[Exception], ...] = ()  # a constraint refused a row

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._depth = 0  # transactions open (by the thread holding the lock)

    # --- the dialect -----------------------------------------------------------------------
    def sql(self, query: str) -> str:
        """`query` (SQLite's words) in this backend's dialect."""
        return query

    def ddl(self, stmt: str) -> str:
        """A schema statement in this backend's dialect."""
        return self.sql(stmt)

    # --- the driver ------------------------------------------------------------------------
    def _execute(self, query: str, params: Sequence[Any]) -> list[Row]:
        raise NotImplementedError

    def _executemany(self, query: str, seq: Iterable[Sequence[Any]]) -> None:
        raise NotImplementedError

    def _begin(self, migrating: bool) -> None:
        raise NotImplementedError

    def _end(self, commit: bool) -> None:
        """Commit, or roll back what is still open."""
        raise NotImplementedError

    def _write_failure(self, exc: Exception) -> str | None:
        """Why a write failed, for a StoreError; None for an error that is a bug."""
        raise NotImplementedError

    def version(self) -> int:
        """The schema version of the database (0: empty)."""
        raise NotImplementedError

    def set_version(self, version: int) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    # --- shared ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Writes under the lock; a full disk, a read-only or vanished store or a lost server
        becomes a StoreError naming the store. What was committed before stays."""
        with self._lock:
            try:
                yield
            except Exception as exc:
                why = self._write_failure(exc)
                if why is None:
                    raise
                raise StoreError(f"results store {self.location}: cannot write: {why}") from None

    def rows(self, query: str, params: Sequence[Any] = ()) -> list[Row]:
        with self._lock:
            return self._execute(self.sql(query), params)

    def tuples(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """A read's rows as tuples, in the query's column order (for many rows)."""
        return [tuple(r.values()) for r in self.rows(query, params)]

    def execute(self, query: str, params: Sequence[Any] = ()) -> None:
        """One write, committed at once unless inside `transaction()`."""
        with self.writing():
            self._execute(self.sql(query), params)

    def executemany(self, query: str, seq: Iterable[Sequence[Any]]) -> None:
        """Many writes, committed together."""
        with self.transaction():
            self._executemany(self.sql(query), seq)

    @contextlib.contextmanager
    def transaction(self, migrating: bool = False) -> Iterator[None]:
        """All writes inside commit together or not at all; other threads wait. One inside
        another is part of it."""
        with self.writing():
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self._begin(migrating)
            self._depth = 1
            try:
                yield
                self._end(commit=True)
            except BaseException:
                with contextlib.suppress(Exception):  # the error to show is the first one
                    self._end(commit=False)
                raise
            finally:
                self._depth = 0

    def migrate(self) -> None:
        """Bring the schema to SCHEMA_VERSION, one step at a time, in one transaction."""
        if self.version() == SCHEMA_VERSION:
            return
        with self.transaction(migrating=True):
            version = self.version()  # again: another process may have migrated meanwhile
            if version > SCHEMA_VERSION:
                raise VirtbenchError(
                    f"{self.location}: schema version {version} is newer than this virtbench "
                    f"({SCHEMA_VERSION}); upgrade virtbench"
                )
            for v in range(version + 1, SCHEMA_VERSION + 1):
                for stmt in statements(MIGRATIONS[v]):
                    self._execute(self.ddl(stmt), ())
            if version != SCHEMA_VERSION:
                self.set_version(SCHEMA_VERSION)


class SqliteBackend(Backend):
    """One SQLite database file in WAL mode."""

    integrity_errors = (sqlite3.IntegrityError,)

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.location = str(path)
        # Shared with the host sampler's thread: the lock orders every statement.
        self.db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        self.db.row_factory = _dict_row
        with self.writing():
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")

    def _execute(self, query: str, params: Sequence[Any]) -> list[Row]:
        return self.db.execute(query, params).fetchall()

    def _executemany(self, query: str, seq: Iterable[Sequence[Any]]) -> None:
        self.db.executemany(query, seq)

    def tuples(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            cur = self.db.cursor()
            cur.row_factory = None  # plain tuples: no dict per row
            return cur.execute(self.sql(query), params).fetchall()

    def _begin(self, migrating: bool) -> None:
        # IMMEDIATE: take the write lock now, so a read then a write cannot deadlock
        # against another process (SQLite would give up on it without waiting).
        self.db.execute("BEGIN IMMEDIATE")

    def _end(self, commit: bool) -> None:
        if commit:
            self.db.execute("COMMIT")
        elif self.db.in_transaction:  # SQLite may have rolled back on its own (disk full)
            self.db.execute("ROLLBACK")

    def _write_failure(self, exc: Exception) -> str | None:
        if not isinstance(exc, sqlite3.OperationalError):
            return None
        text = str(exc)
        where = self.path.parent
        if "full" in text:
            return f"the disk is full ({text}); free space under {where}"
        if "readonly" in text or "unable to open" in text or "disk I/O" in text:
            return f"{text}; check {where} is writable and still there"
        return None

    def version(self) -> int:
        return int(self.db.execute("PRAGMA user_version").fetchone()["user_version"])

    def set_version(self, version: int) -> None:
        self.db.execute(f"PRAGMA user_version = {int(version)}")

    def close(self) -> None:
        self.db.close()


def _dict_row(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> Row:
    return {d[0]: v for d, v in zip(cursor.description, row, strict=True)}
