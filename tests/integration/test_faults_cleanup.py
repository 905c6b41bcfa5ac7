"""What a run killed or cut off from its daemons leaves, on real runtimes: kill -9 then
`virtbench clean` on every runtime kind (instances, daemons, state), the run's own
dockerd killed mid-run, and the host's dockerd dying mid-run and coming back (the run's
other faults: test_faults.py)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import stat
import subprocess
import time
from pathlib import Path

import pytest
from tests.conftest import need
from tests.integration.conftest import cli, labelled, run_cgroups, start_run, sweep

from virtbench import runtimes
from virtbench.runtimes import daemon
from virtbench.store import Store


def _docker_disk_mentions(rid: str) -> list[str]:
    """Files of the default Docker data root that name the run (its image's tag, its
    containers' configs), read from disk: the run's own dockerd is gone. Not the bolt
    network store (network/files/local-kv.db): its freed pages keep a run's name after
    every key naming it was deleted."""
    root = Path("/var/lib/docker")
    files = [root / "image/overlay2/repositories.json", *root.glob("containers/*/config.v2.json")]
    marker = f"vb-{rid}-".encode()
    return [str(f) for f in files if f.is_file() and marker in f.read_bytes()]


# `make test`: an engine with the daemon the run started, the CRI's pods and LXD's own
# daemon (an OCI runtime's containers and their overlay mounts: crun's, in
# test_cli_runs.py; runc's in the guest host's short form); every other kind is
# `make test-long`'s (and `make test-hosts` runs them all on stock Debian hosts)
KILLED = ("docker", "cri:crun", "lxd")


@pytest.mark.slow
@pytest.mark.parametrize(
    "runtime",
    [
        sweep(r, long=r not in KILLED)
        for r in (
            "runc",
            "youki",
            "runsc",
            "docker",
            "podman",
            "cri:crun",
            "lxc",
            "lxd",
            "nspawn",
            "bwrap",
            "wasmtime",
        )
    ],
)
def test_kill_9_then_clean_leaves_nothing_of_any_runtime_kind(runtime, env, tmp_path):
    """kill -9 of a density run while its instances pile up, then `virtbench clean`: no
    instance, process, cgroup, image, network, netns, link or mount of the run is left,
    a daemon the run started (dockerd, its own LXD) is stopped, and its state is gone.
    (crun: test_cli_runs; QEMU with taps: test_vms.)"""
    avail = runtimes.get(runtime).available()
    need(avail.ok, f"{runtime}: {avail.reason}")
    for d in [tmp_path, *tmp_path.parents]:  # unprivileged LXD containers below the state
        d.chmod(d.stat().st_mode | stat.S_IXOTH)
    # the light ones start 40 in half a second: give them a pile-up that lasts to be caught
    instances = "400" if runtime in ("bwrap", "wasmtime") else "40"
    p, rid = start_run(
        "density", "--runtimes", runtime, "--instances", instances, "--runs", "1", env=env
    )
    deadline = time.monotonic() + 300
    while len(run_cgroups(rid)) < 3:
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()[0]
        time.sleep(0.05)
    ledger = tmp_path / "state" / "runs" / rid / "ledger.jsonl"
    p.kill()
    p.communicate(timeout=30)
    records = [json.loads(line) for line in ledger.read_text().splitlines()]
    daemons = [(r["pid"], r["start"]) for r in records if r["kind"] == "daemon-pid"]
    left = labelled(rid)
    assert left, "the run should have left instances behind"
    if runtime in ("runc", "runsc", "cri:crun"):  # each container's overlay root is mounted
        assert any(x.startswith("mount ") and "/rootfs" in x for x in left), left
    res = cli("clean", "--run", rid, env=env, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"run {rid} marked crashed" in res.stdout
    assert not labelled(rid)
    for pid, start in daemons:  # stopped, not merely forgotten
        assert daemon.start_time(pid) != start, f"daemon {pid} still runs"
    if runtime == "docker":
        assert not _docker_disk_mentions(rid)
    assert not (tmp_path / "state" / "runs" / rid).exists()
    assert cli("clean", "--run", rid, env=env).stdout.strip() == "nothing to clean"


def _boot_samples(db: Path, rid: str, runtime: str) -> list[tuple[float | None, str]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        q = (
            "SELECT value, error FROM samples WHERE run_id = ? AND runtime = ? AND warmup = 0"
            " AND experiment = 'boot'"
        )
        return con.execute(q, (rid, runtime)).fetchall()
    except sqlite3.OperationalError:  # not created yet
        return []
    finally:
        con.close()


def _until_docker_booted(p: subprocess.Popen, db: Path, rid: str, deadline: float) -> None:
    """Until the run `p` stored three successful docker boots (it must not end first)."""
    while len([v for v, _ in _boot_samples(db, rid, "docker") if v is not None]) < 3:
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()[0]
        time.sleep(0.1)


def _daemons_until_it_ends(
    p: subprocess.Popen, ledger: Path, daemons: list[tuple[int, int]], deadline: float
) -> list[tuple[int, int]]:
    """`daemons` and every daemon the run's ledger records (pid, start) until the run `p`
    ends: the fresh dockerd of the clean-up is started, and stopped, while it is on."""
    daemons = list(daemons)
    while p.poll() is None and time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            for line in ledger.read_text().splitlines():
                r = json.loads(line)
                if r["kind"] == "daemon-pid" and (r["pid"], r["start"]) not in daemons:
                    daemons.append((r["pid"], r["start"]))
        time.sleep(0.05)
    return daemons


def _went_on_without_docker(store: Store, rid: str, gone: str) -> str:
    """The run completed; docker's boots until its dockerd died are kept, at most one failed
    saying so, and docker was skipped for the rest of the run; crun was measured to the
    end. Returns the run's events, joined."""
    assert store.run(rid).status == "completed"
    docker = [s for s in store.samples(rid) if s.runtime == "docker" and s.experiment == "boot"]
    # The boot under way when dockerd died is a failed sample saying so -- unless dockerd
    # died between boots (while one was being removed): then none is cut short, and the
    # next is not tried at all (the event below says why).
    failed = [s for s in docker if s.value is None]
    assert len(failed) <= 1 and all(gone in f.error for f in failed), [s.error for s in failed]
    assert len([s for s in docker if s.value is not None]) >= 3
    crun = [
        s
        for s in store.samples(rid)
        if s.runtime == "crun" and s.metric == "boot.spawn_to_exit" and not s.warmup
    ]
    assert sorted(s.repetition for s in crun) == list(range(12))
    assert all(s.value is not None for s in crun)
    events = " ".join(m for _, _, m in store.events(rid))
    assert f"boot: docker skipped for the rest of the run: docker: {gone}" in events
    return events


@pytest.mark.slow
def test_dockerd_killed_mid_run_skips_docker_and_the_run_goes_on(env, tmp_path):
    """The run's own dockerd gets SIGKILL (by the pid its ledger records) after a few docker
    boots: docker's next boot is a failed sample saying so, docker is skipped for the rest
    of the run with that reason, crun is measured to the end, and a fresh dockerd removes
    what the dead one kept on disk; every daemon the run started is stopped."""
    avail = runtimes.get("docker").available()
    need(avail.ok, f"docker: {avail.reason}")
    _no_dockerd_running(avail.version)
    p, rid = start_run(
        "boot",
        "--runtimes",
        "docker,crun",
        "--workloads",
        "hello",
        "--runs",
        "12",
        "--warmups",
        "0",
        env=env,
    )
    db = tmp_path / "results" / "virtbench.sqlite"
    ledger = tmp_path / "state" / "runs" / rid / "ledger.jsonl"
    deadline = time.monotonic() + 300
    _until_docker_booted(p, db, rid, deadline)
    records = [json.loads(line) for line in ledger.read_text().splitlines()]
    (first,) = [(r["pid"], r["start"]) for r in records if r["kind"] == "daemon-pid"]
    assert daemon.start_time(first[0]) == first[1]
    os.kill(first[0], signal.SIGKILL)
    daemons = _daemons_until_it_ends(p, ledger, [first], deadline)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 0, out
    gone = f"dockerd (pid {first[0]}), started by this run, killed by SIGKILL mid-run"
    assert gone in " ".join(out.split()), out
    events = _went_on_without_docker(Store(tmp_path / "results"), rid, gone)
    assert len(daemons) == 2, "a fresh dockerd should have removed what the dead one kept"
    for pid, start in daemons:
        assert daemon.start_time(pid) != start, f"dockerd {pid} still runs"
    assert not labelled(rid)
    assert not _docker_disk_mentions(rid), events
    assert not (tmp_path / "state" / "runs" / rid).exists()


def _answers() -> bool:
    res = subprocess.run(
        ["docker", "-H", "unix:///var/run/docker.sock", "version"], capture_output=True, timeout=30
    )
    return res.returncode == 0


def _hosts_dockerd(tmp_path: Path) -> subprocess.Popen:
    """A dockerd as the host's admin would run it (not started by virtbench)."""
    from virtbench.runtimes.engines.dockerd import CONTAINERD_PIDFILE, daemon_config, dockerd_argv

    # PID 1 here reaps no orphans: the containerd of a dockerd killed before is a zombie
    # whose pid file would make this one wait for it (the run's own revival does the same).
    CONTAINERD_PIDFILE.unlink(missing_ok=True)
    conf = tmp_path / "hosts-dockerd.json"
    conf.write_text(json.dumps(daemon_config(tmp_path)))
    log = open(tmp_path / "hosts-dockerd.log", "ab")  # noqa: SIM115 - the daemon's, for its life
    p = subprocess.Popen(dockerd_argv(conf), stdout=log, stderr=log, start_new_session=True)
    log.close()
    deadline = time.monotonic() + 90
    while not _answers():
        assert p.poll() is None and time.monotonic() < deadline, tmp_path / "hosts-dockerd.log"
        time.sleep(0.2)
    return p


def _no_dockerd_running(version: str) -> None:
    """These tests kill a dockerd of their own (the run's, or one playing the host's): on
    a host whose dockerd already runs as a service, the run uses that one, which the
    tests must never touch."""
    if "not running" not in version:
        pytest.skip("the host's own dockerd runs (a service): no dockerd of the test's to kill")


@pytest.mark.slow
def test_the_hosts_dockerd_dying_mid_run_is_reported_and_clean_finishes_when_it_is_back(
    env, tmp_path
):
    """A dockerd the run did not start dies (SIGKILL) after a few docker boots: docker is
    skipped saying the daemon no longer answers, crun goes on, the run says what stays in
    that daemon; once it is back, `virtbench clean --run` removes it."""
    avail = runtimes.get("docker").available()
    need(avail.ok, f"docker: {avail.reason}")
    _no_dockerd_running(avail.version)
    hosts = _hosts_dockerd(tmp_path)
    try:
        p, rid = start_run(
            "boot",
            "--runtimes",
            "docker,crun",
            "--workloads",
            "hello",
            "--runs",
            "10",
            "--warmups",
            "0",
            env=env,
        )
        db = tmp_path / "results" / "virtbench.sqlite"
        _until_docker_booted(p, db, rid, time.monotonic() + 300)
        hosts.kill()
        hosts.wait(30)
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0, out
        flat = " ".join(out.split())
        assert "docker: dockerd no longer answers on /var/run/docker.sock" in flat, out
        assert f"then `virtbench clean --run {rid}` removes them" in flat, out
        store = Store(tmp_path / "results")
        assert store.run(rid).status == "completed"
        crun = [
            s
            for s in store.samples(rid)
            if s.runtime == "crun" and s.metric == "boot.spawn_to_exit"
        ]
        assert sorted(s.repetition for s in crun) == list(range(10))
        events = " ".join(m for _, _, m in store.events(rid))
        assert "boot: docker skipped for the rest of the run" in events
        assert _docker_disk_mentions(rid), "the dead daemon's store should still hold the image"
        hosts = _hosts_dockerd(tmp_path)  # the admin brings it back
        res = cli("clean", "--run", rid, env=env, timeout=300)
        assert res.returncode == 0, res.stdout + res.stderr
        assert not labelled(rid)
    finally:
        if hosts.poll() is None:
            hosts.terminate()
            hosts.wait(60)
    assert not _docker_disk_mentions(rid)
