"""The results store: SQLite in WAL mode, one row per sample, committed as measured.

Schema history (PRAGMA user_version):
  1  runs, samples, series (host time series), events (warnings, skips, guard stops)
  2  units: the measurements of a run that finished (what `run --resume` skips)

The store knows nothing of runtimes or experiments: a sample is a flat record.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from virtbench.errors import StoreError, VirtbenchError

DB_NAME = "virtbench.sqlite"
SCHEMA_VERSION = 2

Direction = Literal["lower", "higher"]

_MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE runs (
        id          TEXT PRIMARY KEY,
        name        TEXT NOT NULL,
        created     REAL NOT NULL,
        finished    REAL,
        status      TEXT NOT NULL,
        argv        TEXT NOT NULL DEFAULT '[]',
        spec        TEXT NOT NULL,
        environment TEXT NOT NULL DEFAULT '{}',
        artifacts   TEXT NOT NULL DEFAULT '[]'
    );
    CREATE TABLE samples (
        id          INTEGER PRIMARY KEY,
        run_id      TEXT NOT NULL REFERENCES runs(id),
        experiment  TEXT NOT NULL,
        metric      TEXT NOT NULL,
        value       REAL,
        unit        TEXT NOT NULL,
        direction   TEXT NOT NULL CHECK (direction IN ('lower', 'higher')),
        runtime     TEXT NOT NULL,
        workload    TEXT NOT NULL,
        repetition  INTEGER NOT NULL,
        background  INTEGER NOT NULL DEFAULT 0,
        attacker    TEXT NOT NULL DEFAULT '',
        placement   TEXT NOT NULL DEFAULT '',
        warmup      INTEGER NOT NULL DEFAULT 0,
        emulated    INTEGER NOT NULL DEFAULT 0,
        error       TEXT NOT NULL DEFAULT '',
        params      TEXT NOT NULL DEFAULT '{}',
        t           REAL NOT NULL
    );
    CREATE INDEX samples_run ON samples(run_id, experiment, metric, runtime);
    CREATE TABLE series (
        run_id TEXT NOT NULL REFERENCES runs(id),
        name   TEXT NOT NULL,
        t      REAL NOT NULL,
        value  REAL NOT NULL
    );
    CREATE INDEX series_run ON series(run_id, name);
    CREATE TABLE events (
        run_id  TEXT NOT NULL REFERENCES runs(id),
        t       REAL NOT NULL,
        level   TEXT NOT NULL,
        message TEXT NOT NULL
    );
    """,
    2: """
    CREATE TABLE units (
        run_id     TEXT NOT NULL REFERENCES runs(id),
        experiment TEXT NOT NULL,
        key        TEXT NOT NULL,
        t          REAL NOT NULL,
        PRIMARY KEY (run_id, experiment, key)
    );
    """,
}


@dataclass(frozen=True)
class Sample:
    """One measured value; maps 1:1 to a row of `samples`.

    metric      what was measured, e.g. "boot.spawn_to_exit"
    value       the number (None when the measurement failed: see `error`)
    unit        "ms", "MiB", ...
    direction   "lower" or "higher": which way is better
    runtime     runtime name as in the spec ("crun", "docker:runsc")
    workload    workload name ("hello", "sleep")
    repetition  0-based repetition index within the run
    background  instances already running when this was measured
    attacker    isolation attacker ("" when none)
    placement   attacker placement ("" when none)
    warmup      true for warm-up measurements (kept, never summarised)
    emulated    true when measured under emulation (functional only)
    error       why the measurement failed ("" when it did not)
    params      everything else that identifies the condition (network, limits, ...)
    """

    experiment: str
    metric: str
    value: float | None
    unit: str
    direction: Direction
    runtime: str
    workload: str
    repetition: int
    background: int = 0
    attacker: str = ""
    placement: str = ""
    warmup: bool = False
    emulated: bool = False
    error: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    t: float = field(default_factory=time.time)


@dataclass(frozen=True)
class RunRecord:
    id: str
    name: str
    created: float
    finished: float | None
    status: str
    argv: list[str]
    spec: dict[str, Any]
    environment: dict[str, Any]
    artifacts: list[dict[str, Any]]


class Store:
    """A results directory holding one SQLite database."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise VirtbenchError(f"--results {directory}: cannot create ({exc.strerror})") from None
        self.path = directory / DB_NAME
        self._lock = threading.Lock()
        try:
            # Shared with the host sampler's thread; sqlite serialises, the lock orders writes.
            self.db = sqlite3.connect(
                self.path, timeout=30, isolation_level=None, check_same_thread=False
            )
            self.db.row_factory = sqlite3.Row
            with self._writing():
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
                self._migrate()
        except sqlite3.DatabaseError as exc:
            raise VirtbenchError(f"{self.path}: not a virtbench results database ({exc})") from None

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """A write; a full disk or a read-only or vanished store becomes a StoreError naming
        the directory. Every write is one transaction: what was committed before stays."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if "full" in text:
                why = f"the disk is full ({text}); free space under {self.directory}"
            elif "readonly" in text or "unable to open" in text or "disk I/O" in text:
                why = f"{text}; check {self.directory} is writable and still there"
            else:
                raise
            raise StoreError(f"results store {self.path}: cannot write: {why}") from None

    def _migrate(self) -> None:
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise VirtbenchError(
                f"{self.path}: schema version {version} is newer than this virtbench "
                f"({SCHEMA_VERSION}); upgrade virtbench"
            )
        for v in range(version + 1, SCHEMA_VERSION + 1):
            with self.db:
                self.db.execute("BEGIN")
                for stmt in _MIGRATIONS[v].split(";"):
                    if stmt.strip():
                        self.db.execute(stmt)
                self.db.execute(f"PRAGMA user_version = {v}")

    def close(self) -> None:
        self.db.close()

    # --- runs ----------------------------------------------------------------------------
    def create_run(self, run_id: str, name: str, argv: list[str], spec: dict[str, Any]) -> None:
        with self._writing():
            self.db.execute(
                "INSERT INTO runs (id, name, created, status, argv, spec) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (run_id, name, time.time(), "running", json.dumps(argv), json.dumps(spec)),
            )

    def set_environment(self, run_id: str, env: dict[str, Any]) -> None:
        with self._writing():
            self.db.execute(
                "UPDATE runs SET environment = ? WHERE id = ?", (json.dumps(env), run_id)
            )

    def add_artifact(self, run_id: str, artifact: dict[str, Any]) -> None:
        row = self.db.execute("SELECT artifacts FROM runs WHERE id = ?", (run_id,)).fetchone()
        arts = [a for a in json.loads(row[0]) if a.get("digest") != artifact.get("digest")]
        arts.append(artifact)
        with self._writing():
            self.db.execute(
                "UPDATE runs SET artifacts = ? WHERE id = ?", (json.dumps(arts), run_id)
            )

    def finish_run(self, run_id: str, status: str) -> None:
        with self._writing():
            self.db.execute(
                "UPDATE runs SET status = ?, finished = ? WHERE id = ?",
                (status, time.time(), run_id),
            )

    def reopen_run(self, run_id: str) -> None:
        """An interrupted or failed run goes on (`run --resume`): running again."""
        with self._writing():
            self.db.execute(
                "UPDATE runs SET status = 'running', finished = NULL WHERE id = ?", (run_id,)
            )

    def runs(self) -> list[RunRecord]:
        rows = self.db.execute("SELECT * FROM runs ORDER BY created").fetchall()
        return [self._run(r) for r in rows]

    def run(self, run_id: str) -> RunRecord:
        """A run by id; "latest" is the one started last."""
        if run_id == "latest":
            q = "SELECT * FROM runs ORDER BY created DESC LIMIT 1"
            row = self.db.execute(q).fetchone()
            if row is None:
                raise VirtbenchError(f"no runs in {self.path}: nothing is 'latest'")
            return self._run(row)
        row = self.db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            known = [r.id for r in self.runs()][-5:]
            hint = f" (recent: {', '.join(known)})" if known else " (the store is empty)"
            raise VirtbenchError(f"run {run_id!r} not found in {self.path}{hint}")
        return self._run(row)

    @staticmethod
    def _run(r: sqlite3.Row) -> RunRecord:
        return RunRecord(
            id=r["id"],
            name=r["name"],
            created=r["created"],
            finished=r["finished"],
            status=r["status"],
            argv=json.loads(r["argv"]),
            spec=json.loads(r["spec"]),
            environment=json.loads(r["environment"]),
            artifacts=json.loads(r["artifacts"]),
        )

    # --- samples, series, events ---------------------------------------------------------------
    def add_sample(self, run_id: str, s: Sample) -> None:
        """Insert and commit one sample (so a crash loses nothing measured)."""
        d = asdict(s)
        d["params"] = json.dumps(d["params"], sort_keys=True)
        d["warmup"], d["emulated"] = int(s.warmup), int(s.emulated)
        cols = ", ".join(["run_id", *d])
        marks = ", ".join("?" * (len(d) + 1))
        with self._lock, self._writing():
            self.db.execute(f"INSERT INTO samples ({cols}) VALUES ({marks})", (run_id, *d.values()))

    def samples(self, run_id: str) -> list[Sample]:
        rows = self.db.execute("SELECT * FROM samples WHERE run_id = ? ORDER BY id", (run_id,))
        return [self._sample(r) for r in rows]

    @staticmethod
    def _sample(r: sqlite3.Row) -> Sample:
        d = dict(r)
        d.pop("id"), d.pop("run_id")
        d["params"] = json.loads(d["params"])
        d["warmup"], d["emulated"] = bool(d["warmup"]), bool(d["emulated"])
        return Sample(**d)

    def discard_samples(self, run_id: str, keep: Callable[[Sample], bool]) -> int:
        """Delete the run's samples `keep` rejects, in one transaction; how many went."""
        rows = self.db.execute("SELECT * FROM samples WHERE run_id = ?", (run_id,)).fetchall()
        gone = [r["id"] for r in rows if not keep(self._sample(r))]
        with self._lock, self._writing(), self.db:
            self.db.execute("BEGIN")
            self.db.executemany("DELETE FROM samples WHERE id = ?", [(i,) for i in gone])
        return len(gone)

    def add_unit(self, run_id: str, experiment: str, key: str) -> None:
        """Record that one measurement unit (an experiment's own key) finished."""
        with self._lock, self._writing():
            self.db.execute(
                "INSERT OR REPLACE INTO units (run_id, experiment, key, t) VALUES (?, ?, ?, ?)",
                (run_id, experiment, key, time.time()),
            )

    def units(self, run_id: str) -> set[tuple[str, str]]:
        q = "SELECT experiment, key FROM units WHERE run_id = ?"
        return {(r[0], r[1]) for r in self.db.execute(q, (run_id,))}

    def count_samples(self, run_id: str) -> int:
        q = "SELECT COUNT(*) FROM samples WHERE run_id = ? AND warmup = 0"
        return self.db.execute(q, (run_id,)).fetchone()[0]

    def add_series(self, run_id: str, points: list[tuple[str, float, float]]) -> None:
        with self._lock, self._writing(), self.db:
            self.db.execute("BEGIN")
            self.db.executemany(
                "INSERT INTO series (run_id, name, t, value) VALUES (?, ?, ?, ?)",
                [(run_id, n, t, v) for n, t, v in points],
            )

    def series(self, run_id: str) -> Iterator[tuple[str, float, float]]:
        q = "SELECT name, t, value FROM series WHERE run_id = ? ORDER BY t"
        yield from self.db.execute(q, (run_id,))

    def add_event(self, run_id: str, level: str, message: str) -> None:
        with self._writing():
            self.db.execute(
                "INSERT INTO events (run_id, t, level, message) VALUES (?, ?, ?, ?)",
                (run_id, time.time(), level, message),
            )

    def events(self, run_id: str) -> list[tuple[float, str, str]]:
        q = "SELECT t, level, message FROM events WHERE run_id = ? ORDER BY t"
        return [tuple(r) for r in self.db.execute(q, (run_id,))]
