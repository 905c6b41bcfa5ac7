"""Engine drivers (docker, podman, lxd): what they set up once per run -- the daemon,
the image imported from the artifact, networks -- is labelled and gone afterwards, and
an instance's processes include the engine's per-container supervisor."""

from __future__ import annotations

import os
import subprocess

import psutil
import pytest
from tests.integration.conftest import driver
from tests.integration.test_runtimes import spec

from virtbench.errors import RuntimeUnavailable
from virtbench.runtimes.engines import docker as docker_mod
from virtbench.workloads import hello, sleep

DOCKER_ENV = {**os.environ, "DOCKER_API_VERSION": "1.41"}


def docker_names(*what: str) -> list[str]:
    out = subprocess.run(["docker", *what], capture_output=True, text=True, env=DOCKER_ENV)
    return out.stdout.split()


def test_docker_setup_is_labelled_and_undone(ctx, artifact):
    was_up = docker_mod.daemon_up()
    rt = driver("docker", ctx)
    inst = rt.start(spec(ctx, artifact, sleep, 1, network="bridge"), detach=True)
    assert ctx.probe.wait(inst.name, 30) is not None, inst.log_tail()
    tag = rt.image
    assert tag.startswith(f"vb-{ctx.run_id}-rootfs:")
    images = docker_names("image", "ls", "--format", "{{.Repository}}:{{.Tag}}")
    assert tag in images
    labels = docker_names("image", "inspect", "--format", "{{json .Config.Labels}}", tag)
    assert ctx.run_id in labels[0]
    assert f"vb-{ctx.run_id}-net" in docker_names("network", "ls", "--format", "{{.Name}}")
    names = {psutil.Process(p).name() for p in rt.observe.pids(inst)}
    assert any(n.startswith("containerd-shim") for n in names), names
    assert "vb-sleep" in names
    size, how = rt.image_size()
    inspected = docker_names("image", "inspect", "--format", "{{.Size}}", tag)
    assert (size, how) == (int(inspected[0]), "docker image size") and size > 50_000
    rt.close()
    if was_up:  # someone else's daemon: still up, our objects gone
        assert tag not in docker_names("image", "ls", "--format", "{{.Repository}}:{{.Tag}}")
        assert f"vb-{ctx.run_id}-net" not in docker_names("network", "ls", "--format", "{{.Name}}")
    ctx.daemons.close()
    assert docker_mod.daemon_up() == was_up


def test_docker_user_image_gets_the_artifact_programs(ctx, artifact):
    """`image = "..."`: any local image works; vb-* are bind-mounted into it."""
    user = f"vbtest-user-{ctx.run_id}:1"
    rt0 = driver("docker", ctx)
    rt0.setup()
    subprocess.run(["docker", "tag", rt0.image, user], check=True, env=DOCKER_ENV)
    try:
        rt = driver("docker:crun", ctx, image=user)
        inst = rt.run_to_exit(spec(ctx, artifact, hello, 2), timeout=60)
        assert inst.exit_code == 0 and "hello from virtbench" in inst.log_path.read_text()
        rt.stop(inst)
        bad = driver("docker", ctx, image="vbtest-no-such-image:0")
        with pytest.raises(RuntimeUnavailable, match="not on this host"):
            bad.setup()
    finally:
        subprocess.run(["docker", "rmi", user], check=False, env=DOCKER_ENV)


def lxd_names(rt, *what: str) -> list[str]:
    res = subprocess.run(
        ["lxc", *what, "--format", "csv", "-c", "n"] if what[0] == "list" else ["lxc", *what],
        capture_output=True,
        text=True,
        env=rt.env,
    )
    assert res.returncode == 0, res.stderr
    return res.stdout.split()


def test_lxd_setup_is_labelled_and_undone(ctx, artifact):
    from virtbench.runtimes.lxc import lxd as lxd_mod

    was_up = lxd_mod.answers(lxd_mod.SYSTEM_DIR)
    rt = driver("lxd", ctx)
    inst = rt.start(spec(ctx, artifact, sleep, 1, memory_mib=64), detach=True)
    assert ctx.probe.wait(inst.name, 30) is not None, inst.log_tail()
    rid = ctx.run_id
    assert rt.image == f"vb-{rid}-rootfs" and rt.profile == f"vb-{rid}-profile"
    assert rt.image in " ".join(lxd_names(rt, "image", "list", "--format", "csv"))
    assert f"vb-{rid}-profile" in " ".join(lxd_names(rt, "profile", "list", "--format", "csv"))
    assert f"vb-{rid}-pool" in " ".join(lxd_names(rt, "storage", "list", "--format", "csv"))
    assert inst.name in lxd_names(rt, "list")
    size, how = rt.image_size()
    assert how == "lxd image size" and 10_000 < size < 50 * 2**20  # the compressed tarballs
    config = subprocess.run(
        ["lxc", "config", "get", inst.name, "user.virtbench.run"],
        capture_output=True,
        text=True,
        env=rt.env,
    )
    assert config.stdout.strip() == rid
    # the payload and its [lxc monitor], in cgroups named after the instance
    cmds = [" ".join(psutil.Process(p).cmdline()) for p in rt.observe.pids(inst)]
    assert any(c.startswith("/bin/vb-sleep") for c in cmds), cmds
    assert any(c.startswith("[lxc monitor]") for c in cmds), cmds
    daemon = None if was_up else ctx.daemons.started["lxd"].popen.pid
    rt.close()
    ctx.daemons.close()
    assert lxd_mod.answers(lxd_mod.SYSTEM_DIR) == was_up
    if daemon is not None:  # our own daemon: stopped, its directory and namespace gone
        assert not psutil.pid_exists(daemon) or psutil.Process(daemon).status() == "zombie"
        assert not rt.lxd_dir.exists()
        assert not os.path.exists(f"/run/netns/vb-{rid}-lxd")
