"""Each driver against the real runtime: hello exits, sleepers signal ready over every
network mode, limits land in the cgroup, and stop leaves nothing behind."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from tests.integration.conftest import driver, labelled, sweep

from virtbench import naming
from virtbench.errors import InstanceError
from virtbench.host import cgroups
from virtbench.runtimes.base import InstanceSpec, RuntimeContext
from virtbench.workloads import hello, sleep

RUNTIMES = [
    "native",
    "runc",
    "crun",
    "youki",
    "runsc",
    "lxc",
    "lxd",
    "nspawn",
    "bwrap",
    "wasmtime",
    "docker",
    "docker:crun",
    "docker:runsc",
    "podman",
    "podman:runc",
    "podman:runsc",
    "cri",
    "cri:crun",
    "cri:runsc",
]


# what the workload runs as: itself, an OCI runtime's re-exec, gVisor's sandbox, wasmtime
WORKLOAD_COMMS = ("vb-sleep", "exe", "runsc-sandbox", "wasmtime")

# An engine's other runtimes: `make test` starts a sleeper on each (below), and hello and
# a payload that ends early on the engine's own and on the other runtime by itself.
PAIRS = ("docker:crun", "docker:runsc", "podman:runsc", "cri:crun", "cri:runsc")


def cpus_allowed(pid: int) -> str | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return next(x.split()[1] for x in status.splitlines() if x.startswith("Cpus_allowed_list"))


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def tree(root: Path) -> list[tuple[str, int]]:
    """Every path below `root` with its mode: what an instance must leave as it found."""
    return sorted((str(p.relative_to(root)), p.lstat().st_mode) for p in root.rglob("*"))


def in_subtree(top, filename: str) -> list[str]:
    """Values of `filename` in the cgroup dir `top` and every dir below it (engines nest)."""
    return [p.read_text().strip() for p in sorted(top.rglob(filename))] if top.is_dir() else []


def instance_leftovers(run_id: str) -> list[str]:
    """What the run's instances left; run-wide objects (the bridge, the netns of the run's
    LXD daemon, LXD's name for the host's netns, an engine's image and network, the
    pods' bridge and the containerd of a run's `cri` runtimes, the
    slices an engine under systemd was given: stopped when it closes) go at the end and
    are checked by `ctx`."""
    run_wide = ("-br", "-lxd", "-host", "-net", "-cri", "-containerd)")
    return [
        x
        for x in labelled(run_id)
        if not x.endswith(run_wide)
        and "-net-" not in x
        and " images " not in x
        and not x.startswith("unit ")
        and not x.endswith(".slice")
        and not (x.startswith("mount ") and f"/runs/{run_id}/lxd/" in x)  # its own LXD's
    ]


def spec(ctx: RuntimeContext, artifact, wl, n: int, **kw) -> InstanceSpec:
    name = naming.instance(ctx.run_id, n)
    return InstanceSpec(name=name, argv=wl.argv(name), rootfs=artifact.path, **kw)


# youki 0.7.0's foreground run misses, now and then, the exit of a container that ends at
# once, and never returns (a lost SIGCHLD: about 4 in 100 hellos in a tight loop here); a
# boot experiment records such a start as failed with that reason. Its detached starts
# are tested below.
@pytest.mark.parametrize("name", [sweep(r, long=r in PAIRS) for r in RUNTIMES if r != "youki"])
def test_hello_runs_to_exit(name, ctx, artifact):
    rt = driver(name, ctx)
    inst = rt.run_to_exit(spec(ctx, artifact, hello, 1), timeout=60)
    try:
        assert inst.exit_code == 0, inst.log_tail()
        assert "hello from virtbench" in inst.log_path.read_text()
        assert inst.t_exit_ns > inst.t_spawn_ns
        assert (inst.t_exit_ns - inst.t_spawn_ns) / 1e9 < 10
    finally:
        rt.stop(inst)


# The runtimes and networks a sleeper is started, checked and stopped on.
SLEEPERS = [
    ("native", "host"),
    ("native", "none"),
    ("native", "bridge"),
    ("runc", "none"),
    ("crun", "none"),
    ("runc", "host"),
    ("crun", "host"),
    ("runc", "bridge"),
    ("crun", "bridge"),
    ("youki", "none"),
    ("youki", "host"),
    ("youki", "bridge"),
    ("runsc", "none"),
    ("runsc", "host"),
    ("lxc", "none"),
    ("lxc", "host"),
    ("lxc", "bridge"),
    ("lxd", "none"),
    ("lxd", "host"),
    ("lxd", "bridge"),
    ("nspawn", "none"),
    ("nspawn", "host"),
    ("nspawn", "bridge"),
    ("bwrap", "none"),
    ("bwrap", "host"),
    ("bwrap", "bridge"),
    ("wasmtime", "none"),
    ("docker", "none"),
    ("docker", "host"),
    ("docker", "bridge"),
    ("docker:crun", "none"),
    ("docker:runsc", "none"),
    ("docker:runsc", "bridge"),
    ("podman", "none"),
    ("podman", "host"),
    ("podman", "bridge"),
    ("podman:runsc", "none"),
    ("cri", "bridge"),
    ("cri:crun", "bridge"),
    ("cri:crun", "host"),
    ("cri:runsc", "bridge"),
]


# A runtime's host network where it has a bridge too, and lxd's cases but its bridge (each
# starts an LXD), are `make test-long`'s; the engines' host network stays.
SLEEPERS_LONG = {(n, "host") for n in ("runc", "crun", "youki", "lxc", "nspawn", "bwrap")}
SLEEPERS_LONG |= {("lxd", "none"), ("lxd", "host")}


@pytest.mark.parametrize(
    ("name", "network"), [sweep(*c, long=c in SLEEPERS_LONG) for c in SLEEPERS]
)
def test_sleeper_signals_ready_and_stops_clean(name, network, ctx, artifact):
    rt = driver(name, ctx)
    s = spec(ctx, artifact, sleep, 2, network=network, memory_mib=32, cpus="0", pids_limit=48)
    shared = tree(artifact.path)  # every instance shares it: none may write into it
    inst = rt.start(s, detach=True)
    try:
        t_ready = ctx.probe.wait(s.name, 30)
        assert t_ready is not None, f"no ready signal: {inst.log_tail()}"
        assert t_ready > inst.t_spawn_ns
        why = rt.observe.exit_reason(inst)
        if why is not None and name == "docker:runsc":  # seen once in ~20 CI runs
            pytest.xfail(f"runsc 20221219 under docker ended the sleeper after ready: {why}")
        assert why is None  # it runs: never mistaken for a dead one
        pids = rt.observe.pids(inst)
        assert pids, "instance has no host processes"
        # ready comes from the program itself: no vb-ready is left in exec, and its
        # memory is read as soon as it is ready
        assert "vb-ready" not in {comm(p) for p in cgroups.procs(ctx.layout, s.name)}
        pss = rt.memory.pss_bytes(inst)
        assert pss is not None and pss > 0, pss
        limits = in_subtree(ctx.layout.memory_dir(s.name), ctx.layout.memory_limit_file)
        assert str(32 * 1024 * 1024) in limits, limits
        tasks = in_subtree(ctx.layout.controller_dir("pids", s.name), "pids.max")
        assert ("48" in tasks) == (name != "podman:runsc"), tasks  # see engines/podman.py
        # Read the cgroup first: a sandbox (runsc) may still be forking its stubs, and
        # pids() read afterwards must include every process the cgroup had.
        in_cgroup = cgroups.procs(ctx.layout, s.name)
        alive = {p for p in in_cgroup if Path(f"/proc/{p}").exists()}
        assert in_cgroup and alive <= set(rt.observe.pids(inst))
        # The workload (for runsc: the sandbox running it) is confined to the cpuset;
        # monitors such as conmon may sit outside it.
        workload = [p for p in in_cgroup if comm(p) in WORKLOAD_COMMS]
        allowed = {cpus_allowed(p) for p in workload} - {None}
        assert allowed == {"0"}, allowed
        assert rt.memory.cgroup_bytes(inst) is not None
        parts = rt.memory.cgroup_parts(inst)  # memory.stat, in the version's own keys
        assert parts is not None and {"anon", "file"} <= set(parts), parts
        assert all(v >= 0 for v in parts.values()), parts
        if name == "native":  # the same kind of network namespace a container gets
            host_net = os.readlink("/proc/self/ns/net")
            nets = {os.readlink(f"/proc/{p}/ns/net") for p in alive}
            assert (nets == {host_net}) == (network == "host"), (network, nets)
        if network == "bridge":
            assert inst.address, "bridge instance has no address"
            if rt.virtbench_bridge:
                assert inst.address.startswith("10.")
                assert any(f"link vb-{ctx.run_id}-br" == x for x in labelled(ctx.run_id))
    finally:
        seconds = rt.stop(inst)
    assert seconds >= 0
    time.sleep(0.05)
    left = instance_leftovers(ctx.run_id)
    assert not left, left
    assert rt.stop(inst) == 0.0  # idempotent
    assert tree(artifact.path) == shared, "the instance changed the shared artifact"


def test_a_sleeper_is_itself_when_it_says_ready(artifact, tmp_path):
    """Read at the moment its ready arrives, 200 times in a row, a sleeper is vb-sleep and
    its memory can be read: the ready comes from the program measured, not from a
    vb-ready still in its exec (which answered 12% of such reads with vb-ready's memory
    and some with none, read as 0)."""
    import socket
    import subprocess

    from virtbench.measure import memory

    addr = tmp_path / "probe"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(addr))
        sock.settimeout(5)
        seen = []
        for i in range(200):
            p = subprocess.Popen([str(artifact.path / "bin/vb-sleep"), f"unix:{addr}", f"s{i}"])
            try:
                assert sock.recv(256) == f"ready s{i}".encode()
                seen.append((comm(p.pid), memory.pss_bytes(p.pid)))
            finally:
                p.terminate()
                assert p.wait(5) == 0  # SIGTERM ends it cleanly
    assert {c for c, _ in seen} == {"vb-sleep"}
    assert all(pss and pss > 0 for _, pss in seen), seen


# Runtimes that keep the payload's exit status say it; the others say it ended.
KEEP_STATUS = (
    "cri",
    "cri:crun",
    "cri:runsc",
    "native",
    "nspawn",
    "bwrap",
    "wasmtime",
    "docker",
    "docker:crun",
    "docker:runsc",
    "podman",
    "podman:runc",
    "podman:runsc",
)
NO_CONSOLE = ("lxc", "lxd", "podman")


@pytest.mark.parametrize("name", [sweep(r, long=r in PAIRS) for r in RUNTIMES])
def test_an_instance_that_ends_before_it_is_ready_is_reported_at_once_with_how(name, ctx, artifact):
    """vb-ready given an address it cannot use prints why and exits 65 without signalling:
    the wait for its ready signal ends within seconds (not at the timeout) and says how
    the instance ended, with its console output."""
    rt = driver(name, ctx)
    iname = naming.name(ctx.run_id, "7")
    s = InstanceSpec(name=iname, argv=("/bin/vb-ready", "bogus:", iname), rootfs=artifact.path)
    inst = rt.start(s, detach=True)
    try:
        t0 = time.monotonic()
        with pytest.raises(InstanceError) as err:
            rt.wait_ready(inst, 60)
        assert time.monotonic() - t0 < 15
        msg = str(err.value)
        assert f"{iname} " in msg and "before it signalled ready" in msg, msg
        if name in KEEP_STATUS:
            assert "exited with status 65" in msg, msg
        else:
            assert "ended (no process of it is left" in msg, msg
        if not name.startswith(NO_CONSOLE):  # their detached payload's output goes elsewhere
            assert "vb-ready: cannot signal bogus:" in msg, msg
    finally:
        rt.stop(inst)
    left = instance_leftovers(ctx.run_id)
    assert not left, left


# nspawn stays in the foreground, so a bad program shows only as a missing ready signal.
@pytest.mark.parametrize(
    "name",
    [
        "runc",
        "crun",
        "youki",
        "runsc",
        "lxc",
        "lxd",
        "docker",
        # dockerd, after runsc failed to start a container, takes its whole 30 s to stop
        sweep("docker:runsc", long=True),
        "podman",
        "podman:runsc",
    ],
)
def test_failed_start_is_cleaned_up(name, ctx, artifact):
    rt = driver(name, ctx)
    s = InstanceSpec(
        name=naming.name(ctx.run_id, "9"), argv=("/bin/no-such-program",), rootfs=artifact.path
    )
    with pytest.raises(Exception, match=r"no-such-program|failed"):
        rt.start(s, detach=True)
    left = instance_leftovers(ctx.run_id)
    assert not left, left


def test_stop_all_stops_many(ctx, artifact):
    rt = driver("crun", ctx)
    insts = [rt.start(spec(ctx, artifact, sleep, 10 + i), detach=True) for i in range(5)]
    for inst in insts:
        assert ctx.probe.wait(inst.name, 30) is not None
    rt.stop_all()
    assert not rt.instances
    assert not labelled(ctx.run_id)


def test_runsc_own_network_stack_is_available_or_says_why(ctx, artifact):
    """gVisor's netstack (netstack = "gvisor"): where it cannot start, available() says
    why and how to do without it; where it can, an instance on the bridge answers."""
    from virtbench.runtimes.oci.runsc import Runsc, RunscOptions

    avail = Runsc.available(RunscOptions(netstack="gvisor"))
    if not avail.ok:
        assert avail.reason.startswith("gVisor's own network stack cannot start here: ")
        assert len(avail.reason) > 50 and 'netstack = "host"' in avail.fix
        return
    rt = driver("runsc", ctx, netstack="gvisor")
    inst = rt.start(spec(ctx, artifact, sleep, 0, network="bridge"), detach=True)
    try:
        assert inst.address and rt.observe.exit_reason(inst) is None
    finally:
        rt.stop(inst)


@pytest.mark.parametrize(
    ("name", "rootfs", "security"),
    [
        ("crun", "overlay", "engine-default"),
        ("runc", "overlay", "engine-default"),
        ("crun", "dir", "minimal"),
    ],
)
def test_oci_bundles_are_made_as_the_engines_make_theirs(name, rootfs, security, ctx, artifact):
    """By default a crun or runc container's root is an overlay of its own (the artifact
    below, its upper layer on disk) and its process runs under the engines' seccomp
    filter, as the kernel reports them (its mount table, /proc/<pid>/status); `dir` and
    `minimal` are the artifact's directory and no filter. Its overlay goes with it."""
    from virtbench.runtimes.oci import rootfs as oci_rootfs

    rt = driver(name, ctx, rootfs=rootfs, security=security)
    s = spec(ctx, artifact, sleep, 40 + len(rootfs) + len(security), network="none")
    inst = rt.start(s, detach=True)
    try:
        assert ctx.probe.wait(s.name, 30) is not None, inst.log_tail()
        (pid,) = [p for p in cgroups.procs(ctx.layout, s.name) if comm(p) == "vb-sleep"]
        status = dict(
            ln.split(":", 1) for ln in Path(f"/proc/{pid}/status").read_text().splitlines()
        )
        assert status["Seccomp"].strip() == ("2" if security == "engine-default" else "0")
        root = next(
            ln.split(" - ")[1].split()[0]
            for ln in Path(f"/proc/{pid}/mountinfo").read_text().splitlines()
            if ln.split()[4] == "/"
        )
        assert (root == "overlay") == (rootfs == "overlay"), root
        merged, layers = oci_rootfs.merged_dir(ctx, inst), oci_rootfs.layer_dir(ctx, inst)
        assert (merged.is_dir() and (layers / "upper").is_dir()) == (rootfs == "overlay")
        assert rt.conditions()["security"] == security
    finally:
        rt.stop(inst)
    assert not merged.exists() and not layers.exists()
    assert not instance_leftovers(ctx.run_id)
