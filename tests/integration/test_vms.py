"""VM-class runtimes on real VMMs: QEMU booting virtbench's minimal guest kernel under KVM
(microvm and q35) and under TCG (emulated: every sample says so)."""

from __future__ import annotations

import ipaddress
import shutil
import time
from pathlib import Path

import pytest
from tests.integration.conftest import (
    clean_crashed,
    cli,
    driver,
    labelled,
    run_id_of,
    start_run,
    vmm_binary,
)

from virtbench import naming
from virtbench.artifacts.linux import debian_kernel, elf_kernel
from virtbench.host.facts import kvm_kind
from virtbench.paths import Paths
from virtbench.runtimes.base import InstanceSpec
from virtbench.store import Store
from virtbench.workloads import sleep


def run_spec(tmp_path: Path, env: dict[str, str], text: str) -> tuple[str, Store]:
    path = tmp_path / "spec.toml"
    path.write_text(text)
    res = cli("run", str(path), env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    rid = run_id_of(res.stdout)
    assert f"run {rid} completed" in res.stdout
    return rid, Store(tmp_path / "results")


def test_qemu_minimal_guest_boot_and_density_under_kvm_and_tcg(env, tmp_path):
    rid, store = run_spec(
        tmp_path,
        env,
        (
            'name = "vms"\nruntimes = ["qemu", "qemu:q35", "qemu:microvm:tcg"]\n'
            '[[experiment]]\ntype = "boot"\nruns = 3\nwarmups = 1\n'
            '[[experiment]]\ntype = "density"\ninstances = 5\ninstances_per_benchmark = 5\n'
        ),
    )
    samples = [s for s in store.samples(rid) if s.experiment in ("boot", "density")]
    assert samples and not [s.error for s in samples if s.error]
    for rt in ("qemu", "qemu:q35", "qemu:microvm:tcg"):
        mine = [s for s in samples if s.runtime == rt and not s.warmup]
        exits = [s.value for s in mine if s.metric == "boot.spawn_to_exit"]
        first = [s.value for s in mine if s.metric == "boot.spawn_to_first_output"]
        assert len(first) == 6 and all(0 < v < 10_000 for v in first), (rt, first)
        ready = [s.value for s in mine if s.metric == "boot.spawn_to_ready"]
        assert len(exits) == 3 and all(0 < v < 10_000 for v in exits), (rt, exits)
        assert len(ready) == 3 and all(0 < v < 10_000 for v in ready), (rt, ready)
        pss = [s.value for s in mine if s.metric == "density.pss"]
        assert len(pss) == 5 and all(v > 1 for v in pss), (rt, pss)  # a VMM is MiBs
        vmm = [s.value for s in mine if s.metric == "density.pss_without_guest_ram"]
        assert len(vmm) == 5 and all(0 < v < p for v, p in zip(vmm, pss, strict=True)), vmm
        assert all(s.emulated == rt.endswith(":tcg") for s in mine), rt
    assert labelled(rid) == []


def test_qemu_refuses_workloads_its_guest_cannot_run(env, tmp_path):
    if kvm_kind() == "pvm":  # these hosts: Linux guests boot only under TCG
        res = cli("run", "throughput", "--workloads", "nginx", "--runtimes", "qemu", env=env)
        assert res.returncode == 2
        said = " ".join((res.stdout + res.stderr).split())
        assert "runtime qemu cannot run nginx (throughput)" in said
        assert "nested PVM KVM" in said and "qemu:q35:tcg" in said
        assert "started" not in res.stdout
    path = tmp_path / "minimal.toml"
    path.write_text(
        'name = "m"\nruntimes = ["qemu:microvm:tcg"]\n[runtime.qemu]\n'
        'guest = "minimal"\n[[experiment]]\ntype = "throughput"\n'
        'workloads = ["nginx"]\n'
    )
    res = cli("run", str(path), env=env)
    said = " ".join((res.stdout + res.stderr).split())
    assert res.returncode == 2 and "hello, sleep and beat" in said, said
    assert "started" not in res.stdout


@pytest.mark.parametrize("vmm", ["firecracker", "cloud-hypervisor"])
def test_other_vmms_boot_the_minimal_guest(env, tmp_path, vmm):
    """Firecracker and Cloud Hypervisor are not in Debian: set-up does not install them, so
    this skips (with the reason) unless their binary is on PATH or named by
    VIRTBENCH_FIRECRACKER / VIRTBENCH_CLOUD_HYPERVISOR."""
    binary = vmm_binary(vmm)
    rid, store = run_spec(
        tmp_path,
        env,
        (
            f'name = "vmm"\nruntimes = ["{vmm}"]\n[runtime.{vmm}]\nbinary = "{binary}"\n'
            '[[experiment]]\ntype = "boot"\nruns = 3\nwarmups = 1\n'
            '[[experiment]]\ntype = "density"\ninstances = 5\ninstances_per_benchmark = 5\n'
        ),
    )
    mine = [s for s in store.samples(rid) if s.runtime == vmm and not s.warmup]
    assert mine and not [s.error for s in mine if s.error]
    for metric in ("boot.spawn_to_exit", "boot.spawn_to_ready", "boot.spawn_to_first_output"):
        values = [s.value for s in mine if s.metric == metric]
        assert len(values) >= 3 and all(0 < v < 10_000 for v in values), (metric, values)
    pss = [s.value for s in mine if s.metric == "density.pss"]
    vmm_only = [s.value for s in mine if s.metric == "density.pss_without_guest_ram"]
    assert len(pss) == 5 and len(vmm_only) == 5
    assert all(0 < v < p for v, p in zip(vmm_only, pss, strict=True)), (vmm_only, pss)
    assert not any(s.emulated for s in mine)
    assert labelled(rid) == []


def test_bring_your_own_image_is_booted_and_timed_like_the_minimal_guest(env, tmp_path):
    """An image built elsewhere: here the minimal kernel given by path, with its own
    command line and a ready expression on its console (`{name}` filled in by virtbench)."""
    kernel = tmp_path / "vb-minikernel"  # as set-up built it (`virtbench build`), copied
    shutil.copy(Paths.from_env().cache / "guest-build" / "vb-minikernel", kernel)
    for mode, workload, metric in (
        ("sleep", "sleep", "boot.spawn_to_ready"),
        ("hello", "hello", "boot.spawn_to_exit"),
    ):
        rid, store = run_spec(
            tmp_path,
            env,
            (
                f'name = "byo"\nruntimes = ["qemu"]\n[runtime.qemu]\nguest = "image"\n'
                f'kernel = "{kernel}"\ncmdline = "vb.mode={mode} vb.name={{name}}"\n'
                'ready = "VB-READY {name}"\n'
                f'[[experiment]]\ntype = "boot"\nworkloads = ["{workload}"]\n'
                "runs = 2\nwarmups = 0\n"
            ),
        )
        mine = [s for s in store.samples(rid) if s.experiment == "boot"]
        assert not [s.error for s in mine if s.error]
        values = [s.value for s in mine if s.metric == metric]
        assert len(values) == 2 and all(0 < v < 10_000 for v in values), (mode, values)
        sizes = [s for s in store.samples(rid) if s.metric == "image_size"]
        assert sizes and sizes[0].value == kernel.stat().st_blocks * 512 / 2**20, sizes
        assert labelled(rid) == []
    path = tmp_path / "bad.toml"
    path.write_text(
        'name = "bad"\nruntimes = ["qemu"]\n[runtime.qemu]\nguest = "image"\n'
        '[[experiment]]\ntype = "boot"\n'
    )
    res = cli("run", str(path), env=env)
    assert res.returncode == 2 and 'needs kernel = "/path/to/kernel"' in res.stdout + res.stderr


@pytest.mark.parametrize("label", ["qemu", "qemu:q35"])
def test_vm_on_the_bridge_gets_a_tap_that_goes_with_it(label, ctx, artifact):
    rt = driver(label, ctx)
    name = naming.name(ctx.run_id, "1")
    spec = InstanceSpec(name=name, argv=sleep.argv(name), rootfs=artifact.path, network="bridge")
    inst = rt.start(spec, detach=True)
    tap = inst.own.tap
    assert ctx.probe is not None and ctx.probe.wait(name, 30) is not None
    assert tap.startswith(f"vb-{ctx.run_id}-t") and len(tap) <= 15
    net = Path("/sys/class/net") / tap
    assert (net / "master").resolve().name == f"vb-{ctx.run_id}-br"
    assert (net / "carrier").read_text().strip() == "1"  # QEMU holds it open
    assert inst.address is not None and ipaddress.ip_address(inst.address) in ipaddress.ip_network(
        f"{ctx.bridge.host_ip}/{ctx.bridge.prefixlen}", strict=False
    )
    rt.stop(inst)
    assert not net.exists()
    assert [x for x in labelled(ctx.run_id) if not x.endswith("-br")] == []


def test_density_of_bridged_vms_leaves_no_tap(env, tmp_path):
    rid, store = run_spec(
        tmp_path,
        env,
        (
            'name = "taps"\nruntimes = ["qemu"]\n[instance]\nnetwork = "bridge"\n'
            '[[experiment]]\ntype = "density"\ninstances = 8\ninstances_per_benchmark = 4\n'
        ),
    )
    reached = [s.value for s in store.samples(rid) if s.metric == "density.reached"]
    assert reached == [8.0]
    assert labelled(rid) == []


def test_linux_guest_under_tcg_runs_hello_and_sleep(env, tmp_path):
    """Debian's cloud kernel with an initramfs of the artifact and vb-init as PID 1, under
    emulation (these hosts' PVM KVM cannot boot Linux): hello's status comes back from the
    guest, sleep's ready line from its console; every sample says emulated."""
    rid, store = run_spec(
        tmp_path,
        env,
        (
            'name = "linux"\nruntimes = ["qemu:q35:tcg"]\n'
            '[runtime.qemu]\nguest = "linux"\n'
            '[[experiment]]\ntype = "boot"\nruns = 1\nwarmups = 0\ntimeout_s = 180\n'
        ),
    )
    boots = [s for s in store.samples(rid) if s.experiment == "boot"]
    assert boots and not [s.error for s in boots if s.error]
    mine = {s.metric: s for s in boots if s.runtime == "qemu:q35:tcg"}
    wanted = {"boot.spawn_to_exit", "boot.spawn_to_ready", "boot.spawn_to_first_output"}
    assert wanted <= set(mine), sorted(mine)
    assert all(s.emulated for s in mine.values())
    first = mine["boot.spawn_to_first_output"].value
    assert first is not None and 0 < first < mine["boot.spawn_to_ready"].value
    assert labelled(rid) == []
    res = cli(
        "run",
        "boot",
        "--runtimes",
        "qemu:microvm:tcg",
        "--workloads",
        "hello",
        "--runs",
        "1",
        "--warmups",
        "0",
        env=env,
    )
    assert res.returncode == 0  # the minimal guest
    path = tmp_path / "mvm.toml"
    path.write_text(
        'name = "m"\nruntimes = ["qemu:microvm:tcg"]\n[runtime.qemu]\n'
        'guest = "linux"\n[[experiment]]\ntype = "boot"\n'
    )
    res = cli("run", str(path), env=env)
    assert res.returncode == 2 and "use qemu:q35:tcg" in res.stdout + res.stderr


def test_linux_kernel_unpacked_for_firecracker_boots_by_its_pvh_entry(env, tmp_path):
    """Firecracker and Cloud Hypervisor load only ELF kernels, so a Linux guest's bzImage is
    unpacked for them; they need KVM, which cannot boot Linux on these hosts, so QEMU (which
    loads an ELF vmlinux by its PVH entry) boots that very file under emulation."""
    cache = Paths.from_env().cache
    vmlinux = elf_kernel(debian_kernel(cache).image, cache / "kernels" / "elf")
    assert vmlinux.read_bytes()[:4] == b"\x7fELF"
    rid, store = run_spec(
        tmp_path,
        env,
        (
            'name = "pvh"\nruntimes = ["qemu:q35:tcg"]\n'
            f'[runtime.qemu]\nguest = "linux"\nkernel = "{vmlinux}"\n'
            '[[experiment]]\ntype = "boot"\nworkloads = ["hello"]\nruns = 1\nwarmups = 0\n'
            "timeout_s = 180\n"
        ),
    )
    mine = {s.metric: s for s in store.samples(rid) if s.experiment == "boot"}
    assert "boot.spawn_to_exit" in mine and not [s.error for s in mine.values() if s.error]
    assert all(s.emulated for s in mine.values())
    assert labelled(rid) == []


def test_linux_guest_serves_nginx_to_the_host_under_tcg(env, tmp_path):
    """The acceptance's `run throughput --workloads nginx --runtimes qemu:q35:tcg`: nginx in
    a Linux guest on a tap of the run's bridge, wrk on the host; results marked emulated."""
    rid, store = run_spec(
        tmp_path,
        env,
        (
            'name = "vmnginx"\nruntimes = ["qemu:q35:tcg"]\n[instance]\nnetwork = "bridge"\n'
            '[[experiment]]\ntype = "throughput"\nworkloads = ["nginx"]\nruns = 1\n'
            "ready_timeout_s = 240\n[experiment.params.nginx]\nconnections = 4\nduration_s = 3\n"
        ),
    )
    mine = [s for s in store.samples(rid) if s.experiment == "throughput"]
    assert mine and not [s.error for s in mine if s.error], [s.error for s in mine]
    rps = [s.value for s in mine if s.metric.endswith("requests_per_s")]
    assert rps and all(v > 0 for v in rps), sorted({s.metric for s in mine})
    assert all(s.emulated for s in mine)
    assert labelled(rid) == []


def test_kill_9_of_a_run_of_bridged_vms_then_clean_removes_vms_and_taps(env, tmp_path):
    path = tmp_path / "vms.toml"
    path.write_text(
        'name = "k"\nruntimes = ["qemu"]\n[instance]\nnetwork = "bridge"\n'
        '[[experiment]]\ntype = "density"\ninstances = 60\n'
    )
    p, rid = start_run(str(path), env=env)
    deadline = time.monotonic() + 60
    while len([x for x in labelled(rid) if x.startswith(f"link vb-{rid}-t")]) < 5:
        assert time.monotonic() < deadline and p.poll() is None, "VMs did not start"
        time.sleep(0.1)
    p.kill()
    p.communicate(timeout=30)
    left = labelled(rid)
    assert any(x.startswith("process") for x in left) and any("-t" in x for x in left), left
    clean_crashed(rid, env)


def test_linux_guest_gets_a_data_disk_for_fio_and_it_goes_with_the_instance(env, tmp_path):
    """fio needs a data directory on a disk (O_DIRECT): a Linux guest gets a sparse ext4
    image of its own as its first virtio disk, mounted at /data by vb-init, and the image
    goes with the instance (nothing of the run's data directory is left)."""
    rid, store = run_spec(
        tmp_path,
        env,
        (
            'name = "vmfio"\nruntimes = ["qemu:q35:tcg"]\n'
            "[runtime.qemu]\ndata_disk_mib = 256\n"
            '[[experiment]]\ntype = "throughput"\nworkloads = ["fio"]\nruns = 1\n'
            "client_timeout_s = 600\n"
            '[experiment.params.fio]\ntests = ["randrw"]\nruntime_s = 2\nsize = "32M"\n'
        ),
    )
    mine = [s for s in store.samples(rid) if s.experiment == "throughput"]
    assert mine and not [s.error for s in mine if s.error], [s.error for s in mine]
    iops = [s.value for s in mine if s.metric.endswith("iops")]
    assert iops and all(v > 0 for v in iops), sorted({s.metric for s in mine})
    assert all(s.emulated for s in mine)
    assert not Paths.from_env().data_dir(rid).exists()
    assert labelled(rid) == []
