"""The results store's behaviour, the same on both backends: SQLite in a results directory
and PostgreSQL on a real server these tests start (tests/pgserver.py). Every test taking
`store` or `location` runs on each; the PostgreSQL-only ones follow (connection errors, many
writers, migrations racing, a server going away)."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from tests import pgserver
from tests.conftest import need
from tests.fakerun import fake_run
from tests.unit.test_store import (  # noqa: F401 (collected again here, with this `store`)
    sample,
    test_discard_samples_removes_only_what_keep_rejects,
    test_series_and_events,
    test_unknown_run_names_recent_ones,
)

from virtbench.errors import StoreError, VirtbenchError
from virtbench.host import state
from virtbench.report import export
from virtbench.store import SCHEMA_VERSION, Store, open_store
from virtbench.store.backend import Backend, SqliteBackend
from virtbench.store.migrations import MIGRATIONS, statements

pytestmark = [pytest.mark.root, pytest.mark.slow]


@pytest.fixture(scope="session")
def pg() -> Iterator[pgserver.PgServer]:
    why = pgserver.available()
    need(why is None, f"no PostgreSQL server for the store tests: {why}")
    with pgserver.running() as server:
        yield server


@pytest.fixture(params=["sqlite", "postgresql"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new, empty store location: a results directory, or a fresh database's URL."""
    if request.param == "sqlite":
        return str(tmp_path / "results")
    return request.getfixturevalue("pg").database()


@pytest.fixture
def opened(location: str) -> Iterator[list[Store]]:
    """Stores a test opens at `location` (open_store), closed after it."""
    stores: list[Store] = []
    yield stores
    for st in stores:
        st.close()


def _open(opened: list[Store], location: str) -> Store:
    st = open_store(location, alive=state.is_alive)
    opened.append(st)
    return st


@pytest.fixture
def store(location: str, opened: list[Store]) -> Store:
    return _open(opened, location)


def _backend(location: str) -> Backend:
    if location.startswith("postgresql://"):
        from virtbench.store.postgres import PgBackend

        return PgBackend(location)
    Path(location).mkdir(parents=True, exist_ok=True)
    return SqliteBackend(Path(location) / "virtbench.sqlite")


# --- the same on both -------------------------------------------------------------------------
def test_roundtrip_and_commit_per_sample(store: Store, location: str, opened: list[Store]):
    store.create_run("abc123", "t", ["virtbench"], {"runtimes": ["crun"]})
    store.add_sample("abc123", sample(1.5, params={"network": "none"}))
    store.add_sample("abc123", sample(None, error="boom", warmup=True))
    other = _open(opened, location)  # another connection sees both: each was committed
    assert other.count_samples("abc123") == 1 and len(other.samples("abc123")) == 2
    got = store.samples("abc123")
    assert got[0].value == 1.5 and got[0].params == {"network": "none"}
    assert got[1].value is None and got[1].error == "boom" and got[1].warmup is True
    store.finish_run("abc123", "completed")
    assert other.run("abc123").status == "completed" and other.run("latest").id == "abc123"
    # 8-byte floats on both (PostgreSQL's REAL would round a Unix time to ~2 minutes)
    store.add_sample("abc123", sample(1 + 1e-12, t=1795528138.1723466))
    last = store.samples("abc123")[-1]
    assert (last.value, last.t) == (1 + 1e-12, 1795528138.1723466)


def test_schema_version_and_newer_database_is_refused(store: Store, location: str):
    store.close()
    db = _backend(location)
    try:
        assert db.version() == SCHEMA_VERSION
        db.set_version(SCHEMA_VERSION + 1)
    finally:
        db.close()
    with pytest.raises(VirtbenchError, match="newer than this virtbench"):
        open_store(location)


def test_version_2_store_migrates_and_keeps_its_runs(location: str, opened: list[Store]):
    db = _backend(location)  # a store written before fleets, step by step as it was then
    try:
        with db.transaction(migrating=True):
            for v in (1, 2):
                for stmt in statements(MIGRATIONS[v]):
                    db.execute(db.ddl(stmt))
            db.set_version(2)
        db.execute(
            "INSERT INTO runs (id, name, created, status, spec) VALUES (?, ?, ?, ?, ?)",
            ("old222", "o", 1.0, "interrupted", "{}"),
        )
    finally:
        db.close()
    st = _open(opened, location)
    run = st.run("old222")
    assert (run.status, run.host, run.fleet) == ("interrupted", "", "")
    st.add_unit("old222", "boot", "k")
    st.add_sample("old222", sample(1.0))
    assert st.samples("old222")[0].host == ""
    assert _open(opened, location).units("old222") == {("boot", "k")}  # migrated once


def test_direction_is_constrained(store: Store):
    store.create_run("abc123", "t", [], {})
    with pytest.raises(store._db.integrity_errors):
        store.add_sample("abc123", sample(1.0, direction="sideways"))
    store.add_sample("abc123", sample(1.0))  # and the store goes on
    assert len(store.samples("abc123")) == 1


def test_units_artifacts_and_reopen(store: Store):
    store.create_run("abc123", "t", [], {})
    store.set_environment("abc123", {"kernel": "6.1"})
    art = {"name": "rootfs", "digest": "a" * 64, "disk_bytes": 1}
    store.add_artifact("abc123", art)
    store.add_artifact("abc123", art)  # once per digest
    store.add_series("abc123", [])
    store.add_unit("abc123", "boot", '["crun", 0, "hello"]')
    store.add_unit("abc123", "boot", '["crun", 0, "hello"]')  # twice is once
    assert store.units("abc123") == {("boot", '["crun", 0, "hello"]')}
    store.finish_run("abc123", "interrupted")
    with state.holding("abc123") as held:  # a reopened run is running while its process lives
        assert held
        store.reopen_run("abc123")
        run = store.run("abc123")
    assert (run.status, run.finished, run.environment) == ("running", None, {"kernel": "6.1"})
    assert run.artifacts == [art]
    assert store.run("abc123").status == "crashed"  # and crashed once nobody holds its lock


@pytest.mark.parametrize("source", ["sqlite", "postgresql"])
def test_import_run_between_backends(store: Store, source: str, tmp_path: Path, request):
    """A host's run merged into the store, from either kind; a re-merge replaces it."""
    location = (
        str(tmp_path / "node1") if source == "sqlite" else request.getfixturevalue("pg").database()
    )
    src = open_store(location)
    try:
        fake_run(src, "abc123", {"crun": 1.0}, experiments=("boot", "throughput"))
        src.add_unit("abc123", "boot", "k")
        for _ in range(2):
            rec = store.import_run(src, "abc123", host="node1", fleet="f00001")
        assert (
            (rec.host, rec.fleet)
            == ("node1", "f00001")
            == (
                store.run("abc123").host,
                store.run("abc123").fleet,
            )
        )
        assert store.samples("abc123") == [replace(s, host="node1") for s in src.samples("abc123")]
        assert list(store.series("abc123")) == list(src.series("abc123"))
        assert store.events("abc123") == src.events("abc123")
        assert store.units("abc123") == {("boot", "k")}
        assert store.run("abc123").environment == src.run("abc123").environment
        with pytest.raises(VirtbenchError, match="already holds a different run"):
            store.import_run(src, "abc123", host="node2")
        assert {s.host for s in store.samples("abc123")} == {"node1"}
    finally:
        src.close()


def test_export_validates(store: Store):
    import jsonschema

    fake_run(store, "abc123", {"crun": 1.0, "runc": 1.2}, experiments=("boot", "throughput"))
    validator = jsonschema.Draft202012Validator(export.schema())
    recs = list(export.lines(store, "abc123"))
    for rec in recs:
        validator.validate(rec)
    samples = store.samples("abc123")
    figures = {(s.metric, s.workload) for s in samples}  # each declared once
    assert len(recs) == 1 + len(figures) + len(samples) + len(store.events("abc123"))
    assert {(r["metric"], r["workload"]) for r in recs if r["record"] == "metric"} == figures


def test_a_site_is_built_from_either_store_by_worker_processes(
    store: Store, location: str, tmp_path: Path
):
    """Each worker opens the store itself (a PostgreSQL URL with its password, as given)."""
    from virtbench import site

    for i in range(3):
        fake_run(store, f"site0{i}", {"crun": 1.0, "runc": 1.2}, n=8, seed=i)
    built = site.build(store, location, tmp_path / "site", jobs=2)
    assert built.made == ["site00", "site01", "site02"] and built.runs == 3
    assert (tmp_path / "site" / "runs" / "site02.html").is_file()
    assert site.build(store, location, tmp_path / "site", jobs=2).written == []


def test_concurrent_writes_from_two_threads(store: Store):
    """The host sampler's thread writes series while the main thread writes samples."""
    store.create_run("abc123", "t", [], {})
    errors: list[BaseException] = []

    def sampler() -> None:
        try:
            for i in range(100):
                store.add_series("abc123", [("host.cpu_idle_pct", float(i), 1.0)] * 3)
                store.add_event("abc123", "info", f"tick {i}")
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    t = threading.Thread(target=sampler)
    t.start()
    for rep in range(100):
        store.add_sample("abc123", sample(float(rep), repetition=rep))
        if rep % 25 == 0:
            store.discard_samples("abc123", lambda s: True)
            store.add_unit("abc123", "boot", str(rep))
    t.join()
    assert not errors
    assert [s.repetition for s in store.samples("abc123")] == list(range(100))
    assert len(list(store.series("abc123"))) == 300 and len(store.events("abc123")) == 100
    assert len(store.units("abc123")) == 4


# --- PostgreSQL only ------------------------------------------------------------------------
def test_hosts_write_one_database_at_once(pg: pgserver.PgServer):
    """Fleet hosts open a new database together (one migrates, the others wait) and each
    writes its own run at once."""
    url = pg.database()
    stores: list[Store] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def host(n: int) -> None:
        try:
            st = open_store(url)
            with lock:
                stores.append(st)
            rid = f"host{n:02d}"
            st.create_run(rid, "t", [], {}, host=f"node{n}", fleet="f00001")
            for rep in range(50):
                st.add_sample(rid, sample(float(rep), repetition=rep))
            st.finish_run(rid, "completed")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=host, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert not errors, errors
        st = stores[0]
        assert sorted(r.id for r in st.runs()) == [f"host{n:02d}" for n in range(4)]
        for n in range(4):
            got = st.samples(f"host{n:02d}")
            assert len(got) == 50 and {s.host for s in got} == {f"node{n}"}
    finally:
        for st in stores:
            st.close()


def test_unreachable_or_refused_login_is_one_line_without_the_password(pg: pgserver.PgServer):
    url = pg.database()
    db = url.rsplit("/", 1)[1]
    cases = {
        pg.url(db, password="wrong-secret"): "password authentication failed",
        pg.url(db, password="wrong-secret", port=pgserver._free_port()): "connection refused",
        pg.url("nonesuch", password="wrong-secret"): "",
        url.replace("@", "@x", 1).replace(pg.password, "wrong-secret") + "?foo=1": "invalid URL",
    }
    for bad, reason in cases.items():
        with pytest.raises(VirtbenchError) as exc:
            open_store(bad)
        text = str(exc.value)
        assert "\n" not in text and "wrong-secret" not in text and reason in text, text
        assert text.startswith(f"--store postgresql://{pgserver.USER}@"), text


def test_a_database_of_something_else_is_refused(pg: pgserver.PgServer):
    import psycopg

    url = pg.database()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE runs (x int)")
    with pytest.raises(VirtbenchError, match="not a virtbench results database"):
        open_store(url)


def test_a_server_that_goes_away_is_a_store_error():
    why = pgserver.available()
    need(why is None, f"no PostgreSQL server for the store tests: {why}")
    with pgserver.running() as server:
        st = open_store(server.database())
        st.create_run("abc123", "t", [], {})
        assert server.proc is not None
        server.proc.send_signal(signal.SIGINT)  # fast shutdown: ends our session too
        server.proc.wait(timeout=30)
        time.sleep(0.2)
        with pytest.raises(StoreError, match="cannot write") as exc:
            st.add_sample("abc123", sample(1.0))
        assert server.password not in str(exc.value) and "\n" not in str(exc.value)
        with pytest.raises(VirtbenchError, match="cannot read"):
            st.samples("abc123")
        st.close()
