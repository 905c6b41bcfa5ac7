"""The results store's schema, one migration per version, written in SQLite's words
(backend.py says them in each dialect).

Schema history (SQLite: PRAGMA user_version; PostgreSQL: table virtbench_meta):
  1  runs, samples, series (host time series), events (warnings, skips, guard stops)
  2  units: the measurements of a run that finished (what `run --resume` skips)
  3  fleets: samples.host, runs.host (the host a sample was measured on and a run ran on;
     '' is this machine, not a fleet run) and runs.fleet (the fleet run it belongs to)
  4  frames: a run's samples as columns (frame.py), kept for the reading commands with
     the fingerprint of the samples they were made from; remade when those change.
     Index samples_run_id: that fingerprint (count, first and last id) without a scan
     of the wider index
"""

from __future__ import annotations

SCHEMA_VERSION = 4

MIGRATIONS: dict[int, str] = {
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
    3: """
    ALTER TABLE samples ADD COLUMN host TEXT NOT NULL DEFAULT '';
    ALTER TABLE runs ADD COLUMN host TEXT NOT NULL DEFAULT '';
    ALTER TABLE runs ADD COLUMN fleet TEXT NOT NULL DEFAULT '';
    """,
    4: """
    CREATE TABLE frames (
        run_id      TEXT PRIMARY KEY REFERENCES runs(id),
        fingerprint TEXT NOT NULL,
        data        BLOB NOT NULL
    );
    CREATE INDEX samples_run_id ON samples(run_id, id);
    """,
}


def statements(script: str) -> list[str]:
    """A migration's statements (none of them holds a `;` of its own)."""
    return [s.strip() for s in script.split(";") if s.strip()]
