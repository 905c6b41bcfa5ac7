"""Fleet mode on real hosts: network namespaces with their own sshd, reached by Ansible
through an INI inventory; virtbench installed on each by `make setup`, results merged
here (or written to a real PostgreSQL server); a host killed mid-run."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests import pgserver
from tests.conftest import need
from tests.integration import fleethosts
from tests.integration.conftest import VIRTBENCH, cli, labelled

from virtbench.store import Store, open_store

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]


@pytest.fixture(scope="module")
def hosts(tmp_path_factory) -> Iterator[fleethosts.Hosts]:
    why = fleethosts.available()
    need(why is None, str(why))
    h = fleethosts.Hosts(tmp_path_factory.mktemp("fleet"), 2)
    try:
        yield h.start()
    finally:
        h.close()
        for name in h.names:  # whatever a killed host's run left: its own state directory
            env = {
                **os.environ,
                "VIRTBENCH_STATE_DIR": str(h.dir(name) / "state"),
                "VIRTBENCH_DATA_DIR": str(h.dir(name) / "data"),
            }
            subprocess.run([*VIRTBENCH, "clean"], env=env, capture_output=True, timeout=300)


def fleet_id(output: str) -> str:
    m = re.search(r"fleet ([a-z0-9]{6}) started", output)
    assert m, output
    return m.group(1)


def fleet_run(tmp_path: Path, *args: str, timeout: float = 1200) -> subprocess.CompletedProcess:
    return cli(
        "fleet", "run", *args, env={"VIRTBENCH_STATE_DIR": str(tmp_path / "state")}, timeout=timeout
    )


def test_two_hosts_boot_native_and_crun_merged_with_the_host_as_label(hosts, tmp_path):
    """The acceptance run: boot on native and crun on both hosts; each host's run comes back
    with its environment, every sample carries its host, and the report shows both hosts
    and compares them; nothing of either run is left on the machine."""
    inv = hosts.inventory(tmp_path / "hosts.ini")
    results = tmp_path / "results"
    res = fleet_run(
        tmp_path,
        "boot",
        "-i",
        str(inv),
        "--runtimes",
        "native,crun",
        "--workloads",
        "hello",
        "--runs",
        "3",
        "--warmups",
        "0",
        "--results",
        str(results),
    )
    assert res.returncode == 0, res.stdout + res.stderr
    fid = fleet_id(res.stdout)
    assert f"fleet {fid}: 2 of 2 hosts completed" in res.stdout
    store = Store(results)
    runs = {r.host: r for r in store.runs() if r.fleet == fid}
    assert set(runs) == {"h1", "h2"}
    for host, run in runs.items():
        assert run.status == "completed"
        assert run.environment.get("kernel") and run.environment.get("runtimes", {}).get("crun")
        samples = [s for s in store.samples(run.id) if s.metric == "boot.spawn_to_exit"]
        assert {s.host for s in samples} == {host}
        assert sorted((s.runtime, s.repetition) for s in samples) == sorted(
            (rt, r) for rt in ("native", "crun") for r in range(3)
        )
        assert all(s.value is not None and s.value > 0 for s in samples)
        assert not labelled(run.id)
    out = tmp_path / "fleet.html"
    rep = cli("report", fid, "-o", str(out), "--results", str(results))
    assert rep.returncode == 0, rep.stdout + rep.stderr
    text = out.read_text()
    assert f"Run {runs['h1'].id}: boot on h1" in text and f"Run {runs['h2'].id}: boot on h2" in text
    assert "Hosts compared" in text and "A = h1, B = h2: B against A" in text
    cmp = cli("compare", fid, "--hosts", "h1,h2", "--fail-on", "never", "--results", str(results))
    assert cmp.returncode == 0 and "time to run and exit (hello, crun)" in cmp.stdout, cmp.stdout
    listed = cli("list", "--results", str(results)).stdout
    assert all(f"h{i}" in listed for i in (1, 2)) and fid in listed
    # Installed once: the second fleet run finds the same source and does not unpack it.
    for h in hosts.names:
        assert (hosts.dir(h) / "virtbench" / ".fleet-source").is_file()
        assert (hosts.dir(h) / "virtbench" / ".venv" / "bin" / "virtbench").exists()


def _remote_samples(hosts: fleethosts.Hosts, host: str, fid: str) -> int:
    db = hosts.dir(host) / "virtbench" / "fleet-results" / fid / "virtbench.sqlite"
    if not db.exists():
        return 0
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
        try:
            q = "SELECT COUNT(*) FROM samples WHERE experiment = 'boot'"
            return con.execute(q).fetchone()[0]
        finally:
            con.close()
    except sqlite3.OperationalError:
        return 0


def _wait_orphans(hosts: fleethosts.Hosts, host: str) -> list[str]:
    """The host's virtbench runs that outlived its sshd, waited for (by the pid in each
    run's lock) until they end; their run ids."""
    runs = hosts.dir(host) / "state" / "runs"
    ids = []
    for lock in runs.glob("*/lock") if runs.is_dir() else []:
        ids.append(lock.parent.name)
        with contextlib.suppress(OSError, ValueError):
            pid = int(lock.read_text().split()[0])
            deadline = time.monotonic() + 600
            while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
                time.sleep(0.5)
    return ids


def _fleet_started(inv: Path, results: Path, tmp_path: Path) -> tuple[subprocess.Popen, str, str]:
    """`virtbench fleet run` of 60 boots of hello on native and crun on every host of `inv`,
    read until it says it started: the process, what it printed so far and the fleet id."""
    p = subprocess.Popen(
        [
            *VIRTBENCH,
            "fleet",
            "run",
            "boot",
            "-i",
            str(inv),
            "--runtimes",
            "native,crun",
            "--workloads",
            "hello",
            "--runs",
            "60",
            "--warmups",
            "0",
            "--results",
            str(results),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "VIRTBENCH_STATE_DIR": str(tmp_path / "state"), "COLUMNS": "200"},
    )
    assert p.stdout is not None
    seen = ""
    while "started:" not in seen:
        line = p.stdout.readline()
        assert line, seen
        seen += line
    fid = fleet_id(seen)
    return p, seen, fid


@pytest.mark.long  # about 2 minutes each: `make test-long`
@pytest.mark.parametrize("what", ["sshd", "host"])
def test_a_host_killed_mid_run_is_reported_and_the_other_hosts_samples_are_kept(
    what, hosts, tmp_path
):
    """While both hosts measure, h2's sshd dies (the listener and its sessions), or the
    whole host does (every process in its namespace, virtbench included): h1's run is
    merged whole, h2 is reported unreachable (exit 1) and recorded as a run of h2 saying
    so. A run orphaned by its sshd ends by itself and leaves nothing behind."""
    inv = hosts.inventory(tmp_path / "hosts.ini")
    results = tmp_path / "results"
    p, seen, fid = _fleet_started(inv, results, tmp_path)
    deadline = time.monotonic() + 900
    while _remote_samples(hosts, "h2", fid) < 10:
        assert p.poll() is None and time.monotonic() < deadline, seen + p.stdout.read()
        time.sleep(0.5)
    killed = hosts.kill_sshd("h2") if what == "sshd" else hosts.kill("h2")
    assert killed
    out = seen + p.communicate(timeout=900)[0]
    assert p.returncode == 1, out
    flat = " ".join(out.split())
    row = next(ln for ln in out.splitlines() if ln.startswith("│ h2 "))
    assert "unreachable" in row and "10.213." in row, out  # the host's address, and what ssh said
    assert f"fleet {fid}: h2 did not complete" in flat
    store = Store(results)
    runs = {r.host: r for r in store.runs() if r.fleet == fid}
    assert runs["h1"].status == "completed"
    good = [s for s in store.samples(runs["h1"].id) if s.metric == "boot.spawn_to_exit"]
    assert len([s for s in good if s.value is not None]) == 120
    assert runs["h2"].status == "unreachable"
    events = " ".join(m for _, _, m in store.events(runs["h2"].id))
    assert f"fleet {fid}: h2 unreachable" in events
    if what == "sshd":
        for rid in _wait_orphans(hosts, "h2"):
            assert not labelled(rid)
    hosts.start_sshd("h2")  # the host is back for the next test


def test_fleet_with_a_postgresql_store_sharded_by_runtime(hosts, tmp_path):
    """Both hosts write their runs straight to one real PostgreSQL server (listening on the
    hosts' bridge), each with its share of the runtimes of a spec file of the user's (copied
    to every host); nothing is fetched."""
    why = pgserver.available()
    need(why is None, str(why))
    inv = hosts.inventory(tmp_path / "hosts.ini")
    spec = tmp_path / "my-boot.toml"
    spec.write_text(
        'name = "my-boot"\nruntimes = ["native", "crun"]\n[[experiment]]\n'
        'type = "boot"\nworkloads = ["hello"]\nruns = 3\nwarmups = 0\n'
    )
    server = pgserver.PgServer(also_on=hosts.gateway).start()
    try:
        url = server.database(host=hosts.gateway)
        res = fleet_run(tmp_path, str(spec), "-i", str(inv), "--shard", "runtime", "--store", url)
        assert res.returncode == 0, res.stdout + res.stderr
        assert server.password not in res.stdout + res.stderr
        fid = fleet_id(res.stdout)
        store = open_store(url)
        runs = {r.host: r for r in store.runs() if r.fleet == fid}
        assert set(runs) == {"h1", "h2"} and {r.name for r in runs.values()} == {"my-boot"}
        by_host = {
            h: {s.runtime for s in store.samples(r.id) if s.metric.startswith("boot.")}
            for h, r in runs.items()
        }
        assert by_host == {"h1": {"native"}, "h2": {"crun"}}
        n = sum(
            1
            for r in runs.values()
            for s in store.samples(r.id)
            if s.metric == "boot.spawn_to_exit" and s.value is not None
        )
        assert n == 6
        assert not (tmp_path / "results").exists()  # nothing went to a local SQLite store
        store.close()
    finally:
        server.stop()


def test_roles_the_clients_of_the_host_under_test_run_on_the_load_generator(hosts, tmp_path):
    """An inventory with roles: h1 under test, h2 in the group loadgen. h2 is installed
    and checked but runs nothing; h1's run drives its native nginx from h2 (over ssh from
    h1, with the ssh options the inventory gives h1), and its samples say so."""
    inv = hosts.inventory(tmp_path / "hosts.ini", ["h1"])
    v = hosts.host_vars("h2")
    env = json.dumps(v["virtbench_env"]).replace('"', "'")
    options = (
        f'["IdentityFile={hosts.key}","StrictHostKeyChecking=no","UserKnownHostsFile=/dev/null"]'
    )
    text = inv.read_text().replace("[bench:vars]", "[all:vars]")
    text = text.replace(
        " virtbench_dir=", f" virtbench_loadgen_ssh_options={options} virtbench_dir=", 1
    )
    text += (
        f"[loadgen]\nh2 ansible_host={v['ansible_host']} virtbench_dir={v['virtbench_dir']}"
        f' virtbench_env="{env}"\n'
    )
    inv.write_text(text)
    spec = tmp_path / "remote.toml"
    spec.write_text(
        'name = "remote"\nruntimes = ["native"]\n[runtime.native]\nnetwork = "host"\n'
        '[[experiment]]\ntype = "throughput"\nworkloads = ["nginx"]\nruns = 2\n'
        "[experiment.params.nginx]\nconnections = 4\nthreads = 1\nduration_s = 2\n"
    )
    results = tmp_path / "results"
    res = fleet_run(tmp_path, str(spec), "-i", str(inv), "--results", str(results))
    assert res.returncode == 0, res.stdout + res.stderr
    fid = fleet_id(res.stdout)
    assert (
        "clients on h2 (h1)" in res.stdout and f"fleet {fid}: 2 of 2 hosts completed" in res.stdout
    )
    store = Store(results)
    runs = {r.host: r for r in store.runs() if r.fleet == fid}
    assert set(runs) == {"h1"}  # the load generator ran nothing of its own
    samples = [s for s in store.samples(runs["h1"].id) if s.metric == "requests_per_s"]
    assert len(samples) == 2 and all(s.value and s.value > 0 for s in samples)
    assert {s.params["client_host"] for s in samples} == {f"root@{v['ansible_host']}"}
    assert runs["h1"].environment["loadgen"]["this_host_there"] == hosts.addr("h1")
