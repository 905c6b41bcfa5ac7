import sqlite3
from pathlib import Path

import pytest

from virtbench.errors import VirtbenchError
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


def test_unknown_run_names_recent_ones(tmp_path: Path):
    st = Store(tmp_path)
    with pytest.raises(VirtbenchError, match="store is empty"):
        st.run("zzz999")
    st.create_run("abc123", "t", [], {})
    with pytest.raises(VirtbenchError, match="recent: abc123"):
        st.run("zzz999")


def test_series_and_events(tmp_path: Path):
    st = Store(tmp_path)
    st.create_run("abc123", "t", [], {})
    st.add_series("abc123", [("host.cpu_idle_pct", 1.0, 50.0), ("host.cpu_idle_pct", 2.0, 60.0)])
    assert [v for _, _, v in st.series("abc123")] == [50.0, 60.0]
    st.add_event("abc123", "warning", "guard")
    assert st.events("abc123")[0][1:] == ("warning", "guard")


def test_version_1_store_gains_units_and_keeps_its_runs(tmp_path: Path):
    """A store written before `run --resume` existed opens, migrates and can be resumed."""
    from virtbench.store import _MIGRATIONS

    db = sqlite3.connect(tmp_path / "virtbench.sqlite")
    db.executescript(_MIGRATIONS[1] + "PRAGMA user_version = 1;")
    db.execute("INSERT INTO runs (id, name, created, status, spec) VALUES "
               "('old123', 'o', 1, 'interrupted', '{}')")  # fmt: skip
    db.commit()
    db.close()
    st = Store(tmp_path)
    assert st.run("old123").status == "interrupted"
    assert st.units("old123") == set()
    st.add_unit("old123", "boot", '["crun", 0, "hello"]')
    st.add_unit("old123", "boot", '["crun", 0, "hello"]')  # twice is once
    assert st.units("old123") == {("boot", '["crun", 0, "hello"]')}
    st.reopen_run("old123")
    assert st.run("old123").status == "running" and st.run("old123").finished is None


def test_discard_samples_removes_only_what_keep_rejects(tmp_path: Path):
    st = Store(tmp_path)
    st.create_run("abc123", "t", ["virtbench"], {})
    for rep in range(4):
        st.add_sample("abc123", sample(float(rep), repetition=rep))
    assert st.discard_samples("abc123", lambda s: s.repetition != 2) == 1
    assert [s.repetition for s in st.samples("abc123")] == [0, 1, 3]
    assert st.discard_samples("abc123", lambda s: True) == 0


def test_resume_warns_when_the_artifact_was_built_differently(tmp_path):
    from virtbench.runner import artifact_event

    store = Store(tmp_path)
    store.create_run("aaaaa1", "x", ["virtbench"], {})
    old = {"name": "rootfs-servers", "digest": "a" * 64, "disk_bytes": 1}
    store.add_artifact("aaaaa1", old)
    artifact_event(store, store.run("aaaaa1"), old)
    assert store.events("aaaaa1") == []  # the same artifact: nothing to say
    artifact_event(store, store.run("aaaaa1"), {**old, "digest": "b" * 64})
    [(_, level, msg)] = store.events("aaaaa1")
    assert level == "warning" and f"is now {'b' * 16} (was {'a' * 16})" in msg
