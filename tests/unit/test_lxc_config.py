from pathlib import Path

from virtbench.runtimes.base import Instance, InstanceSpec, NoState
from virtbench.runtimes.lxc.lxc import lxc_config


def inst(**kw) -> Instance:
    spec = InstanceSpec(name="vb-abc123-1", argv=("/bin/vb-sleep",), rootfs=Path("/r"), **kw)
    return Instance(spec=spec, runtime="lxc", log_path=Path("/l"), argv=spec.argv, own=NoState())


def keys(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        k, _, v = line.partition(" = ")
        out.setdefault(k, []).append(v)
    return out


def test_config_runs_workload_as_init_on_read_only_rootfs_in_our_cgroup():
    k = keys(lxc_config(inst(memory_mib=32, cpus="0", pids_limit=64), "none", 1))
    assert k["lxc.rootfs.path"] == ["dir:/r"] and k["lxc.rootfs.options"] == ["ro"]
    assert k["lxc.init.cmd"] == ["/bin/vb-sleep"]
    assert k["lxc.cgroup.dir.container"] == ["virtbench/vb-abc123-1"]
    assert k["lxc.cgroup.dir.monitor"] == ["virtbench/vb-abc123-1-m"]
    assert k["lxc.net.0.type"] == ["empty"]
    assert k["lxc.cgroup.memory.limit_in_bytes"] == [str(32 << 20)]
    assert k["lxc.cgroup.cpuset.cpus"] == ["0"]
    assert k["lxc.cgroup.pids.max"] == ["64"]
    assert "VIRTBENCH_INSTANCE=vb-abc123-1" in k["lxc.environment"]


def test_networks_and_probe_bind():
    i = inst()
    i.binds.append((Path("/run/virtbench/x/probe"), "/run/vb"))
    assert keys(lxc_config(i, "host", 1))["lxc.net.0.type"] == ["none"]
    i.netns = Path("/run/netns/vb-abc123-1")
    k = keys(lxc_config(i, "bridge", 2))
    assert k["lxc.namespace.share.net"] == ["/run/netns/vb-abc123-1"]
    assert "lxc.net.0.type" not in k
    assert "/run/virtbench/x/probe run/vb none bind,create=dir 0 0" in k["lxc.mount.entry"]
