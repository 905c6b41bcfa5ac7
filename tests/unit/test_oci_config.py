"""The bundle config.json follows the OCI runtime spec's shape for what we set."""

from pathlib import Path

from virtbench.runtimes.base import Instance, InstanceSpec, NoState
from virtbench.runtimes.oci.base import OCI_VERSION, bundle_config


def make(network="none", netns=None, **spec_kw) -> dict:
    spec = InstanceSpec(name="vb-abc123-1", argv=("/bin/vb-hello",), rootfs=Path("/r"), **spec_kw)
    inst = Instance(
        spec=spec, runtime="crun", log_path=Path("/dev/null"), argv=spec.argv, own=NoState()
    )
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


def test_the_engines_seccomp_template_is_filtered_as_the_engines_filter_it():
    """A rule holds when the container has every capability and one architecture of its
    `includes`, the kernel is new enough, and nothing of its `excludes` matches; the
    architectures are the host's with its sub-architectures (the template's archMap)."""
    from virtbench.runtimes.oci.security import seccomp

    template = {
        "defaultAction": "SCMP_ACT_ERRNO",
        "defaultErrnoRet": 38,
        "archMap": [
            {"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86"]},
            {"architecture": "SCMP_ARCH_AARCH64", "subArchitectures": ["SCMP_ARCH_ARM"]},
        ],
        "syscalls": [
            {"names": ["read", "write"], "action": "SCMP_ACT_ALLOW", "args": []},
            {
                "names": ["arch_prctl"],
                "action": "SCMP_ACT_ALLOW",
                "includes": {"arches": ["amd64"]},
            },
            {"names": ["breakpoint"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": ["arm"]}},
            {
                "names": ["chroot"],
                "action": "SCMP_ACT_ALLOW",
                "includes": {"caps": ["CAP_SYS_CHROOT"]},
            },
            {
                "names": ["chroot"],
                "action": "SCMP_ACT_ERRNO",
                "errnoRet": 1,
                "excludes": {"caps": ["CAP_SYS_CHROOT"]},
            },
            {"names": ["bpf"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}},
            {"names": ["new_call"], "action": "SCMP_ACT_ALLOW", "includes": {"minKernel": "6.3"}},
            {
                "names": ["personality"],
                "action": "SCMP_ACT_ALLOW",
                "args": [{"index": 0, "value": 8, "valueTwo": 0, "op": "SCMP_CMP_EQ"}],
            },
        ],
    }
    got = seccomp(template, ["CAP_SYS_CHROOT", "CAP_KILL"], "x86_64", "6.1.0-56-cloud-amd64")
    assert got["defaultAction"] == "SCMP_ACT_ERRNO" and got["defaultErrnoRet"] == 38
    assert got["architectures"] == ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86"]
    names = [(c["names"][0], c["action"]) for c in got["syscalls"]]
    assert names == [
        ("read", "SCMP_ACT_ALLOW"),
        ("arch_prctl", "SCMP_ACT_ALLOW"),
        ("chroot", "SCMP_ACT_ALLOW"),
        ("personality", "SCMP_ACT_ALLOW"),
    ]
    assert got["syscalls"][-1]["args"][0]["value"] == 8 and "args" not in got["syscalls"][0]
    without = seccomp(template, ["CAP_KILL"], "x86_64", "6.4.0")  # no CAP_SYS_CHROOT; newer
    calls = {c["names"][0]: c for c in without["syscalls"]}
    assert calls["chroot"]["action"] == "SCMP_ACT_ERRNO" and calls["chroot"]["errnoRet"] == 1
    assert "new_call" in calls and "bpf" not in calls


def test_the_host_security_module_is_read_from_securityfs_or_the_modules(tmp_path):
    from virtbench.host.facts import lsm

    sec, sysfs = tmp_path / "security", tmp_path / "sys"
    sec.mkdir()
    assert lsm(sec, sysfs) == "none"  # no securityfs, no module switches
    (sysfs / "module/apparmor/parameters").mkdir(parents=True)
    (sysfs / "module/apparmor/parameters/enabled").write_text("Y\n")
    assert lsm(sec, sysfs) == "apparmor"
    (sec / "lsm").write_text("lockdown,capability,landlock,yama,selinux,bpf\n")
    assert lsm(sec, sysfs) == "selinux"  # securityfs, when mounted, is what is active
