import io
import tarfile
from pathlib import Path

from virtbench.host import cgroup_stats, cgroups
from virtbench.runtimes.base import Instance, InstanceSpec, NoState
from virtbench.runtimes.lxc.lxd_config import image_tarballs, limits_cpu, raw_lxc


def inst() -> Instance:
    spec = InstanceSpec(name="vb-abc123-1", argv=("/bin/vb-sleep",), rootfs=Path("/r"))
    return Instance(spec=spec, runtime="lxd", log_path=Path("/l"), argv=spec.argv, own=NoState())


def keys(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        k, _, v = line.partition(" =")
        out.setdefault(k, []).append(v.strip())
    return out


def test_raw_lxc_makes_workload_init_in_our_cgroups_and_keeps_lxd_network_for_none():
    k = keys(raw_lxc(inst(), "none", None))
    assert k["lxc.init.cmd"] == ["/bin/vb-sleep"]
    assert k["lxc.cgroup.dir.container"] == ["virtbench/vb-abc123-1"]
    assert k["lxc.cgroup.dir.monitor"] == ["virtbench/vb-abc123-1-m"]
    assert k["lxc.environment"] == ["VIRTBENCH_INSTANCE=vb-abc123-1"]
    assert "lxc.namespace.share.net" not in k and "lxc.mount.auto" not in k


def test_shared_netns_drops_sysfs_and_probe_is_bind_mounted():
    i = inst()
    i.binds.append((Path("/run/virtbench/x/probe"), "/run/vb"))
    k = keys(raw_lxc(i, "bridge", Path("/run/netns/vb-abc123-1")))
    assert k["lxc.namespace.share.net"] == ["/run/netns/vb-abc123-1"]
    assert k["lxc.mount.auto"] == ["", "proc:rw"]  # reset LXD's, then /proc only
    assert k["lxc.mount.entry"] == [
        "tmpfs tmp tmpfs nosuid,nodev,create=dir 0 0",
        "/run/virtbench/x/probe run/vb none bind,create=dir 0 0",
    ]


def test_a_cpuset_is_in_raw_lxc_so_the_init_starts_pinned():
    i = inst()
    i.spec = InstanceSpec(name=i.name, argv=i.argv, rootfs=Path("/r"), cpus="1")
    assert keys(raw_lxc(i, "none", None))["lxc.cgroup.cpuset.cpus"] == ["1"]
    assert keys(raw_lxc(i, "none", None, 2))["lxc.cgroup2.cpuset.cpus"] == ["1"]
    assert "lxc.cgroup.cpuset.cpus" not in keys(raw_lxc(inst(), "none", None))


def test_limits_cpu_pins_a_single_cpu_instead_of_counting():
    assert limits_cpu("1") == "1-1"
    assert limits_cpu("0-1") == "0-1"
    assert limits_cpu("0,2") == "0,2"


def test_image_tarballs_are_split_metadata_and_root_owned_rootfs(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "vb-hello").write_bytes(b"\x7fELF")
    meta, root = image_tarballs(tmp_path, "virtbench run abc123")
    with tarfile.open(fileobj=io.BytesIO(meta)) as t:
        text = t.extractfile("metadata.yaml").read().decode()
    assert "architecture: x86_64" in text and "run abc123" in text
    with tarfile.open(fileobj=io.BytesIO(root)) as t:
        members = {m.name: m for m in t.getmembers()}
    assert members["./bin/vb-hello"].uid == 0


def test_ran_and_emptied_tells_not_started_from_exited(tmp_path):
    layout = cgroups.Layout(1, {"memory": tmp_path / "m", "cpuacct": tmp_path / "c"}, None)
    d = tmp_path / "c" / "virtbench" / "vb-abc123-1"
    assert not cgroup_stats.ran_and_emptied(layout, "vb-abc123-1")  # no cgroup yet
    d.mkdir(parents=True)
    (d / "cgroup.procs").write_text("")
    (d / "cpuacct.usage").write_text("0\n")
    assert not cgroup_stats.ran_and_emptied(layout, "vb-abc123-1")  # made, nothing ran
    (d / "cgroup.procs").write_text("123\n")
    (d / "cpuacct.usage").write_text("5000\n")
    assert not cgroup_stats.ran_and_emptied(layout, "vb-abc123-1")  # running
    (d / "cgroup.procs").write_text("")
    assert cgroup_stats.ran_and_emptied(layout, "vb-abc123-1")  # exited
    v2 = cgroups.Layout(2, {}, tmp_path / "u")
    u = tmp_path / "u" / "virtbench" / "vb-abc123-1"
    u.mkdir(parents=True)
    (u / "cgroup.procs").write_text("")
    (u / "cpu.stat").write_text("usage_usec 0\nuser_usec 0\n")
    assert not cgroup_stats.ran_and_emptied(v2, "vb-abc123-1")
    (u / "cpu.stat").write_text("usage_usec 17\nuser_usec 9\n")
    assert cgroup_stats.ran_and_emptied(v2, "vb-abc123-1")
