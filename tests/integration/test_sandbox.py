"""The sandbox questions on real runtimes: many starts at once (`burst`) on crun and on QEMU
booting the minimal guest; exec, pause and snapshot on crun, runsc and QEMU; kill -9
mid-burst or while an instance is paused, then `clean`, leaves nothing."""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from tests.integration.conftest import (
    cli,
    driver,
    labelled,
    run_cgroups,
    run_id_of,
    start_run,
    sweep,
    vmm_binary,
)

from virtbench import naming
from virtbench.experiments.together import launch_together
from virtbench.host.facts import kvm_kind
from virtbench.paths import Paths
from virtbench.runtimes.base import InstanceSpec
from virtbench.store import Store


@pytest.mark.slow
def test_burst_on_crun_and_qemu_times_every_instance_launched_together(env, tmp_path):
    path = tmp_path / "burst.toml"
    path.write_text(
        'name = "b"\nruntimes = ["crun", "qemu"]\n[instance]\nnetwork = "none"\n'
        '[[experiment]]\ntype = "burst"\nlevels = [1, 8]\nruns = 2\n'
        "settle_s = 0.5\n"
    )
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
    assert shown.returncode == 0 and "burst" in shown.stdout
    assert "median time to ready at once at 8" in shown.stdout  # burst.p50@8, by its label


@pytest.mark.slow
def test_kill_9_mid_burst_then_clean_leaves_nothing(env, tmp_path):
    path = tmp_path / "burst.toml"
    path.write_text(
        'name = "b"\nruntimes = ["crun"]\n[instance]\nnetwork = "none"\n'
        '[[experiment]]\ntype = "burst"\nlevels = [40]\nruns = 50\n'
        "settle_s = 0\n"
    )
    p, rid = start_run(str(path), env=env)
    deadline = time.monotonic() + 120
    while len(run_cgroups(rid)) < 10:
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


@pytest.mark.parametrize("runtime", ["crun", "docker"])  # a launcher each; a barrier
def test_ctrl_c_mid_burst_does_not_wait_out_an_instance_that_hangs(runtime, ctx, artifact):
    """Instances that run but never signal ready (vb-sleep without an address), waited for
    up to 60 s: Ctrl-C a second into the burst ends it within seconds, and stopping them
    then leaves nothing."""
    import signal
    import threading

    rt = driver(runtime, ctx)
    insts = []
    for n in range(4):
        name = naming.instance(ctx.run_id, n)
        spec = InstanceSpec(name=name, argv=("/bin/vb-sleep",), rootfs=artifact.path)
        insts.append(rt.prepare(spec))
    # SIGINT to the main thread, as a terminal's Ctrl-C; Python's own handler even where
    # this test's parent left SIGINT ignored
    main = threading.main_thread().ident
    timer = threading.Timer(1.0, signal.pthread_kill, (main, signal.SIGINT))
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    t0 = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            launch_together(rt, insts, 60)
        took = time.monotonic() - t0
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, old)
        errors = rt.stop_each(insts)
    assert took < 8, f"the interrupted burst took {took:.1f} s"
    assert errors == []
    # the run's image and network go with the driver; no instance's thing is left
    left = [x for x in labelled(ctx.run_id) if " images " not in x and " network " not in x]
    assert left == [], left


@pytest.mark.slow
def test_exec_pause_and_snapshot_on_crun_runsc_and_qemu(env, tmp_path):
    path = tmp_path / "ops.toml"
    path.write_text(
        'name = "ops"\nruntimes = ["crun", "runsc", "qemu"]\n[instance]\n'
        'network = "none"\n[[experiment]]\ntype = "exec"\nruns = 1\ncount = 5\n'
        '[[experiment]]\ntype = "pause"\nruns = 1\ncycles = 3\n'
        '[[experiment]]\ntype = "snapshot"\nruns = 1\ntimeout_s = 60\n'
    )
    res = cli("run", str(path), env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    rid = run_id_of(res.stdout)
    samples = Store(tmp_path / "results").samples(rid)

    def got(metric, rt):
        return [x for x in samples if x.metric == metric and x.runtime == rt]

    for rt in ("crun", "runsc"):  # every exec came back whole, in under 10 s
        for m in ("exec.true", "exec.stdout_1mib"):
            each = got(m, rt)
            assert len(each) == 5 and all(not x.error and 0 < x.value < 10_000 for x in each), (
                rt,
                m,
                [x.error for x in each],
            )
    (no_exec,) = got("exec.true", "qemu")  # its Linux guest (the agent's) needs a real KVM
    assert kvm_kind() != "pvm" or (no_exec.value is None and "nested PVM" in no_exec.error)
    for rt in ("crun", "runsc", "qemu"):  # paused (no heartbeat held), back, beating again
        for m in ("pause.pause", "pause.resume", "pause.resume_to_ready"):
            each = got(m, rt)
            assert len(each) == 3 and all(not x.error and 0 < x.value < 10_000 for x in each), (
                rt,
                m,
                [x.error for x in each],
            )
    for rt in ("runsc", "qemu"):  # restored: the same token, a later heartbeat
        for m in (
            "snapshot.checkpoint",
            "snapshot.size",
            "snapshot.restore",
            "snapshot.restore_to_ready",
        ):
            (x,) = got(m, rt)
            assert not x.error and x.value > 0, (rt, m, x.error)
    (no_criu,) = got("snapshot.restore_to_ready", "crun")
    assert no_criu.value is None and "criu" in no_criu.error, no_criu.error
    assert labelled(rid) == []
    assert not (tmp_path / "state" / "runs" / rid).exists()
    assert not (Paths.from_env().data / rid).exists()  # checkpoint images, on disk
    shown = cli("show", rid, env=env)
    assert shown.returncode == 0, shown.stderr
    said = " ".join(shown.stdout.split())
    assert all(w in said for w in ("back from pause", "back from a snapshot", "1 MiB of output"))


@pytest.mark.slow
@pytest.mark.parametrize("vmm", ["firecracker", "cloud-hypervisor"])
def test_microvms_pause_and_snapshot_through_their_apis(vmm, env, tmp_path):
    """Pause through the VMM's API: no heartbeat while paused, the same guest beating again
    after; a snapshot restored to the same guest's heartbeat, then 4 copies of it restored
    at once, each beating on as the guest checkpointed; or, where this host's KVM cannot
    save a vCPU's state (Cloud Hypervisor under a nested PVM KVM), said so. Skips, saying
    so, without the VMM's binary."""
    binary = vmm_binary(vmm)
    path = tmp_path / "vmm.toml"
    path.write_text(
        f'name = "v"\nruntimes = ["{vmm}"]\n[runtime.{vmm}]\nbinary = "{binary}"\n'
        '[instance]\nnetwork = "none"\n[[experiment]]\ntype = "pause"\nruns = 1\n'
        'cycles = 3\n[[experiment]]\ntype = "snapshot"\nruns = 1\n'
        "restore_many = 4\n"
    )
    res = cli("run", str(path), env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    rid = run_id_of(res.stdout)
    samples = Store(tmp_path / "results").samples(rid)
    for m in ("pause.pause", "pause.resume", "pause.resume_to_ready"):
        each = [x for x in samples if x.metric == m]
        assert len(each) == 3 and all(not x.error and 0 < x.value < 10_000 for x in each), (
            m,
            [x.error for x in each],
        )
    snap = [x for x in samples if x.experiment == "snapshot"]
    if vmm == "cloud-hypervisor" and kvm_kind() == "pvm":
        assert snap and all("KVM_GET_NESTED_STATE" in x.error for x in snap), snap
    else:
        ready = [x for x in snap if x.metric == "snapshot.restore_to_ready"]
        assert len(ready) == 1 and not ready[0].error and 0 < ready[0].value < 10_000, ready
        copies = [x for x in snap if x.metric == "snapshot.many_to_ready"]
        assert len(copies) == 4 and all(not x.error and 0 < x.value < 30_000 for x in copies), [
            x.error for x in copies
        ]
        assert [x.value for x in snap if x.metric == "snapshot.many_failed"] == [0]
    assert labelled(rid) == []
    assert not (Paths.from_env().data / rid).exists()  # the snapshot's files, on disk


def test_exec_into_a_linux_guest_through_its_agent(env, tmp_path):
    """QEMU (emulated here) boots the exec instance's Linux guest with vb-agent on a
    virtio-serial port: every command comes back whole with its exit status, and nothing
    of the run is left."""
    path = tmp_path / "exec.toml"
    path.write_text(
        'name = "x"\nruntimes = ["qemu:q35:tcg"]\n[[experiment]]\ntype = "exec"\n'
        "runs = 1\ncount = 5\ntimeout_s = 120\n"
    )
    res = cli("run", str(path), env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    rid = run_id_of(res.stdout)
    samples = [x for x in Store(tmp_path / "results").samples(rid) if x.experiment == "exec"]
    for m in ("exec.true", "exec.stdout_1mib"):
        each = [x for x in samples if x.metric == m]
        assert len(each) == 5 and all(not x.error and 0 < x.value < 10_000 for x in each), (
            m,
            [x.error for x in each],
        )
        assert all(x.emulated for x in each)
    assert labelled(rid) == []


# a VMM killed and cleaned: test_vms.py's kill -9 of bridged VMs; paused, under `long`
@pytest.mark.parametrize("runtime", ["crun", sweep("qemu", long=True)])
def test_kill_9_while_paused_then_clean_leaves_nothing(runtime, env, tmp_path):
    path = tmp_path / "pause.toml"
    path.write_text(
        f'name = "p"\nruntimes = ["{runtime}"]\n[instance]\nnetwork = "none"\n'
        '[[experiment]]\ntype = "pause"\nruns = 1\ncycles = 1\n'
        "hold_s = 120\n"
    )
    p, rid = start_run(str(path), env=env)
    kind = "container" if runtime == "crun" else "process"
    deadline = time.monotonic() + 120
    while not [x for x in labelled(rid) if x.startswith(kind)]:
        assert time.monotonic() < deadline, "the instance never came up"
        assert p.poll() is None
        time.sleep(0.05)
    time.sleep(3)  # ready, beating, then paused for the 120 s hold
    p.kill()
    p.communicate(timeout=30)
    assert labelled(rid), "the paused instance should have been left behind"
    if runtime == "crun":  # left paused (frozen), as a crash mid-hold leaves it
        out = subprocess.run(["crun", "list", "--format", "json"], capture_output=True, text=True)
        listed = json.loads(out.stdout or "[]")
        assert [c["status"] for c in listed if c["id"].startswith(f"vb-{rid}-")] == ["paused"]
    res = cli("clean", "--run", rid, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert labelled(rid) == []
    assert not (tmp_path / "state" / "runs" / rid).exists()


@pytest.mark.slow
def test_time_to_interactive_on_crun_and_runsc_one_by_one_staggered_and_at_once(env, tmp_path):
    """Every instance of every batch kind: create -> ready -> its first command, the
    phases in order; staggered launches at their gap; the pooled table in `show`."""
    path = tmp_path / "tti.toml"
    path.write_text(
        'name = "t"\nruntimes = ["crun", "runsc"]\n[instance]\nnetwork = "none"\n'
        '[[experiment]]\ntype = "tti"\nsequential = 2\nstaggered = 3\ngap_ms = 200\n'
        "levels = [4]\nruns = 1\nsettle_s = 0.2\n"
    )
    res = cli("run", str(path), env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    rid = run_id_of(res.stdout)
    samples = [x for x in Store(tmp_path / "results").samples(rid) if x.experiment == "tti"]
    assert not [x.error for x in samples if x.error]
    for rt in ("crun", "runsc"):
        for at, n in (("seq", 2), ("stagger", 3), ("4", 4)):
            mine = {
                m: [x for x in samples if x.runtime == rt and x.metric == f"tti.{m}@{at}"]
                for m in ("interactive", "launched", "ready", "first_command")
            }
            assert all(len(v) == n for v in mine.values()), (rt, at, mine)
            for i, ready, first in zip(
                mine["interactive"], mine["ready"], mine["first_command"], strict=True
            ):
                assert 0 < ready.value < i.value < 30_000
                assert abs(i.value - ready.value - first.value) < 0.01
            if at == "stagger":  # the k-th launched k x 200 ms after the first
                offsets = sorted(x.params["launch_offset_ms"] for x in mine["interactive"])
                assert all(abs(o - 200 * k) < 100 for k, o in enumerate(offsets)), offsets
        failed = [x.value for x in samples if x.runtime == rt and x.metric == "tti.failed@4"]
        assert failed == [0]
    assert labelled(rid) == []
    shown = cli("show", rid, env=env)
    assert shown.returncode == 0 and "create -> first command, pooled" in shown.stdout
