import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest

from virtbench.errors import VirtbenchError
from virtbench.host import state
from virtbench.store import SCHEMA_VERSION, Sample, Store


def sample(value, **kw) -> Sample:
    base = dict(
        experiment="boot",
        metric="boot.spawn_to_exit",
        value=value,
        unit="ms",
        direction="lower",
        runtime="crun",
        workload="hello",
        repetition=0,
    )
    return Sample(**{**base, **kw})


def test_roundtrip_and_commit_per_sample(tmp_path: Path):
    st = Store(tmp_path)
    st.create_run("abc123", "t", ["virtbench"], {"runtimes": ["crun"]})
    st.add_sample("abc123", sample(1.5, params={"network": "none"}))
    st.add_sample("abc123", sample(None, error="boom", warmup=True))
    # another connection sees both rows at once: each sample is committed when added
    other = sqlite3.connect(tmp_path / "virtbench.sqlite")
    assert other.execute("SELECT COUNT(*) FROM samples").fetchone()[0] == 2
    got = st.samples("abc123")
    assert got[0].value == 1.5 and got[0].params == {"network": "none"}
    assert got[1].value is None and got[1].error == "boom" and got[1].warmup is True
    assert st.count_samples("abc123") == 1
    st.finish_run("abc123", "completed")
    assert st.run("abc123").status == "completed"
    assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_schema_version_and_newer_database_is_refused(tmp_path: Path):
    Store(tmp_path).close()
    db = sqlite3.connect(tmp_path / "virtbench.sqlite")
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(VirtbenchError, match="newer than this virtbench"):
        Store(tmp_path)


def test_direction_is_constrained(tmp_path: Path):
    st = Store(tmp_path)
    st.create_run("abc123", "t", [], {})
    with pytest.raises(sqlite3.IntegrityError):
        st.add_sample("abc123", sample(1.0, direction="sideways"))


@pytest.fixture
def store(tmp_path: Path) -> Store:
    """A SQLite store (tests/integration/test_store_pg.py runs the tests taking it on
    PostgreSQL too)."""
    return Store(tmp_path, alive=state.is_alive)


def test_unknown_run_names_recent_ones(store: Store):
    st = store
    with pytest.raises(VirtbenchError, match="store is empty"):
        st.run("zzz999")
    st.create_run("abc123", "t", [], {})
    with pytest.raises(VirtbenchError, match="recent: abc123"):
        st.run("zzz999")


def test_series_and_events(store: Store):
    st = store
    st.create_run("abc123", "t", [], {})
    st.add_series("abc123", [("host.cpu_idle_pct", 1.0, 50.0), ("host.cpu_idle_pct", 2.0, 60.0)])
    assert [v for _, _, v in st.series("abc123")] == [50.0, 60.0]
    st.add_event("abc123", "warning", "guard")
    assert st.events("abc123")[0][1:] == ("warning", "guard")


def test_version_1_store_gains_units_and_keeps_its_runs(tmp_path: Path):
    """A store written before `run --resume` existed opens, migrates and can be resumed."""
    from virtbench.store import MIGRATIONS as _MIGRATIONS

    db = sqlite3.connect(tmp_path / "virtbench.sqlite")
    db.executescript(_MIGRATIONS[1] + "PRAGMA user_version = 1;")
    db.execute(
        "INSERT INTO runs (id, name, created, status, spec) VALUES "
        "('old123', 'o', 1, 'interrupted', '{}')"
    )
    db.commit()
    db.close()
    st = Store(tmp_path, alive=state.is_alive)
    assert st.run("old123").status == "interrupted"
    assert st.units("old123") == set()
    st.add_unit("old123", "boot", '["crun", 0, "hello"]')
    st.add_unit("old123", "boot", '["crun", 0, "hello"]')  # twice is once
    assert st.units("old123") == {("boot", '["crun", 0, "hello"]')}
    with state.holding("old123") as held:  # a resume holds the run's lock
        assert held
        st.reopen_run("old123")
        assert st.run("old123").status == "running" and st.run("old123").finished is None
    assert st.run("old123").status == "crashed"  # nobody holds it: its process died


def test_a_running_run_whose_lock_is_free_reads_crashed_until_a_process_holds_it(store: Store):
    """`list` and `show` see a run that died without a word (kill -9, a full disk that
    kept its last write out) as crashed; the store's row is left as it was."""
    store.create_run("dead01", "n", ["run"], {})
    assert store.run("dead01").status == "crashed"
    with state.holding("dead01"):
        assert store.run("dead01").status == "running"
        assert [r.status for r in store.runs() if r.id == "dead01"] == ["running"]


def test_a_store_told_nothing_of_locks_reads_a_run_as_stored(tmp_path: Path):
    """The store reads no host lock itself: without `alive` a run stored as running reads
    running (the CLI gives it the host's locks)."""
    st = Store(tmp_path)
    st.create_run("dead02", "n", ["run"], {})
    assert st.run("dead02").status == "running"
    assert Store(tmp_path, alive=lambda run_id: False).run("dead02").status == "crashed"


def test_discard_samples_removes_only_what_keep_rejects(store: Store):
    st = store
    st.create_run("abc123", "t", ["virtbench"], {})
    for rep in range(4):
        st.add_sample("abc123", sample(float(rep), repetition=rep))
    assert st.discard_samples("abc123", lambda s: s.repetition != 2) == 1
    assert [s.repetition for s in st.samples("abc123")] == [0, 1, 3]
    assert st.discard_samples("abc123", lambda s: True) == 0


def test_resume_warns_when_the_artifact_was_built_differently(tmp_path):
    from virtbench.run.resume import artifact_event

    store = Store(tmp_path)
    store.create_run("aaaaa1", "x", ["virtbench"], {})
    old = {"name": "rootfs-servers", "digest": "a" * 64, "disk_bytes": 1}
    store.add_artifact("aaaaa1", old)
    artifact_event(store, store.run("aaaaa1"), old)
    assert store.events("aaaaa1") == []  # the same artifact: nothing to say
    artifact_event(store, store.run("aaaaa1"), {**old, "digest": "b" * 64})
    [(_, level, msg)] = store.events("aaaaa1")
    assert level == "warning" and f"is now {'b' * 16} (was {'a' * 16})" in msg


def _version_2_store(directory: Path) -> None:
    """A store as virtbench wrote it before fleets: schema 2, a run with a sample."""
    from virtbench.store import MIGRATIONS as _MIGRATIONS

    db = sqlite3.connect(directory / "virtbench.sqlite")
    db.executescript(_MIGRATIONS[1] + _MIGRATIONS[2] + "PRAGMA user_version = 2;")
    db.execute(
        "INSERT INTO runs (id, name, created, status, spec) VALUES "
        "('old222', 'o', 1, 'completed', '{}')"
    )
    db.execute(
        "INSERT INTO samples (run_id, experiment, metric, value, unit, direction, "
        "runtime, workload, repetition, t) VALUES ('old222', 'boot', 'm', 2.5, 'ms', "
        "'lower', 'crun', 'hello', 0, 1)"
    )
    db.commit()
    db.close()


def test_version_2_store_gains_hosts_and_keeps_its_runs(tmp_path: Path):
    _version_2_store(tmp_path)
    st = Store(tmp_path)
    run = st.run("old222")
    assert (run.host, run.fleet, run.status) == ("", "", "completed")
    [s] = st.samples("old222")
    assert (s.host, s.value, s.runtime) == ("", 2.5, "crun")
    st.close()
    db = sqlite3.connect(tmp_path / "virtbench.sqlite")
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4


def test_samples_carry_their_runs_host_unless_they_have_one(tmp_path: Path):
    st = Store(tmp_path)
    st.create_run("abc123", "t", [], {}, host="node1", fleet="f00001")
    st.add_sample("abc123", sample(1.0))
    st.add_sample("abc123", sample(2.0, host="node2"))
    assert [s.host for s in st.samples("abc123")] == ["node1", "node2"]
    run = st.run("abc123")
    assert (run.host, run.fleet) == ("node1", "f00001")
    st.create_run("loc123", "t", [], {})
    st.add_sample("loc123", sample(1.0))
    assert st.samples("loc123")[0].host == ""


def _full_run(st: Store, run_id: str = "abc123") -> None:
    from tests.fakerun import fake_run

    fake_run(st, run_id, {"crun": 1.0, "runc": 1.1}, experiments=("boot", "throughput"))
    st.add_unit(run_id, "boot", '["crun", 0, "hello"]')


def test_import_run_copies_everything_and_labels_the_host(tmp_path: Path):
    src, dst = Store(tmp_path / "node1"), Store(tmp_path / "merged")
    _full_run(src)
    got = dst.import_run(src, "latest", host="node1", fleet="f00001")
    assert got.id == "abc123" and (got.host, got.fleet) == ("node1", "f00001")
    a, b = src.run("abc123"), dst.run("abc123")
    assert (b.host, b.fleet) == ("node1", "f00001")
    strip = ("host", "fleet")
    assert {k: v for k, v in vars(a).items() if k not in strip} == {
        k: v for k, v in vars(b).items() if k not in strip
    }
    assert [replace(s, host="node1") for s in src.samples("abc123")] == dst.samples("abc123")
    assert list(src.series("abc123")) == list(dst.series("abc123"))
    assert src.events("abc123") == dst.events("abc123")
    assert dst.units("abc123") == {("boot", '["crun", 0, "hello"]')}
    assert dst.count_samples("abc123") == src.count_samples("abc123")


def test_import_run_again_replaces_it_and_another_hosts_run_is_refused(tmp_path: Path):
    src, dst = Store(tmp_path / "node1"), Store(tmp_path / "merged")
    _full_run(src)
    dst.import_run(src, "abc123", host="node1")
    n = len(dst.samples("abc123"))
    src.add_event("abc123", "info", "later")
    dst.import_run(src, "abc123", host="node1")  # a re-merge: replaced whole, not doubled
    assert len(dst.samples("abc123")) == n and dst.events("abc123")[-1][2] == "later"
    assert len(list(dst.series("abc123"))) == len(list(src.series("abc123")))
    with pytest.raises(VirtbenchError, match="already holds a different run abc123") as exc:
        dst.import_run(src, "abc123", host="node2")
    assert "\n" not in str(exc.value)
    assert {s.host for s in dst.samples("abc123")} == {"node1"}  # untouched
    other = Store(tmp_path / "node2")
    _full_run(other)  # the same id, by chance, on another host at another time
    with pytest.raises(VirtbenchError, match="from node1"):
        dst.import_run(other, "abc123", host="node2")
    with pytest.raises(VirtbenchError, match="own store"):
        src.import_run(src, "abc123", host="node1")


def test_exports_carry_the_host(tmp_path: Path):
    import csv
    import io
    import json

    import jsonschema

    from virtbench.report import export

    src, dst = Store(tmp_path / "node1"), Store(tmp_path / "merged")
    _full_run(src)
    dst.import_run(src, "abc123", host="node1", fleet="f00001")
    out = io.StringIO()
    export.write_ndjson(dst, "abc123", out)
    recs = [json.loads(line) for line in out.getvalue().splitlines()]
    validator = jsonschema.Draft202012Validator(export.schema())
    for rec in recs:
        validator.validate(rec)
    assert recs[0]["host"] == "node1" and recs[0]["fleet"] == "f00001"
    assert {r["host"] for r in recs if r["record"] == "sample"} == {"node1"}
    assert not validator.is_valid({**recs[1], "host": None})
    out = io.StringIO()
    export.write_csv(dst, "abc123", out)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert "host" in export.SAMPLE_FIELDS and {r["host"] for r in rows} == {"node1"}


def test_open_store_picks_the_backend_from_the_location(tmp_path: Path):
    from virtbench.store import open_store

    st = open_store(tmp_path / "r")
    assert type(st) is Store and st.path == tmp_path / "r" / "virtbench.sqlite"
    assert type(open_store(str(tmp_path / "s"))) is Store
    with pytest.raises(VirtbenchError, match=r"mysql://\.\.\.: unknown kind of store"):
        open_store("mysql://u:secret@localhost/db")


def test_the_frame_follows_the_samples(tmp_path: Path):
    """A run's frame is kept in the store and read whole, and is made again when samples
    are added or discarded: it never shows what the samples no longer are."""
    from tests.fakerun import fake_run

    st = Store(tmp_path)
    rid = fake_run(st, "frm001", {"crun": 1.0, "runc": 1.1}, ("boot", "density"), n=6)
    stored = st._db.rows("SELECT fingerprint FROM frames WHERE run_id = ?", (rid,))
    assert stored, "finish_run made the frame"
    f = st.frame(rid)
    assert len(f) == len(st.samples(rid))
    assert f.samples() == st.samples(rid)
    st.add_sample(rid, Sample("boot", "extra", 1.5, "ms", "lower", "crun", "hello", 9))
    assert len(st.frame(rid)) == len(f) + 1 and st.frame(rid).samples()[-1].metric == "extra"
    gone = st.discard_samples(rid, lambda s: s.runtime != "runc")
    assert gone and set(st.frame(rid).distinct("runtime")) == {"crun"}
    assert st.frame(rid).samples() == st.samples(rid)
