"""The sysctl profile on real runtimes: every instance with a network namespace of its own
sees the profile's namespaced keys there; the host gets the profile for the run and gets
its values back at the end, and from `virtbench clean` after a kill -9."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from tests.integration.conftest import cli, driver, start_run
from tests.integration.test_runtimes import spec as instance_spec

from virtbench.host import sysctl
from virtbench.store import Store
from virtbench.workloads import sleep

KEY = "net.core.somaxconn"


def own_netns_value(pids: list[int]) -> list[str]:
    """The key's value in each network namespace of `pids` that has an interface besides
    lo (the instance's network, not the host's nor a helper's empty one: runsc's gofer)."""
    mine = os.readlink("/proc/self/ns/net")
    seen = {}
    for pid in pids:
        try:
            ns = os.readlink(f"/proc/{pid}/ns/net")
            links = [
                ln.split(":")[0].strip()
                for ln in Path(f"/proc/{pid}/net/dev").read_text().splitlines()[2:]
            ]
        except OSError:
            continue
        if ns != mine and ns not in seen and set(links) - {"lo"}:
            res = subprocess.run(
                ["nsenter", "-t", str(pid), "-n", "cat", f"/proc/sys/{KEY.replace('.', '/')}"],
                capture_output=True,
                text=True,
                check=True,
            )
            seen[ns] = res.stdout.strip()
    return list(seen.values())


@pytest.mark.parametrize("name", ["crun", "runc", "runsc", "docker", "podman", "lxc", "nspawn"])
def test_an_instance_on_the_bridge_sees_the_profile_in_its_namespace(name, ctx, artifact):
    host_before = sysctl.read(KEY)
    want = "1234" if host_before != "1234" else "1235"
    rt = driver(name, ctx)
    spec = instance_spec(ctx, artifact, sleep, 0, network="bridge", sysctls=((KEY, want),))
    inst = rt.start(spec, detach=True)
    try:
        rt.wait_ready(inst, 60)
        assert own_netns_value(rt.observe.pids(inst)) == [want]
    finally:
        rt.stop(inst)
    assert sysctl.read(KEY) == host_before  # an instance's namespace, not the host's


def profile_spec(tmp_path: Path, value: str, instances: int) -> Path:
    path = tmp_path / "sysctl.toml"
    path.write_text(
        f'name = "sysctl"\nruntimes = ["crun"]\n[sysctl]\n"{KEY}" = {value}\n'
        f'[[experiment]]\ntype = "density"\ninstances = {instances}\n'
        "instances_per_benchmark = 10\nmemory_settle_s = 0\n"
    )
    return path


def test_the_host_gets_its_values_back_after_a_run_and_after_kill_9_and_clean(env, tmp_path):
    before = sysctl.read(KEY)
    want = "1234" if before != "1234" else "1235"
    res = cli("run", str(profile_spec(tmp_path, want, 10)), env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert sysctl.read(KEY) == before
    rid = Store(tmp_path / "results").runs()[-1].id
    got = Store(tmp_path / "results").run(rid).environment["sysctl"]
    assert got == {KEY: {"before": before, "set": want, "kept": want}}
    events = [(lv, m) for _, lv, m in Store(tmp_path / "results").events(rid)]
    # the run put its profile back itself: no error, and no sweep found it left over
    assert not [e for e in events if e[0] == "error" or "cleanup removed" in e[1]], events
    p, rid = start_run(str(profile_spec(tmp_path, want, 400)), env=env)
    try:
        deadline = time.monotonic() + 60
        while sysctl.read(KEY) != want and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sysctl.read(KEY) == want  # the run holds the profile ...
        p.kill()
        p.communicate(timeout=30)
        assert sysctl.read(KEY) == want  # ... and a kill -9 leaves it
        dry = cli("clean", "--dry-run", "--run", rid, env=env)
        assert dry.returncode == 0, dry.stdout + dry.stderr
        assert re.search(
            rf"would put back sysctl +{re.escape(KEY)} \(back to '{before}'", dry.stdout
        )
    finally:  # whatever failed above, the host gets its value back
        p.kill()
        res = cli("clean", "--run", rid, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert sysctl.read(KEY) == before


def test_a_host_only_key_is_set_on_the_host_and_not_in_instances(ctx, artifact):
    """net.core.busy_read exists only in the host's namespace (on this kernel; which keys
    are the host's alone changes with the kernel, so it is asked, not listed): an instance
    on the bridge starts (the key is left out there) rather than failing on it."""
    assert "net.core.busy_read" not in sysctl.namespaced({"net.core.busy_read": "0"})
    assert KEY in sysctl.namespaced({KEY: "1"})
    rt = driver("crun", ctx)
    profile = ((KEY, "1234"), ("net.core.busy_read", sysctl.read("net.core.busy_read")))
    inst = rt.start(
        instance_spec(ctx, artifact, sleep, 0, network="bridge", sysctls=profile), detach=True
    )
    try:
        rt.wait_ready(inst, 60)
        assert own_netns_value(rt.observe.pids(inst)) == ["1234"]
    finally:
        rt.stop(inst)
