"""The host shapes users run, in the parts that need no such host: where systemd puts an
engine's slices and virtbench's delegated parent, the shape as a fact of the testbed,
the checks a host with Linux-booting KVM or AppArmor takes, and stock tools' output."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.conftest import need

from virtbench.host import cgroup_stats, cgroups, delegation, systemd, testbed
from virtbench.loadgen import baseline
from virtbench.runtimes.lxc import lxc
from virtbench.runtimes.oci import apparmor, base
from virtbench.runtimes.oci.crun import Crun
from virtbench.workloads import attackers

V2 = "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime 0 0\n"


def test_a_systemd_v2_host_delegates_virtbench_parent(tmp_path: Path):
    mounts = tmp_path / "mounts"
    mounts.write_text(V2)
    plain = cgroups.Layout.detect(mounts, systemd_init=False)
    assert plain.parent == "virtbench" and not plain.delegated
    owned = cgroups.Layout.detect(mounts, systemd_init=True)
    assert owned.delegated and owned.parent == "vb.slice/virtbench.service"
    assert owned.dirs("vb-abc123-0001") == [
        Path("/sys/fs/cgroup/vb.slice/virtbench.service/vb-abc123-0001")
    ]
    # systemd owns the tree only where it is unified: a v1 host keeps the plain parent
    hybrid = tmp_path / "hybrid"
    hybrid.write_text("cgroup /sys/fs/cgroup/memory cgroup rw,memory 0 0\n" + V2)
    assert cgroups.Layout.detect(hybrid, systemd_init=True).parent == "virtbench"


def test_children_are_instances_not_the_holder(tmp_path: Path):
    layout = cgroups.Layout(2, {}, tmp_path, cgroups.DELEGATED)
    base = tmp_path / cgroups.DELEGATED
    for d in ("holder", "vb-abc123-0001", "vb-abc123-0002"):
        (base / d).mkdir(parents=True)
    assert sorted(d.name for d in layout.children()) == ["vb-abc123-0001", "vb-abc123-0002"]


def test_the_delegated_unit_goes_with_its_cgroup_and_is_said_so_only_then(
    tmp_path: Path, monkeypatch
):
    layout = cgroups.Layout(2, {}, tmp_path, cgroups.DELEGATED)
    parent = tmp_path / cgroups.DELEGATED
    stopped = []
    monkeypatch.setattr(systemd, "stop", stopped.append)  # systemd left the directory
    assert not delegation.release(layout) and not stopped  # nothing there
    (parent / "vb-abc123-0001").mkdir(parents=True)
    (parent / "holder").mkdir()
    assert not delegation.release(layout) and not stopped  # an instance is left
    (parent / "vb-abc123-0001").rmdir()
    assert delegation.release(layout)
    assert stopped == ["virtbench.service"] and not parent.exists()
    # a second call has nothing to remove, and says so
    assert not delegation.release(layout) and stopped == ["virtbench.service"]


def test_memory_parts_are_read_in_each_versions_own_keys(tmp_path: Path):
    """memory.stat's anon, page cache and kernel parts: v2's keys (its `kernel`, or the sum
    of its parts on a kernel without one), v1's hierarchical ones and kmem's own file."""
    v2 = cgroups.Layout(2, {}, tmp_path / "v2", "virtbench")
    d = tmp_path / "v2/virtbench/vb-abc123-0001"
    d.mkdir(parents=True)
    (d / "memory.stat").write_text("anon 4096\nfile 8192\nkernel 12288\nslab 100\n")
    assert cgroup_stats.memory_parts(v2, d.name) == {"anon": 4096, "file": 8192, "kernel": 12288}
    (d / "memory.stat").write_text(
        "anon 4096\nfile 8192\nkernel_stack 16384\npagetables 4096\npercpu 80\nsock 0\nslab 2000\n"
    )
    assert cgroup_stats.memory_parts(v2, d.name)["kernel"] == 16384 + 4096 + 80 + 2000
    v1 = cgroups.Layout(1, {"memory": tmp_path / "v1"}, None, "virtbench")
    d = tmp_path / "v1/virtbench/vb-abc123-0001"
    d.mkdir(parents=True)
    (d / "memory.stat").write_text("rss 1\ncache 2\ntotal_rss 4096\ntotal_cache 8192\n")
    assert cgroup_stats.memory_parts(v1, d.name) == {"anon": 4096, "file": 8192}  # no kmem file
    (d / "memory.kmem.usage_in_bytes").write_text("12288\n")
    assert cgroup_stats.memory_parts(v1, d.name)["kernel"] == 12288
    assert cgroup_stats.memory_parts(v1, "vb-abc123-0002") is None  # no cgroup: unread, not 0


def test_pressure_is_read_from_the_some_line_of_each_file_on_v2_only(tmp_path: Path):
    v2 = cgroups.Layout(2, {}, tmp_path, "virtbench")
    d = tmp_path / "virtbench/vb-abc123-0001"
    d.mkdir(parents=True)
    (d / "cpu.pressure").write_text(
        "some avg10=1.00 avg60=0.50 avg300=0.10 total=1234567\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=99\n"
    )
    (d / "memory.pressure").write_text("some avg10=0.00 avg60=0.00 avg300=0.00 total=42\n")
    assert cgroup_stats.stall_totals(v2, d.name) == {"cpu": 1234567, "memory": 42}  # no io file
    assert cgroup_stats.stall_totals(v2, "vb-abc123-0002") is None  # nothing read: not zeros
    v1 = cgroups.Layout(1, {"memory": tmp_path}, None, "virtbench")
    assert cgroup_stats.stall_totals(v1, d.name) is None


def test_a_directory_a_stopped_unit_left_is_not_taken_for_the_delegated_parent(
    tmp_path: Path, monkeypatch
):
    """The unit stopped and systemd left its cgroup (a child still dying): the holder is
    there but empty. The next run removes what is empty of it and starts the unit again
    (its process straight into the holder where systemd can: DelegateSubgroup=), rather
    than write into a directory systemd may remove under it; once the unit's process
    holds the holder, it is taken as running, and nothing is started again."""
    from types import SimpleNamespace

    parent = tmp_path / cgroups.DELEGATED
    (parent / "holder").mkdir(parents=True)
    started: list[list[str]] = []

    def run(argv, **kw):  # systemd makes the cgroup afresh, its process in the holder
        started.append(argv)
        (parent / "holder").mkdir(parents=True, exist_ok=True)
        (parent / "holder/cgroup.procs").write_text("4242\n")
        return SimpleNamespace(returncode=0, brief=lambda: "")

    monkeypatch.setattr(systemd, "active", lambda unit: bool(started))
    monkeypatch.setattr(systemd, "version", lambda: 257)
    monkeypatch.setattr(delegation.proc, "run", run)
    delegation.delegate(parent)
    assert len(started) == 1 and started[0][0] == "systemd-run", started
    assert "--property=DelegateSubgroup=holder" in started[0]
    delegation.delegate(parent)  # held: running, nothing started again
    assert len(started) == 1


def test_on_an_older_systemd_the_unit_s_process_is_moved_once_it_is_there(
    tmp_path: Path, monkeypatch
):
    """systemd 252 has no DelegateSubgroup=: the process reaches the unit's cgroup after
    systemd says it started, and is moved to the holder once it is there."""
    from types import SimpleNamespace

    parent = tmp_path / cgroups.DELEGATED
    calls: list[list[str]] = []

    def run(argv, **kw):
        calls.append(argv)
        parent.mkdir(parents=True)
        (parent / "cgroup.procs").write_text("")  # not there yet: attached a moment later
        return SimpleNamespace(returncode=0, brief=lambda: "")

    reads = []

    def active(unit):
        if calls and len(reads) == 2:
            (parent / "cgroup.procs").write_text("4242\n")
        reads.append(unit)
        return bool(calls)

    monkeypatch.setattr(systemd, "active", active)
    monkeypatch.setattr(systemd, "version", lambda: 252)
    monkeypatch.setattr(delegation.proc, "run", run)
    delegation.delegate(parent)
    assert not any("DelegateSubgroup" in a for a in calls[0])
    assert (parent / "holder/cgroup.procs").read_text() == "4242"


def test_slices_nest_at_each_dash():
    assert systemd.slice_path("vb-abc123-0001.slice") == Path(
        "vb.slice/vb-abc123.slice/vb-abc123-0001.slice"
    )
    assert systemd.run_slice("abc123") == "vb-abc123.slice"
    assert systemd.run_of("vb-abc123.slice") == "abc123"
    assert systemd.run_of("vb-abc123-0001.slice") == "abc123"
    assert systemd.run_of("vb-job.service") is None  # not a run's
    assert systemd.run_of("virtbench.service") is None


def test_an_instance_an_engine_placed_through_systemd_is_found_in_its_slice(tmp_path: Path):
    layout = cgroups.Layout(2, {}, tmp_path, cgroups.DELEGATED)
    name = "vb-abc123-0001"
    assert layout.memory_dir(name) == tmp_path / cgroups.DELEGATED / name  # neither yet
    placed = tmp_path / "vb.slice/vb-abc123.slice/vb-abc123-0001.slice"
    (placed / "docker-0123.scope").mkdir(parents=True)
    (placed / "docker-0123.scope" / "cgroup.procs").write_text("41\n42\n")
    assert layout.memory_dir(name) == placed
    assert sorted(cgroups.procs(layout, name)) == [41, 42]  # the scope below, walked
    (placed / "memory.current").write_text("1048576\n")
    assert cgroup_stats.memory_bytes(layout, name) == 1048576
    own = tmp_path / cgroups.DELEGATED / name
    own.mkdir(parents=True)
    assert layout.memory_dir(name) == own  # virtbench's own cgroup comes first


def test_memory_limit_file_by_version(tmp_path: Path):
    assert cgroups.Layout(1, {"memory": tmp_path}, None).memory_limit_file == (
        "memory.limit_in_bytes"
    )
    assert cgroups.Layout(2, {}, tmp_path).memory_limit_file == "memory.max"


def test_host_shape_is_part_of_the_testbed():
    base = {"cpu_model": "X", "cpu_count": 2, "kernel": "6.1", "kvm": "hardware"}
    v1 = {**base, "host_shape": {"init": "no systemd", "cgroups": "v1 (hybrid)"}}
    v2 = {**base, "host_shape": {"init": "systemd", "cgroups": "v2"}}
    assert testbed.testbed_id(v1) != testbed.testbed_id(v2)
    assert testbed.differences(v1, v2) == [
        "host no systemd, cgroup v1 (hybrid) vs systemd, cgroup v2"
    ]
    assert "systemd, cgroup v2" in testbed.describe(v2)
    # a run from before the shape was recorded cannot be told apart by it; one whose
    # clients ran elsewhere still can
    assert testbed.differences(base, v2) == []
    remote = {**v2, "loadgen": {"host": "lg1", "facts": {}}}
    assert testbed.differences(v2, remote) == ["clients here vs on lg1"]


@pytest.mark.parametrize(("workload", "data"), [("attacker cpu", False), ("attacker disk", True)])
def test_an_attacker_is_known_by_its_workload_name(workload, data):
    attacker = attackers.of_workload(workload)
    assert attacker is not None and attacker.data is data
    assert attackers.of_workload("nginx") is None
    assert attackers.workload_name(attacker.name) == workload


def test_a_vm_checks_isolation_attackers_where_kvm_boots_linux(monkeypatch):
    """The catalog's check on a host whose KVM boots Linux guests (not this machine's
    nested PVM) reached an attacker's name as if it were a workload's."""
    from virtbench.host import facts
    from virtbench.runtimes.vm.qemu import Qemu, QemuOptions

    monkeypatch.setattr(facts, "kvm_kind", lambda: "hardware")
    opts = QemuOptions(guest="linux")
    for a in attackers.S1_ATTACKERS:
        assert Qemu.cannot_run(attackers.workload_name(a), opts) is None


def test_lxc_says_when_apparmor_lacks_its_profile(tmp_path: Path, monkeypatch):
    profiles = tmp_path / "profiles"
    profiles.write_text("docker-default (enforce)\n")
    monkeypatch.setattr(lxc, "lsm", lambda: "apparmor")
    why = lxc.apparmor_unready(profiles)
    assert why is not None and lxc.LXC_PROFILE in why
    profiles.write_text(f"{lxc.LXC_PROFILE} (enforce)\ndocker-default (enforce)\n")
    assert lxc.apparmor_unready(profiles) is None
    monkeypatch.setattr(lxc, "lsm", lambda: "none")
    assert lxc.apparmor_unready(tmp_path / "absent") is None  # AppArmor off: nothing to load


class _Shell:
    """A load generator whose shell is this host's /bin/sh (dash on Debian, with mawk)."""

    def shell(self, script: str):
        import subprocess

        from virtbench.host.proc import Result

        res = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True)
        return Result(("sh",), res.returncode, res.stdout, res.stderr, 0.0)


def test_load_generator_memory_is_read_with_stock_tools():
    facts = baseline.host_facts(_Shell())
    total_kib = next(
        int(ln.split()[1])
        for ln in Path("/proc/meminfo").read_text().splitlines()
        if ln.startswith("MemTotal:")
    )
    assert facts["memory_bytes"] == total_kib * 1024, facts


def test_an_engine_under_systemd_gets_a_slice_per_instance(tmp_path: Path, monkeypatch):
    from virtbench.runtimes.engines.placement import Placement

    stopped: list[str] = []
    monkeypatch.setattr(systemd, "stop", stopped.append)
    fs = Placement("cgroupfs", "virtbench")
    assert fs.cgroup_parent("vb-abc123-0001") == "/virtbench/vb-abc123-0001"
    fs.release("abc123", [tmp_path])
    assert stopped == [] and "under virtbench's cgroup" in fs.words("dockerd", "this run's")
    sd = Placement("systemd", "vb.slice/virtbench.service")
    assert sd.cgroup_parent("vb-abc123-0001") == "vb-abc123-0001.slice"
    assert sd.cgroup_parent("vb-abc123-0002") == "vb-abc123-0002.slice"
    assert "systemd (the host's dockerd's cgroup driver; a slice" in sd.words(
        "dockerd", "the host's"
    )
    run = tmp_path / "vb.slice/vb-abc123.slice"
    for n in ("0001", "0002", "0003"):  # 0003: another engine's, still open
        (run / f"vb-abc123-{n}.slice").mkdir(parents=True)
    for f in ("cgroup.procs", "memory.current"):  # a cgroup's own files are no slices
        (run / f).write_text("0\n")
    sd.release("abc123", [tmp_path])
    assert stopped == ["vb-abc123-0001.slice", "vb-abc123-0002.slice"]  # each: 0003 stays
    stopped.clear()
    for n in ("0002", "0003"):  # stopped (systemd removes them), and the other engine's
        (run / f"vb-abc123-{n}.slice").rmdir()
    sd.cgroup_parent("vb-abc123-0001")
    sd.release("abc123", [tmp_path])
    assert stopped == ["vb-abc123.slice"]  # nobody else's: the run's slice whole, at once


def test_the_runs_apparmor_profile_compiles(tmp_path: Path):
    """The profile a run loads where AppArmor is on and no engine's is: compiled by the
    host's own parser (without loading it: this host's kernel may have no AppArmor)."""
    need(shutil.which("apparmor_parser") is not None, "apparmor_parser (apt-get install apparmor)")
    profile = apparmor.name("abc123", "crun", "crun")
    assert re.fullmatch(r"vb-abc123-crun-[0-9a-f]{6}", profile), profile
    # one per label: runsc's platforms are labels of one binary, each closed apart
    assert apparmor.name("abc123", "runsc", "runsc") != apparmor.name(
        "abc123", "runsc", "runsc:kvm"
    )
    assert apparmor.of(profile, "crun") and not apparmor.of(profile, "runc")
    assert not apparmor.of("vb-abc123-crun", "crun") and not apparmor.of("docker-default", "crun")
    source = tmp_path / "p"
    source.write_text(apparmor.text(profile, "crun"))
    res = subprocess.run(
        [
            "apparmor_parser",
            "--skip-kernel-load",
            "--skip-cache",
            "-o",
            str(tmp_path / "bin"),
            str(source),
        ],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "bin").stat().st_size > 0


def test_profiles_of_a_run_are_listed_by_their_runtime(tmp_path: Path, monkeypatch):
    fs = tmp_path / "securityfs"
    fs.mkdir()
    crun, runc = (apparmor.name("abc123", b, b) for b in ("crun", "runc"))
    (fs / "profiles").write_text(f"{crun} (enforce)\n{runc} (enforce)\ndocker-default (enforce)\n")
    monkeypatch.setattr(apparmor, "SECURITYFS", fs)
    monkeypatch.setattr(base, "lsm", lambda: "apparmor")
    assert Crun.profiles() == [crun]
    apparmor.unload(crun, fs)
    assert (fs / ".remove").read_text() == crun
    apparmor.unload("vb-gone00-crun-000000", fs)  # not loaded: nothing to do
    assert (fs / ".remove").read_text() == crun


def test_every_figure_of_an_emulated_host_is_marked_emulated(tmp_path: Path):
    """A guest host under QEMU TCG (how the suite proves other host shapes here): the
    runtimes themselves run natively inside it, yet every figure is emulated."""
    from tests.fakeruntime import fake_session, run
    from tests.faketruth import RuntimeTruth, Truth

    for emulated in (False, True):
        truth = Truth({"fa": RuntimeTruth(exit_ms=10.0, ready_ms=20.0)}, emulated_host=emulated)
        exp = {"type": "boot", "runs": 3, "warmups": 0}
        with fake_session(tmp_path / str(emulated), truth, ["fa"], exp) as (s, _world):
            samples = run(s)
        assert samples and all(x.emulated is emulated for x in samples), emulated


def test_podman_runs_its_versions_own_network_backend():
    from virtbench.runtimes.engines import podman

    assert podman.network_backend("4.3.1") == "cni"  # Debian 12's
    assert podman.network_backend("5.4.2") == "netavark"  # Debian 13's, built without CNI
    assert 'network_backend = "netavark"' in podman.containers_conf("systemd", "netavark")
    assert 'cgroup_manager = "systemd"' in podman.containers_conf("systemd", "netavark")
