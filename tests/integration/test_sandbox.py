"""The sandbox questions on real runtimes: many starts at once (`burst`) on crun and on QEMU
booting the minimal guest; kill -9 mid-burst, then `clean`, leaves nothing."""

from __future__ import annotations

import time

import pytest
from tests.integration.conftest import cli, labelled, run_id_of, start_run

from virtbench.store import Store


@pytest.mark.slow
def test_burst_on_crun_and_qemu_times_every_instance_launched_together(env, tmp_path):
    path = tmp_path / "burst.toml"
    path.write_text('name = "b"\nruntimes = ["crun", "qemu"]\n[instance]\nnetwork = "none"\n'
                    '[[experiment]]\ntype = "burst"\nlevels = [1, 8]\nruns = 2\n'
                    "settle_s = 0.5\n")  # fmt: skip
    res = cli("run", str(path), env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    rid = run_id_of(res.stdout)
    samples = [x for x in Store(tmp_path / "results").samples(rid) if x.experiment == "burst"]
    assert not [x.error for x in samples if x.error and x.metric != "burst.host_cpu@1"]
    for rt in ("crun", "qemu"):
        each = [x for x in samples if x.runtime == rt and x.metric == "burst.spawn_to_ready@8"]
        assert len(each) == 16 and all(0 < x.value < 30_000 for x in each), (rt, each)
        # issued together: every launch call of a burst within a second of its first
        assert max(x.params["launch_offset_ms"] for x in each) < 1000, rt
        p50 = [x.value for x in samples if x.runtime == rt and x.metric == "burst.p50@8"]
        mx = [x.value for x in samples if x.runtime == rt and x.metric == "burst.max@8"]
        assert len(p50) == 2 and all(a <= b for a, b in zip(p50, mx, strict=True))
        rate = [x.value for x in samples if x.runtime == rt and x.metric == "burst.ready_per_s@8"]
        assert len(rate) == 2 and all(r > 0 for r in rate)
        failed = [x.value for x in samples if x.runtime == rt and x.metric == "burst.failed@8"]
        assert failed == [0, 0]
        cpu = [x.value for x in samples if x.runtime == rt and x.metric == "burst.host_cpu@8"]
        assert len(cpu) == 2 and all(0 <= v <= 100 for v in cpu)
    assert labelled(rid) == []
    shown = cli("show", rid, env=env)
    assert shown.returncode == 0 and "burst" in shown.stdout and "p50@8" in shown.stdout


@pytest.mark.slow
def test_kill_9_mid_burst_then_clean_leaves_nothing(env, tmp_path):
    path = tmp_path / "burst.toml"
    path.write_text('name = "b"\nruntimes = ["crun"]\n[instance]\nnetwork = "none"\n'
                    '[[experiment]]\ntype = "burst"\nlevels = [40]\nruns = 50\n'
                    "settle_s = 0\n")  # fmt: skip
    p, rid = start_run(str(path), env=env)
    deadline = time.monotonic() + 120
    while len([x for x in labelled(rid) if x.startswith("container")]) < 10:
        assert time.monotonic() < deadline, "no burst's instances came up"
        assert p.poll() is None
        time.sleep(0.05)
    p.kill()
    p.communicate(timeout=30)
    assert labelled(rid), "the burst should have left instances behind"
    res = cli("clean", "--run", rid, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"run {rid} marked crashed" in res.stdout
    assert labelled(rid) == []
    assert not (tmp_path / "state" / "runs" / rid).exists()
