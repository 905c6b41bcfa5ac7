"""Faults: what a run does when the world under it breaks, on real runtimes."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess

from tests.integration.conftest import cli, labelled, run_id_of


def test_full_disk_under_results_stops_the_run_cleanly_with_the_database_intact(env, tmp_path):
    """The results directory is a 1 MiB tmpfs: the store's write-ahead log fills it after a
    few dozen boots. The run must stop with one line naming the directory, stop what it
    started, and leave a database whose committed samples all read back."""
    results = tmp_path / "results"
    results.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "vb-test-full",
                    str(results)], check=True)  # fmt: skip
    try:
        res = cli("run", "boot", "--runtimes", "native,crun", "--workloads", "hello",
                  "--runs", "5000", "--warmups", "0", env={**env, "VIRTBENCH_RESULTS":
                  str(results)}, timeout=900)  # fmt: skip
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
    n, bad = db.execute("SELECT COUNT(*), SUM(value IS NULL AND error = '') FROM samples "
                        "WHERE run_id = ? AND experiment = 'boot'", (rid,)).fetchone()  # fmt: skip
    assert n >= 20 and bad == 0, (n, bad)
    status = db.execute("SELECT status FROM runs WHERE id = ?", (rid,)).fetchone()[0]
    db.close()
    shown = cli("show", rid, "--results", str(copy), env=env)
    assert shown.returncode == 0 and "spawn_to_exit" in shown.stdout, shown.stdout + shown.stderr
    if status == "running":  # not even the final status fitted: `clean` says what happened
        cleaned = cli("clean", "--results", str(copy), env=env)
        assert f"run {rid} marked crashed" in cleaned.stdout, cleaned.stdout
    else:
        assert status == "failed"
