"""`cri:*` on a host whose own containerd serves the CRI: the run's pods go to it, as it
is configured (its handlers, its CNI network, its sandbox image), rather than to a
containerd the run starts; a run leaves nothing in it, and neither does a run killed
with kill -9 once `virtbench clean` has run. The host's containerd here is one the test
starts as a node would run it (its CRI on, a CNI bridge, its pause image already there),
on a socket of its own named by VIRTBENCH_CRI_ENDPOINT."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.integration.conftest import cli, labelled, short_state_dir, start_run

from virtbench.runtimes.engines import containerd, host_cri
from virtbench.runtimes.engines.oci_image import layout_tar
from virtbench.runtimes.network import free_subnet
from virtbench.runtimes.owners import find_by_cmdline
from virtbench.runtimes.tarball import tar_of
from virtbench.store import Store

PAUSE = "localhost/node-pause:1"  # the node's own sandbox image


@pytest.fixture
def node(artifact) -> Iterator[Path]:
    """A containerd serving the CRI as a node's does, on a socket of its own; stopped,
    with its shims, its mounts and its bridge, after the test."""
    if shutil.which("crictl") is None or shutil.which("containerd") is None:
        pytest.fail("crictl and containerd are installed by `make cri` and the set-up")
    top = short_state_dir()
    where = containerd.Layout(root=top / "root", state=top / "s", cni=top / "cni")
    for d in (where.root, where.state, where.cni):
        d.mkdir(parents=True)
    bridge = f"vbnode{os.getpid() % 10000}"
    conf = containerd.cni_conflist("node", bridge, str(free_subnet()), where.cni / "leases")
    (where.cni / "10-node.conflist").write_text(conf)
    where.config.write_text(containerd.config_toml(where, ["runc", "crun"], PAUSE))
    (where.state / "runsc.toml").write_text(containerd.RUNSC_TOML)
    log = open(top / "containerd.log", "w")  # noqa: SIM115 - closed below
    daemon = subprocess.Popen(["containerd", "--config", str(where.config)], stdout=log, stderr=log)
    try:
        _until_ready(where.socket, daemon)
        _import_pause(where.socket, artifact.path, top)
        host_cri.find.cache_clear()
        yield where.socket
    finally:
        _stop(daemon, where, bridge)
        log.close()
        host_cri.find.cache_clear()
        shutil.rmtree(top, ignore_errors=True)


def _until_ready(sock: Path, daemon: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while True:
        res = subprocess.run(host_cri.crictl(sock, "info"), capture_output=True, text=True)
        if res.returncode == 0:
            return
        assert daemon.poll() is None and time.monotonic() < deadline, res.stderr
        time.sleep(0.2)


def _import_pause(sock: Path, rootfs: Path, top: Path) -> None:
    tar = top / "pause.tar"
    tar.write_bytes(layout_tar(tar_of(rootfs), PAUSE, ["/bin/vb-sleep"], {}))
    ctr = ["ctr", "-a", str(sock), "-n", containerd.NAMESPACE, "images", "import", str(tar)]
    subprocess.run(ctr, check=True, capture_output=True, timeout=300)


def _stop(daemon: subprocess.Popen, where: containerd.Layout, bridge: str) -> None:
    """The node's containerd, then the shims it started (by the socket in their command
    line), the mounts under its directories, its bridge."""
    daemon.terminate()
    try:
        daemon.wait(timeout=60)
    except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait(timeout=30)
    for shim in find_by_cmdline("containerd-shim", str(where.socket)):
        with contextlib.suppress(Exception):
            shim.kill()
            shim.wait(timeout=30)
    mounts = Path("/proc/self/mounts").read_text().split("\n")
    for target in sorted((m.split()[1] for m in mounts if m.strip()), reverse=True):
        if target.startswith((str(where.root), str(where.state))):
            subprocess.run(["umount", "-l", target], check=False)
    subprocess.run(["ip", "link", "delete", bridge], check=False, capture_output=True)


def _holds(sock: Path, rid: str) -> list[str]:
    """The node's pods, containers and images that carry the run's id."""
    out = []
    for what, key in (("pods", "items"), ("ps", "containers"), ("images", "images")):
        argv = host_cri.crictl(sock, what, *(["-a"] if what == "ps" else []), "-o", "json")
        res = subprocess.run(argv, capture_output=True, text=True, check=True)
        text = json.dumps(json.loads(res.stdout).get(key) or [])
        out += [f"{what}: {rid}" for _ in range(text.count(f"vb-{rid}-"))]
    return out


def test_the_hosts_containerd_serves_the_pods_as_configured_and_keeps_nothing(node, env):
    """A boot run on cri:crun goes to the node's containerd (its conditions say so, and
    the run starts no containerd of its own), pods get the node's CNI addresses, and the
    node holds no pod, container or image of the run afterwards."""
    env = {**env, host_cri.ENDPOINT_ENV: str(node)}
    doctor = cli("doctor", env=env)
    assert "the host's, as configured" in doctor.stdout, doctor.stdout
    args = ["boot", "--runtimes", "cri:crun", "--workloads", "hello,sleep", "--runs", "3"]
    res = cli("run", *args, "--warmups", "0", env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    store = Store(Path(env["VIRTBENCH_RESULTS"]))
    rid = store.runs()[0].id
    samples = [s for s in store.samples(rid) if s.metric.startswith("boot.")]
    store.close()
    assert samples and not [s.error for s in samples if s.value is None]
    assert {s.params["containerd"] for s in samples} == {f"the host's, as configured ({node})"}
    ledger = Path(env["VIRTBENCH_STATE_DIR"]) / "runs" / rid / "ledger.jsonl"
    assert not ledger.exists() or "containerd-cri" not in ledger.read_text()
    assert _holds(node, rid) == []
    assert not labelled(rid)


def test_kill_9_then_clean_removes_the_runs_pods_and_images_from_the_hosts_containerd(node, env):
    """kill -9 of a density run while its pods pile up in the node's containerd: they
    and the run's images are there; `virtbench clean` lists and removes them."""
    env = {**env, host_cri.ENDPOINT_ENV: str(node)}
    p, rid = start_run("density", "--runtimes", "cri:crun", "--instances", "40", env=env)
    deadline = time.monotonic() + 300
    while len([x for x in _holds(node, rid) if x.startswith("pods")]) < 3:
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()[0]
        time.sleep(0.2)
    p.kill()
    p.communicate(timeout=30)
    assert any(x.startswith("images") for x in _holds(node, rid))
    dry = cli("clean", "--run", rid, "--dry-run", env=env)
    assert f"vb-{rid}-rootfs:1" in dry.stdout and f"instance  vb-{rid}-" in dry.stdout, dry.stdout
    res = cli("clean", "--run", rid, env=env, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert _holds(node, rid) == []
    assert not labelled(rid)
