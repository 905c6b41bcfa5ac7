"""Faults: what a run does when the world under it breaks, on real runtimes (kill -9 then
`clean` on every runtime kind, and a Docker daemon dying under a run:
test_faults_cleanup.py)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest
from tests.integration.conftest import cli, labelled, run_id_of, start_run
from tests.integration.test_cli_runs import start_density

from virtbench.store import Store

# a density pile-up killed midway: long enough to be caught with a third of it up
PILE, KILLED_AT = 30, 10


def test_full_disk_under_results_stops_the_run_cleanly_with_the_database_intact(env, tmp_path):
    """The results directory is a 1 MiB tmpfs: the store's write-ahead log fills it after a
    few dozen boots. The run must stop with one line naming the directory, stop what it
    started, and leave a database whose committed samples all read back."""
    results = tmp_path / "results"
    results.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "vb-test-full", str(results)],
        check=True,
    )
    try:
        res = cli(
            "run",
            "boot",
            "--runtimes",
            "native,crun",
            "--workloads",
            "hello",
            "--runs",
            "5000",
            "--warmups",
            "0",
            env={**env, "VIRTBENCH_RESULTS": str(results)},
            timeout=900,
        )
        out = res.stdout + res.stderr
        assert res.returncode == 1, out
        assert "Traceback" not in out
        errors = [line for line in out.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "the disk is full" in errors[0], out
        assert f"free space under {results}" in " ".join(out.split())
        rid = run_id_of(res.stdout)
        assert labelled(rid) == []
        copy = tmp_path / "copy"
        shutil.copytree(results, copy)
    finally:
        subprocess.run(["umount", str(results)], check=True)
    db = sqlite3.connect(copy / "virtbench.sqlite")
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    n, bad = db.execute(
        "SELECT COUNT(*), SUM(value IS NULL AND error = '') FROM samples "
        "WHERE run_id = ? AND experiment = 'boot'",
        (rid,),
    ).fetchone()
    assert n >= 20 and bad == 0, (n, bad)
    status = db.execute("SELECT status FROM runs WHERE id = ?", (rid,)).fetchone()[0]
    db.close()
    shown = cli("show", rid, "--results", str(copy), env=env)
    assert shown.returncode == 0 and "time to run and exit" in shown.stdout, (
        shown.stdout + shown.stderr
    )
    if status == "running":  # not even the final status fitted: `clean` says what happened
        cleaned = cli("clean", "--results", str(copy), env=env)
        assert f"run {rid} marked crashed" in cleaned.stdout, cleaned.stdout
    else:
        assert status == "failed"


def _boots(db: Path, rid: str) -> int:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        q = "SELECT COUNT(*) FROM samples WHERE run_id = ? AND warmup = 0"
        return con.execute(q, (rid,)).fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0
    finally:
        con.close()


def test_ctrl_c_then_resume_finishes_the_run_without_redoing_what_was_done(env, tmp_path):
    """Ctrl-C half-way through 20 repetitions of hello on native and crun; `run --resume`
    measures only what is missing: every (runtime, repetition) has exactly one boot in the
    end, and the samples taken before the interruption are the very same rows."""
    p, rid = start_run(
        "boot",
        "--runtimes",
        "native,crun",
        "--workloads",
        "hello",
        "--runs",
        "20",
        "--warmups",
        "1",
        "--benchmark-times",
        "1",
        env=env,
    )
    db = tmp_path / "results" / "virtbench.sqlite"
    deadline = time.monotonic() + 120
    while _boots(db, rid) < 15:
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()[0]
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 130, out
    assert f"virtbench run --resume {rid}" in " ".join(out.split())
    store = Store(tmp_path / "results")
    assert store.run(rid).status == "interrupted"
    units = store.units(rid)
    assert 0 < len([u for u in units if u[0] == "boot"]) < 40
    before = {
        (s.runtime, s.repetition, s.metric, s.t)
        for s in store.samples(rid)
        if not s.warmup and s.experiment == "boot"
    }
    assert not labelled(rid)

    res = cli("run", "--resume", rid, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"run {rid} resumed" in res.stdout and f"run {rid} completed" in res.stdout
    store = Store(tmp_path / "results")
    samples = [s for s in store.samples(rid) if not s.warmup and s.experiment == "boot"]
    exits = Counter((s.runtime, s.repetition) for s in samples if s.metric == "boot.spawn_to_exit")
    want = {(rt, rep) for rt in ("native", "crun") for rep in range(20)}
    assert set(exits) == want and set(exits.values()) == {1}, exits
    assert all(s.value is not None for s in samples if s.metric == "boot.spawn_to_exit")
    after = {(s.runtime, s.repetition, s.metric, s.t) for s in samples}
    done_before = {(json.loads(k)[0], json.loads(k)[1]) for e, k in units if e == "boot"}
    kept = {b for b in before if (b[0], b[1]) in done_before}
    assert kept and kept <= after  # finished units are not measured again
    assert store.run(rid).status == "completed"
    messages = " ".join(m for _, _, m in store.events(rid))
    assert "resumed (interrupted)" in messages and "units already measured" in messages
    assert not labelled(rid)
    again = cli("run", "--resume", rid, env=env)
    assert again.returncode == 2 and again.stderr.strip() == (
        f"error: run {rid} completed: nothing to resume"
    )


def test_kill_9_then_resume_removes_the_leftovers_and_redoes_the_pile_up(env, tmp_path):
    """kill -9 in the middle of a density pile-up: `run --resume` removes what the killed
    run left, throws away the half pile-up and measures it again whole."""
    p, rid = start_density(env, PILE)
    p.kill()
    p.communicate(timeout=30)
    killed_at = time.time()
    assert labelled(rid), "the run should have left instances behind"
    res = cli("run", "--resume", rid, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"removing what run {rid} left" in res.stdout
    store = Store(tmp_path / "results")
    dens = [s for s in store.samples(rid) if s.experiment == "density"]
    reached = [s.value for s in dens if s.metric == "density.reached"]
    assert reached == [float(PILE)], reached
    assert all(s.t > killed_at for s in dens)  # the cut-short pile-up went
    assert store.run(rid).status == "completed"
    assert not labelled(rid)
    assert not (tmp_path / "state" / "runs" / rid).exists()


def _instance_pids(rid: str, comm: str) -> list[int]:
    """Host pids of the run's instances' processes named `comm`, by their cgroup (nginx
    overwrites its environment with its process title)."""
    found = []
    for proc in psutil.process_iter(["name"]):
        try:
            cgroup = Path(f"/proc/{proc.pid}/cgroup").read_text()
        except OSError:
            continue
        if proc.info["name"] == comm and f"/virtbench/vb-{rid}-" in cgroup:
            found.append(proc.pid)
    return found


def test_a_server_killed_mid_measurement_is_a_failed_sample_with_how_and_the_run_goes_on(
    env, tmp_path
):
    """While wrk measures the first nginx, every nginx process of it gets SIGKILL: that
    measurement is stored as a failed sample saying the server ended during it (not a
    client parse error, not a figure from half a measurement), and every other
    repetition is measured."""
    spec = tmp_path / "kill.toml"
    spec.write_text(
        'name = "killed-server"\nruntimes = ["native", "crun"]\n[instance]\nnetwork = "bridge"\n'
        '[runtime.native]\nnetwork = "host"\n[[experiment]]\ntype = "throughput"\n'
        'workloads = ["nginx"]\nruns = 2\nwarmups = 0\n[experiment.params.nginx]\n'
        "connections = 4\nduration_s = 2\n"
    )
    p, rid = start_run(str(spec), env=env)
    try:
        deadline = time.monotonic() + 120
        while not any(c.name() == "wrk" for c in psutil.Process(p.pid).children(recursive=True)):
            assert p.poll() is None and time.monotonic() < deadline, p.communicate()[0]
            time.sleep(0.05)
        victims = _instance_pids(rid, "nginx")
        assert victims
        for pid in victims:  # a worker may end with its master before its turn comes
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        out, _ = p.communicate(timeout=300)
    finally:
        if p.poll() is None:  # a failed assertion: stop the run the way Ctrl-C does
            p.send_signal(signal.SIGINT)
            p.communicate(timeout=120)
    assert p.returncode == 0, out
    store = Store(tmp_path / "results")
    samples = [s for s in store.samples(rid) if s.experiment == "throughput"]
    failed = [s for s in samples if s.error]
    assert len(failed) == 1, [s.error for s in failed]
    bad = failed[0]
    assert bad.value is None and bad.metric == "requests_per_s" and bad.repetition == 0
    why = "killed by SIGKILL" if bad.runtime == "native" else "ended (no process of it is left"
    assert f"the server {why}" in bad.error and "during the measurement" in bad.error, bad.error
    good = {(s.runtime, s.repetition) for s in samples if s.metric == "requests_per_s" and s.value}
    want = {(rt, rep) for rt in ("native", "crun") for rep in range(2)}
    assert good == want - {(bad.runtime, 0)}
    events = " ".join(m for _, _, m in store.events(rid))
    assert f"throughput: {bad.runtime} nginx: the server" in events
    assert store.run(rid).status == "completed"
    assert not labelled(rid)


@pytest.mark.slow
def test_kill_9_next_to_a_busy_run_then_clean_and_resume_leave_nothing_and_lose_nothing(
    env, tmp_path
):
    """The sequence a shared host sees: a crun density run is killed (kill -9) while a
    second run creates and deletes crun containers (so `crun list` fails now and then).
    Every dry-run of clean lists the killed run's objects, the same ones each time and
    none of the live run's; clean removes them all; the resume keeps every sample stored
    before the kill (or measures its unit again whole), completes, and leaves nothing;
    the live run finishes untouched."""
    busy, busy_rid = start_run(
        "boot",
        "--runtimes",
        "crun",
        "--workloads",
        "sleep",
        "--runs",
        "2000",
        "--warmups",
        "0",
        env=env,
    )
    try:
        rid = _density_killed_mid_pile_up(env)
        store = Store(tmp_path / "results")
        before = _stored(store, rid)
        store.close()
        assert before, "the killed run had stored samples"
        containers = {x for x in labelled(rid) if x.startswith("container")}
        assert len(containers) >= KILLED_AT
        _dry_runs_list_the_same(busy, busy_rid, containers, env)
        res = cli("clean", "--run", rid, env=env)
        assert res.returncode == 0, res.stdout + res.stderr
        assert f"run {rid} marked crashed" in res.stdout
        assert not labelled(rid)
        resumed = cli("run", "--resume", rid, env=env)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        store = Store(tmp_path / "results")
        after = _stored(store, rid)
        assert store.run(rid).status == "completed"
        reached = [s.value for s in store.samples(rid) if s.metric == "density.reached"]
        store.close()
        assert reached == [float(PILE)], reached
        redone = {(s[0], s[1]) for s in after - before}  # a unit measured again whole
        assert not [s for s in before - after if (s[0], s[1]) not in redone]
        assert not labelled(rid)
    finally:
        if busy.poll() is None:
            busy.send_signal(signal.SIGINT)
        out, _ = busy.communicate(timeout=600)
    assert busy.returncode in (0, 130), out
    store = Store(tmp_path / "results")
    assert store.run(busy_rid).status in ("completed", "interrupted")
    store.close()
    assert not labelled(busy_rid)


def _density_killed_mid_pile_up(env: dict[str, str]) -> str:
    """A crun density run of PILE instances, killed (kill -9) once KILLED_AT or more of
    its containers are up; its run id."""
    p, rid = start_run(
        "density",
        "--runtimes",
        "crun",
        "--instances",
        str(PILE),
        "--runs",
        "1",
        "--instances-per-benchmark",
        "5",
        env=env,
    )
    deadline = time.monotonic() + 150
    while len([x for x in labelled(rid) if x.startswith("container")]) < KILLED_AT:
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()[0]
        time.sleep(0.1)
    p.kill()
    p.communicate(timeout=30)
    return rid


def _stored(store: Store, rid: str) -> set[tuple]:
    """The run's samples as what tells them apart, with their values: a sample kept
    through a kill and a resume is the same tuple before and after."""
    return {
        (s.runtime, s.repetition, s.metric, s.background, s.t, s.value) for s in store.samples(rid)
    }


def _dry_runs_list_the_same(
    busy: subprocess.Popen, busy_rid: str, containers: set[str], env: dict[str, str]
) -> None:
    """Four dry-runs of clean while the busy run makes and deletes crun containers (so
    `crun list` fails now and then): each lists every one of the killed run's
    `containers`, the same instances each time, and nothing of the busy run's."""
    listed = []
    for _ in range(4):
        assert busy.poll() is None, "the busy run ended too soon"
        dry = cli("clean", "--dry-run", env=env)
        assert dry.returncode == 0, dry.stdout + dry.stderr
        assert f"vb-{busy_rid}-" not in dry.stdout, dry.stdout
        listed.append(
            {
                ln.split()[3]
                for ln in dry.stdout.splitlines()
                if ln.startswith("would remove instance")
            }
        )
    assert {x.split()[1] for x in containers} <= listed[0]
    assert all(seen == listed[0] for seen in listed), [len(s) for s in listed]
