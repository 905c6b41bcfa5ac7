"""`Store`: a run's samples, series, events and units, written as measured and read back
(as records, or as one frame per run for the reading commands), on any backend."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from virtbench.errors import StoreError, VirtbenchError
from virtbench.store.backend import Backend, Row, SqliteBackend
from virtbench.store.frame import COLUMNS, Frame
from virtbench.store.records import RunRecord, Sample

DB_NAME = "virtbench.sqlite"
_RUN_JSON = ("argv", "spec", "environment", "artifacts")  # runs' columns holding JSON


class Store:
    """A results store. `Store(directory)` is the SQLite database in a results directory;
    `open_store(location)` also reaches PostgreSQL. Safe to share between threads.

    `alive(run_id)`, where given, says whether a run of this host still has a process
    (its lock, host/state.py): a run stored as running that is not alive reads crashed."""

    location: str  # where it is, for messages: a path, or a URL without its password
    alive: Callable[[str], bool] | None = None

    def __init__(self, directory: Path, alive: Callable[[str], bool] | None = None) -> None:
        self.directory = directory
        self.alive = alive
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise VirtbenchError(f"--results {directory}: cannot create ({exc.strerror})") from None
        self.path = directory / DB_NAME
        try:
            self._attach(SqliteBackend(self.path))
        except sqlite3.DatabaseError as exc:
            raise VirtbenchError(f"{self.path}: not a virtbench results database ({exc})") from None

    def _attach(self, backend: Backend) -> None:
        """Use `backend` (connected) for everything, migrating its schema first."""
        self._db = backend
        self.location = backend.location
        self._hosts: dict[str, str] = {}  # run id -> its host, for add_sample's label
        self._frames: dict[tuple[str, str], Frame] = {}  # the last few read, by fingerprint
        self.said: set[tuple[str, str, str]] = set()  # events printed as they happened
        backend.migrate()

    def close(self) -> None:
        self._db.close()

    # --- runs ----------------------------------------------------------------------------
    def create_run(
        self,
        run_id: str,
        name: str,
        argv: list[str],
        spec: dict[str, Any],
        *,
        host: str = "",
        fleet: str = "",
    ) -> None:
        """A new run, running; `host` and `fleet` label a run on a fleet host."""
        self._db.execute(
            "INSERT INTO runs (id, name, created, status, argv, spec, host, fleet) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (run_id, name, time.time(), "running", json.dumps(argv), json.dumps(spec), host, fleet),
        )
        self._hosts[run_id] = host

    def set_environment(self, run_id: str, env: dict[str, Any]) -> None:
        self._db.execute("UPDATE runs SET environment = ? WHERE id = ?", (json.dumps(env), run_id))

    def add_artifact(self, run_id: str, artifact: dict[str, Any]) -> None:
        """Record an artifact the run uses (once per digest)."""
        with self._db.transaction():
            [row] = self._db.rows("SELECT artifacts FROM runs WHERE id = ?", (run_id,))
            arts = [
                a for a in json.loads(row["artifacts"]) if a.get("digest") != artifact.get("digest")
            ]
            arts.append(artifact)
            self._db.execute(
                "UPDATE runs SET artifacts = ? WHERE id = ?", (json.dumps(arts), run_id)
            )

    def finish_run(self, run_id: str, status: str) -> None:
        """The run ended with `status`; its frame is made now, so reading it is quick."""
        self._db.execute(
            "UPDATE runs SET status = ?, finished = ? WHERE id = ?", (status, time.time(), run_id)
        )
        with contextlib.suppress(VirtbenchError, sqlite3.Error, OSError):
            self.frame(run_id)  # a convenience: a reading command makes it if this cannot

    def reopen_run(self, run_id: str) -> None:
        """An interrupted or failed run goes on (`run --resume`): running again."""
        self._db.execute(
            "UPDATE runs SET status = 'running', finished = NULL WHERE id = ?", (run_id,)
        )

    def runs(self) -> list[RunRecord]:
        return [self._run(r) for r in self._db.rows("SELECT * FROM runs ORDER BY created")]

    def run(self, run_id: str) -> RunRecord:
        """A run by id; "latest" is the one started last."""
        if run_id == "latest":
            rows = self._db.rows("SELECT * FROM runs ORDER BY created DESC LIMIT 1")
            if not rows:
                raise VirtbenchError(f"no runs in {self.location}: nothing is 'latest'")
            return self._run(rows[0])
        rows = self._db.rows("SELECT * FROM runs WHERE id = ?", (run_id,))
        if not rows:
            known = [r.id for r in self.runs()][-5:]
            hint = f" (recent: {', '.join(known)})" if known else " (the store is empty)"
            raise VirtbenchError(f"run {run_id!r} not found in {self.location}{hint}")
        return self._run(rows[0])

    def _run(self, r: Row) -> RunRecord:
        """A run as stored, except that one of this host that the store says is running
        but whose lock nobody holds is crashed: its process died without saying so (a
        kill -9, a full disk that kept the last write out)."""
        d = dict(r)
        for key in _RUN_JSON:
            d[key] = json.loads(d[key])
        dead = self.alive is not None and not self.alive(d["id"])
        if d["status"] == "running" and not d.get("host") and dead:
            d["status"] = "crashed"
        return RunRecord(**d)

    # --- samples, series, events ---------------------------------------------------------------
    def add_sample(self, run_id: str, s: Sample) -> None:
        """Insert and commit one sample (so a crash loses nothing measured). A sample with
        no host of its own is labelled with its run's."""
        if not s.host:
            s = dataclasses.replace(s, host=self._run_host(run_id))
        self._insert_samples(run_id, [s])

    def _run_host(self, run_id: str) -> str:
        if run_id not in self._hosts:
            rows = self._db.rows("SELECT host FROM runs WHERE id = ?", (run_id,))
            self._hosts[run_id] = rows[0]["host"] if rows else ""
        return self._hosts[run_id]

    def _insert_samples(self, run_id: str, samples: list[Sample]) -> None:
        cols = ["run_id", *(f.name for f in dataclasses.fields(Sample))]
        marks = ", ".join("?" * len(cols))
        self._db.executemany(
            f"INSERT INTO samples ({', '.join(cols)}) VALUES ({marks})",
            [(run_id, *_sample_row(s).values()) for s in samples],
        )

    def samples(self, run_id: str) -> list[Sample]:
        rows = self._db.rows("SELECT * FROM samples WHERE run_id = ? ORDER BY id", (run_id,))
        return [self._sample(r) for r in rows]

    @staticmethod
    def _sample(r: Row) -> Sample:
        d = dict(r)
        d.pop("id"), d.pop("run_id")
        d["params"] = json.loads(d["params"])
        d["warmup"], d["emulated"] = bool(d["warmup"]), bool(d["emulated"])
        return Sample(**d)

    def frame(self, run_id: str) -> Frame:
        """The run's samples as columns. Kept in the store with a fingerprint of its
        samples (their first and last id): made from the rows once, then read whole
        until samples are added or removed. A store that cannot be written (read-only)
        still reads: the frame is then made each time."""
        fp = self.samples_fingerprint(run_id)
        kept = self._frames.get((run_id, fp))
        if kept is not None and self._frame_print(run_id) == fp:
            return kept  # a site's page reads its run twice and the run before once
        rows = self._db.rows("SELECT fingerprint, data FROM frames WHERE run_id = ?", (run_id,))
        if rows and rows[0]["fingerprint"] == fp:
            return self._kept(run_id, fp, Frame.from_bytes(bytes(rows[0]["data"])))
        cols = ", ".join(COLUMNS)
        made = Frame.from_rows(
            self._db.tuples(f"SELECT {cols} FROM samples WHERE run_id = ? ORDER BY id", (run_id,))
        )
        with contextlib.suppress(StoreError):
            self._db.execute(
                "INSERT INTO frames (run_id, fingerprint, data) VALUES (?, ?, ?) ON CONFLICT "
                "(run_id) DO UPDATE SET fingerprint = excluded.fingerprint, data = excluded.data",
                (run_id, fp, made.to_bytes()),
            )
        return self._kept(run_id, fp, made)

    def make_frames(self, run_ids: list[str]) -> None:
        """Make the frames of these runs that are missing or out of date (readers that
        must not write, such as a site's workers, then find them made)."""
        for run_id in run_ids:
            if self._frame_print(run_id) != self.samples_fingerprint(run_id):
                self.frame(run_id)

    def _frame_print(self, run_id: str) -> str | None:
        """The fingerprint the run's stored frame was made at (None: none stored)."""
        q = "SELECT fingerprint FROM frames WHERE run_id = ?"
        rows = self._db.rows(q, (run_id,))
        return str(rows[0]["fingerprint"]) if rows else None

    def _kept(self, run_id: str, fp: str, frame: Frame) -> Frame:
        """Keep the three frames read last (each page of a site reads its run's twice
        and the run before's once)."""
        self._frames[run_id, fp] = frame
        while len(self._frames) > 3:
            del self._frames[next(iter(self._frames))]
        return frame

    def samples_fingerprint(self, run_id: str) -> str:
        """The run's first and last sample id: samples are only ever added (a new id is
        above every id there is) or discarded (`discard_samples`, which drops the frame),
        so these change whenever the samples do, and the index finds them at once."""
        q = (
            "SELECT (SELECT MIN(id) FROM samples WHERE run_id = ?) AS lo, "
            "(SELECT MAX(id) FROM samples WHERE run_id = ?) AS hi"
        )
        r = self._db.rows(q, (run_id, run_id))[0]
        return f"{r['lo']}:{r['hi']}"

    def discard_samples(self, run_id: str, keep: Callable[[Sample], bool]) -> int:
        """Delete the run's samples `keep` rejects, in one transaction; how many went."""
        with self._db.transaction():
            rows = self._db.rows("SELECT * FROM samples WHERE run_id = ?", (run_id,))
            gone = [r["id"] for r in rows if not keep(self._sample(r))]
            self._db.executemany("DELETE FROM samples WHERE id = ?", [(i,) for i in gone])
            self._db.execute("DELETE FROM frames WHERE run_id = ?", (run_id,))
            self._frames.clear()
        return len(gone)

    def add_unit(self, run_id: str, experiment: str, key: str) -> None:
        """Record that one measurement unit (an experiment's own key) finished."""
        self._add_units(run_id, [(experiment, key, time.time())])

    def _add_units(self, run_id: str, units: list[tuple[str, str, float]]) -> None:
        self._db.executemany(
            "INSERT INTO units (run_id, experiment, key, t) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (run_id, experiment, key) DO UPDATE SET t = excluded.t",
            [(run_id, *u) for u in units],
        )

    def units(self, run_id: str) -> set[tuple[str, str]]:
        rows = self._db.rows("SELECT experiment, key FROM units WHERE run_id = ?", (run_id,))
        return {(r["experiment"], r["key"]) for r in rows}

    def count_samples(self, run_id: str) -> int:
        q = "SELECT COUNT(*) AS n FROM samples WHERE run_id = ? AND warmup = 0"
        return int(self._db.rows(q, (run_id,))[0]["n"])

    def add_series(self, run_id: str, points: list[tuple[str, float, float]]) -> None:
        """Host time series points (name, t, value), in one transaction."""
        self._db.executemany(
            "INSERT INTO series (run_id, name, t, value) VALUES (?, ?, ?, ?)",
            [(run_id, n, t, v) for n, t, v in points],
        )

    def series(self, run_id: str) -> Iterator[tuple[str, float, float]]:
        q = "SELECT name, t, value FROM series WHERE run_id = ? ORDER BY t"
        for r in self._db.rows(q, (run_id,)):
            yield r["name"], r["t"], r["value"]

    def add_event(self, run_id: str, level: str, message: str, said: bool = False) -> None:
        """Record an event; `said`: it was also printed as it happened (the tables
        printed at the end of that run then leave it out: said once)."""
        self._add_events(run_id, [(time.time(), level, message)])
        if said:
            self.said.add((run_id, level, message))

    def _add_events(self, run_id: str, events: list[tuple[float, str, str]]) -> None:
        self._db.executemany(
            "INSERT INTO events (run_id, t, level, message) VALUES (?, ?, ?, ?)",
            [(run_id, *e) for e in events],
        )

    def events(self, run_id: str) -> list[tuple[float, str, str]]:
        q = "SELECT t, level, message FROM events WHERE run_id = ? ORDER BY t"
        return [(r["t"], r["level"], r["message"]) for r in self._db.rows(q, (run_id,))]

    # --- fleets --------------------------------------------------------------------------
    def import_run(self, src: Store, run_id: str, host: str, fleet: str = "") -> RunRecord:
        """Copy run `run_id` whole from `src` (record, environment, artifacts, samples,
        series, events, units), labelling the run and every sample with `host` and `fleet`.

        A run id already here is refused, unless it is the same run of the same host (a
        re-merge): that replaces it whole. Either way it is one transaction."""
        run = src.run(run_id)
        if src is self:
            raise VirtbenchError(f"run {run.id}: cannot import a run into its own store")
        rec = dataclasses.replace(run, host=host, fleet=fleet)
        samples = [dataclasses.replace(s, host=host) for s in src.samples(run.id)]
        series = list(src.series(run.id))
        events = src.events(run.id)
        units = src._db.rows("SELECT experiment, key, t FROM units WHERE run_id = ?", (run.id,))
        with self._db.transaction():
            have = self._db.rows("SELECT host, created FROM runs WHERE id = ?", (run.id,))
            if have and (have[0]["host"], have[0]["created"]) != (host, run.created):
                raise VirtbenchError(
                    f"run {run.id} from {host or 'this host'}: {self.location} already holds "
                    f"a different run {run.id} (from {have[0]['host'] or 'this host'}); "
                    "not imported"
                )
            if have:
                for table in ("samples", "series", "events", "units"):
                    self._db.execute(f"DELETE FROM {table} WHERE run_id = ?", (run.id,))
                self._db.execute("DELETE FROM runs WHERE id = ?", (run.id,))
            row = asdict(rec)
            for key in _RUN_JSON:
                row[key] = json.dumps(row[key])
            marks = ", ".join("?" * len(row))
            self._db.execute(
                f"INSERT INTO runs ({', '.join(row)}) VALUES ({marks})", [*row.values()]
            )
            self._insert_samples(run.id, samples)
            self.add_series(run.id, series)
            self._add_events(run.id, events)
            self._add_units(run.id, [(u["experiment"], u["key"], u["t"]) for u in units])
        self._hosts[run.id] = host
        return rec


def _sample_row(s: Sample) -> dict[str, Any]:
    """A sample as the columns of its row (after run_id), in Sample's field order."""
    d = asdict(s)
    d["params"] = json.dumps(d["params"], sort_keys=True)
    d["warmup"], d["emulated"] = int(s.warmup), int(s.emulated)
    return d
