"""The `cri` runtimes' pieces that need no containerd: the image layout containerd imports,
its configuration, the pods' CNI network, the CRI's timestamps, crictl's errors."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import time
import tomllib
from pathlib import Path

import pytest

from virtbench.runtimes.engines import containerd
from virtbench.runtimes.engines.cri_pod import epoch_ns, monotonic_of
from virtbench.runtimes.engines.crictl import _reason
from virtbench.runtimes.engines.oci_image import NAME_ANNOTATION, layout_tar


def _members(tar: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        return {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}  # type: ignore[union-attr]


def test_an_image_layout_names_its_image_and_every_blob_by_its_digest():
    """The index names the image as containerd reads it; the manifest, config and layer
    are blobs whose names are their sha256; the config's diff id is the layer's."""
    layer = b"a layer's tar, uncompressed" * 100
    files = _members(
        layout_tar(layer, "localhost/vb-abc123-rootfs:1", ["/bin/vb-sleep"], {"k": "v"})
    )
    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    for path, data in files.items():
        if path.startswith("blobs/sha256/"):
            assert path.rsplit("/", 1)[1] == hashlib.sha256(data).hexdigest()
    (entry,) = json.loads(files["index.json"])["manifests"]
    assert entry["annotations"][NAME_ANNOTATION] == "localhost/vb-abc123-rootfs:1"
    manifest = json.loads(files["blobs/sha256/" + entry["digest"].split(":")[1]])
    config = json.loads(files["blobs/sha256/" + manifest["config"]["digest"].split(":")[1]])
    assert manifest["layers"][0]["size"] == len(layer)
    assert config["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(layer).hexdigest()]
    assert config["config"]["Cmd"] == ["/bin/vb-sleep"] and config["config"]["Labels"] == {"k": "v"}


def test_the_run_containerd_keeps_to_its_own_places_and_asks_no_registry(tmp_path: Path):
    """Its root, state, sockets and CNI directory are the run's; the sandbox image is the
    imported one; each handler through its shim; pods' namespaces under its state."""
    where = containerd.Layout(tmp_path / "root", tmp_path / "state", tmp_path / "cni")
    text = containerd.config_toml(where, ["crun", "runsc"], "localhost/vb-abc123-pause:1")
    conf = tomllib.loads(text)
    assert conf["root"] == str(tmp_path / "root")
    assert conf["grpc"]["address"] == str(where.socket)
    assert conf["ttrpc"]["address"].startswith(str(tmp_path / "state"))
    cri = conf["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["sandbox_image"] == "localhost/vb-abc123-pause:1"
    assert cri["netns_mounts_under_state_dir"] is True
    assert cri["cni"]["conf_dir"] == str(tmp_path / "cni")
    runtimes = cri["containerd"]["runtimes"]
    assert cri["containerd"]["default_runtime_name"] == "crun"
    assert runtimes["crun"]["runtime_type"] == containerd.RUNC_SHIM
    assert runtimes["crun"]["options"]["BinaryName"].endswith("crun")
    assert runtimes["runsc"]["runtime_type"] == containerd.RUNSC_SHIM
    assert runtimes["runsc"]["options"]["ConfigPath"] == str(tmp_path / "state" / "runsc.toml")
    assert tomllib.loads(containerd.RUNSC_TOML)["runsc_config"]["platform"] == "ptrace"


def test_pods_get_the_run_bridge_and_nothing_leads_off_the_host(tmp_path: Path):
    conf = json.loads(
        containerd.cni_conflist("vb-abc123-cri", "vb-abc123-cri", "10.231.4.0/22", tmp_path)
    )
    bridge = conf["plugins"][0]
    assert bridge["bridge"] == "vb-abc123-cri" and bridge["ipMasq"] is False
    assert bridge["ipam"]["ranges"] == [[{"subnet": "10.231.4.0/22"}]]
    assert bridge["ipam"]["dataDir"] == str(tmp_path)


def test_an_unknown_handler_says_which_there_are():
    why, fix, host = containerd.handler_problem("kata")  # type: ignore[misc]
    assert "kata" in why and "runc" in fix and "runsc" in fix and not host


def test_a_missing_capability_is_read_from_the_status_file(tmp_path: Path):
    status = tmp_path / "status"
    status.write_text("Name:\tx\nCapEff:\t000001fffeffffff\n")  # all but CAP_SYS_RESOURCE
    assert not containerd.has_capability(containerd.CAP_SYS_RESOURCE, status)
    assert containerd.has_capability(21, status)  # CAP_SYS_ADMIN
    assert not containerd.has_capability(21, tmp_path / "missing")


@pytest.mark.parametrize(
    ("stamp", "ns"),
    [
        ("2026-12-02T09:35:35.123456789Z", 1796204135123456789),
        ("2026-12-02T09:35:35.5Z", 1796204135500000000),
        ("2026-12-02T09:35:35Z", 1796204135000000000),
        (1796204135000000001, 1796204135000000001),
        ("", None),
        ("yesterday", None),
    ],
)
def test_the_cri_timestamps_are_read_to_the_nanosecond(stamp, ns):
    assert epoch_ns(stamp) == ns


def test_an_exit_time_lands_on_the_monotonic_clock_where_it_happened():
    """A container that ended 50 ms ago (wall clock) ended 50 ms ago on the monotonic one."""
    wall = time.time_ns() - 50_000_000
    now = time.monotonic_ns()
    t = monotonic_of(wall)
    assert t is not None and 40_000_000 < now - t < 200_000_000
    assert monotonic_of(0) is None and monotonic_of(None) is None


def test_a_crictl_error_reads_as_the_cri_said_it():
    stderr = (
        'time="..." level=warning msg="Config ... does not exist"\n'
        'time="..." level=fatal msg="run pod sandbox: rpc error: code = Unknown desc = '
        'failed to create containerd task: OCI runtime create failed: no such handler"\n'
    )
    assert (
        _reason(stderr)
        == "failed to create containerd task: OCI runtime create failed: no such handler"
    )
    assert _reason("") == "(no output)"


def test_a_pod_launch_is_recorded_phase_by_phase_each_from_the_one_before():
    """A driver's marks (a pod's sandbox, its container's create and start) become one
    declared boot figure each, timed from the end of the phase before."""
    from virtbench import metrics
    from virtbench.experiments.boot import _phases

    recorded = []

    class Session:
        def record(self, sample):
            recorded.append(sample)

    class Inst:
        t_spawn_ns = 1_000_000
        phases = [
            ("pod_sandbox", 181_000_000),
            ("container_create", 201_000_000),
            ("container_start", 231_000_000),
        ]

    base = dict(experiment="boot", runtime="cri:crun", workload="sleep", repetition=0)
    _phases(Session(), Inst(), base)  # type: ignore[arg-type]
    got = {s.metric: s.value for s in recorded}
    assert got == {
        "boot.phase_pod_sandbox": 180.0,
        "boot.phase_container_create": 20.0,
        "boot.phase_container_start": 30.0,
    }
    for name in got:  # declared, not the registry's catch-all
        assert metrics.label(name) in ("pod sandbox", "container create", "container start")
