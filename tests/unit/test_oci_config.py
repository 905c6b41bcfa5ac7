"""The bundle config.json follows the OCI runtime spec's shape for what we set."""

from pathlib import Path

from virtbench.runtimes.base import Instance, InstanceSpec
from virtbench.runtimes.oci import OCI_VERSION, bundle_config


def make(network="none", netns=None, **spec_kw) -> dict:
    spec = InstanceSpec(name="vb-abc123-1", argv=("/bin/vb-hello",), rootfs=Path("/r"), **spec_kw)
    inst = Instance(spec=spec, runtime="crun", log_path=Path("/dev/null"), argv=spec.argv)
    inst.binds.append((Path("/run/virtbench/runs/abc123/probe"), "/run/vb"))
    return bundle_config(inst, "abc123", network, netns)


def ns_types(cfg) -> dict:
    return {n["type"]: n.get("path") for n in cfg["linux"]["namespaces"]}


def test_required_fields_and_labels():
    cfg = make()
    assert cfg["ociVersion"] == OCI_VERSION
    assert cfg["root"] == {"path": "/r", "readonly": True}
    assert cfg["process"]["args"] == ["/bin/vb-hello"]
    assert cfg["process"]["terminal"] is False
    assert cfg["annotations"]["org.virtbench.run"] == "abc123"
    assert cfg["linux"]["cgroupsPath"] == "/virtbench/vb-abc123-1"
    assert "VIRTBENCH_INSTANCE=vb-abc123-1" in cfg["process"]["env"]
    assert {
        "destination": "/run/vb",
        "type": "bind",
        "source": "/run/virtbench/runs/abc123/probe",
        "options": ["rbind", "rw"],
    } in cfg["mounts"]


def test_network_modes():
    assert ns_types(make("none"))["network"] is None and "network" in ns_types(make("none"))
    assert "network" not in ns_types(make("host"))
    assert (
        ns_types(make("bridge", Path("/run/netns/vb-abc123-1")))["network"]
        == "/run/netns/vb-abc123-1"
    )
    assert "user" not in ns_types(make())


def test_limits():
    cfg = make(memory_mib=64, cpus="1", pids_limit=64)
    assert cfg["linux"]["resources"]["memory"] == {"limit": 64 * 1024 * 1024}
    assert cfg["linux"]["resources"]["cpu"] == {"cpus": "1"}
    assert cfg["linux"]["resources"]["pids"] == {"limit": 64}
    assert "memory" not in make()["linux"]["resources"]
    assert "pids" not in make()["linux"]["resources"]
