"""Images built elsewhere, run as named runtimes: a user's image arrives as a kernel file, an
initramfs holding a server and an init, and a command line. This machine cannot boot a
real unikernel (its KVM is a nested PVM), so the image is made here from the project's
own parts -- Debian's kernel, an initramfs of the servers' artifact with vb-init as its
/init -- and handed over as `guest = "image"` with `serves` and the Linux preset, the way
a user's would be. Under QEMU TCG it is measured exactly like any runtime (marked
emulated), side by side with crun; and the console a VMM hands over is the guest's alone."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest
from tests.integration.conftest import (
    clean_crashed,
    cli,
    driver,
    labelled,
    run_id_of,
    start_run,
    vmm_binary,
)

from virtbench import naming
from virtbench.artifacts import build_for
from virtbench.artifacts.linux import build_initramfs, debian_kernel
from virtbench.experiments.throughput import ThroughputExperiment
from virtbench.paths import Paths
from virtbench.runtimes.base import InstanceSpec
from virtbench.store import Store
from virtbench.workloads import hello, nginx, redis


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A kernel and an initramfs in a directory of the user's, and each server's argv in
    the form vb-init reads it (what the image's own command line carries)."""
    out = tmp_path_factory.mktemp("image")
    paths = Paths.from_env()
    exp = ThroughputExperiment(type="throughput", workloads=["nginx", "redis"])
    art = build_for([exp], paths.guest_src, paths.cache)
    kernel = debian_kernel(paths.cache)
    initrd = build_initramfs(art.path, kernel, out)
    shutil.copy(kernel.image, out / "vmlinuz")

    def hexargv(wl: object) -> str:
        return "".join(a + "\0" for a in wl.argv("x")).encode().hex()  # type: ignore[attr-defined]

    udp = "".join(a + "\0" for a in ("/bin/vb-rr", "serve", "7777")).encode().hex()
    return {
        "kernel": str(out / "vmlinuz"),
        "initrd": str(initrd),
        "http": hexargv(nginx),
        "redis": hexargv(redis),
        "udp-echo": udp,
        "ping": udp,  # anything that keeps running: the guest's kernel answers ping
    }


def image_table(name: str, image: dict[str, str], serves: str, port: int, extra: str = "") -> str:
    argv = image[serves]
    return (
        f'[runtime.{name}]\ndriver = "qemu:q35:tcg"\nguest = "image"\n'
        f'kernel = "{image["kernel"]}"\ninitrd = "{image["initrd"]}"\npreset = "linux"\n'
        f'cmdline = "panic=-1 quiet rdinit=/init vb.name={{name}} vb.argv={argv}"\n'
        f'serves = "{serves}"\nport = {port}\nmemory_mib = 512\n{extra}'
    )


def acceptance_spec(image: dict[str, str]) -> str:
    """The acceptance run's spec: three image runtimes (nginx, redis, a UDP echo on a port
    of its own) and crun; scalability of nginx, redis and UDP throughput, and nginx as an
    isolation worker beside crun attackers."""
    return (
        'name = "images"\nruntimes = ["img-http", "img-redis", "img-udp", "crun"]\n'
        '[instance]\nnetwork = "bridge"\n'
        + image_table("img-http", image, "http", nginx.PORT)
        + image_table("img-redis", image, "redis", redis.PORT)
        + image_table("img-udp", image, "udp-echo", 7777)  # a port of its own
        + '[[experiment]]\ntype = "scalability"\nworker = "nginx"\nbackground = "nginx"\n'
        'background_network = "bridge"\ninstances_per_benchmark = 1\nbenchmark_times = 1\n'
        'runs = 1\nruntimes = ["img-http", "crun"]\nready_timeout_s = 240\ntimeout_s = 240\n'
        "[experiment.params.nginx]\nconnections = 2\nduration_s = 2\n"
        '[[experiment]]\ntype = "throughput"\nworkloads = ["redis"]\nruns = 1\n'
        'runtimes = ["img-redis", "crun"]\nready_timeout_s = 240\n'
        "[experiment.params.redis]\nrequests = 10000\n"
        '[[experiment]]\ntype = "throughput"\nworkloads = ["udp-echo"]\nruns = 1\n'
        'runtimes = ["img-udp"]\nready_timeout_s = 240\n'
        "[experiment.params.udp-echo]\ncount = 2000\ngap_us = 100\n"
        '[[experiment]]\ntype = "isolation"\nworker = "nginx"\nruntimes = ["img-http"]\n'
        'attacker_runtime = "crun"\nattackers = ["cpu"]\nplacements = ["same-cpu"]\n'
        "runs = 1\nwarmups = 0\nci_target_pct = 0\nready_timeout_s = 240\n"
        "[experiment.params.nginx]\nconnections = 2\nduration_s = 2\n"
    )


def test_two_images_and_crun_in_one_run_scalability_and_redis_one_table(env, tmp_path, image):
    """The acceptance: two named image runtimes and crun, S1's uk_ng_s shape (nginx measured
    while idle instances of the same runtime pile up) and redis throughput, in one run;
    the report compares them in one table and one figure. Also a third image serving UDP
    on a port of its own, and the nginx image as an isolation worker next to crun
    attackers (an image runs one program: its neighbours come from another runtime)."""
    spec = tmp_path / "images.toml"
    spec.write_text(acceptance_spec(image))
    res = cli("run", str(spec), env=env, timeout=900)
    assert res.returncode == 0, res.stdout + res.stderr
    rid = run_id_of(res.stdout)
    store = Store(tmp_path / "results")
    samples = [s for s in store.samples(rid) if not s.warmup and s.experiment != "image"]
    assert not [s.error for s in samples if s.error], [s.error for s in samples if s.error]
    for rt, metric in (
        ("img-http", "requests_per_s"),
        ("crun", "requests_per_s"),
        ("img-redis", "get.requests_per_s"),
        ("crun", "get.requests_per_s"),
        ("img-udp", "replies_per_s"),  # UDP readiness, and a port of the image's own
    ):
        values = [s.value for s in samples if s.runtime == rt and s.metric == metric]
        assert values and all(v and v > 0 for v in values), (rt, metric, values)
    assert {s.background for s in samples if s.runtime == "img-http"} == {0, 1}
    attacked = [s for s in samples if s.experiment == "isolation" and s.attacker == "cpu"]
    assert attacked and {s.runtime for s in attacked} == {"img-http"}  # its neighbours: crun
    assert {s.params.get("attacker_runtime") for s in attacked} == {"crun"}
    assert all(s.emulated for s in samples if s.runtime.startswith("img-"))
    assert not any(s.emulated for s in samples if s.runtime == "crun")
    named = store.run(rid).environment["named_runtimes"]
    assert named["img-http"]["driver"] == "qemu:q35:tcg"
    assert len(named["img-redis"]["files"]["initrd"]["sha256"]) == 64
    shown = cli("show", rid, env=env)
    assert "img-http = qemu:q35:tcg, kernel " in " ".join(shown.stdout.split())
    out = tmp_path / "images.html"
    rep = cli("report", rid, "-o", str(out), env=env)
    assert rep.returncode == 0, rep.stdout + rep.stderr
    html = out.read_text()
    tables = [t for t in html.split("<table") if "requests/s" in t]
    assert any("img-http" in t and "crun" in t for t in tables)  # one table, both runtimes
    figures = list((tmp_path / "images-plots" / rid).glob("scal*nginx*.svg"))
    assert figures, sorted(p.name for p in (tmp_path / "images-plots" / rid).iterdir())
    assert any("img-http" in f.read_text() and "crun" in f.read_text() for f in figures)
    assert labelled(rid) == []


def test_an_image_that_answers_ping_only_is_measured_by_icmp_alone(env, tmp_path, image):
    """`serves = "ping"`: ready when it answers an echo request (no port, no console line),
    and the latency workload runs its icmp test only; the tcp test it cannot answer is
    said to be not run, never a failed or empty figure."""
    spec = tmp_path / "ping.toml"
    spec.write_text(
        'name = "ping"\nruntimes = ["img-ping"]\n'
        + image_table("img-ping", image, "ping", 0).replace("port = 0\n", "")
        + '[[experiment]]\ntype = "throughput"\nworkloads = ["latency"]\nruns = 1\n'
        "ready_timeout_s = 240\n[experiment.params.latency]\n"
        'tests = ["icmp", "tcp"]\nsizes = [64]\ncount = 100\nping_count = 5\n'
        "ping_interval_s = 0.05\n"
    )
    res = cli("run", str(spec), env=env, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "does not answer tcp:64: not run" in res.stdout, res.stdout
    rid = run_id_of(res.stdout)
    samples = [s for s in Store(tmp_path / "results").samples(rid) if s.experiment != "image"]
    assert not [s.error for s in samples if s.error]
    rtt = [s.value for s in samples if s.metric == "icmp.rtt_avg" and not s.warmup]
    assert rtt and all(v is not None and v > 0 for v in rtt), rtt
    assert not [s.metric for s in samples if s.metric.startswith("tcp.")]
    assert labelled(rid) == []


def test_an_image_that_never_becomes_ready_ends_with_its_console_and_leaves_nothing(
    env, tmp_path, image
):
    """It serves on a port nothing listens on: the run ends with one line naming the
    runtime, the wait and the console's last lines, and no tap, scratch disk or VMM
    remains."""
    spec = tmp_path / "never.toml"
    spec.write_text(
        'name = "never"\nruntimes = ["uk-nginx"]\n'
        + image_table("uk-nginx", image, "http", 9999, "scratch_disk_mib = 64\n")
        + '[[experiment]]\ntype = "throughput"\nworkloads = ["nginx"]\nruns = 1\n'
        "ready_timeout_s = 30\n[experiment.params.nginx]\nduration_s = 2\n"
    )
    res = cli("run", str(spec), "--runtimes", "uk-nginx", env=env, timeout=600)
    assert res.returncode == 1, res.stdout + res.stderr
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, res.stderr
    assert errors[0].startswith(
        "error: uk-nginx measured nothing in throughput: port 9999 not open after 30 s"
    )
    assert "VB-START vb-" in errors[0]  # the console's last lines: vb-init started nginx
    rid = run_id_of(res.stdout)
    assert f"run {rid} completed" in res.stdout
    assert labelled(rid) == []
    state = Path(env["VIRTBENCH_STATE_DIR"])
    assert not list(state.rglob("*.scratch.img")) and not (state / "runs" / rid).exists()


def test_a_file_that_is_no_kernel_is_a_failed_sample_with_qemus_words(env, tmp_path):
    """QEMU refuses a text file as a kernel and exits 1, the status a guest's clean
    isa-debug-exit also gives: the boot is a failed sample quoting QEMU, never a time,
    and the run that measured nothing exits 1."""
    text = tmp_path / "notes.txt"
    text.write_text("not a kernel\n" * 8)
    spec = tmp_path / "text.toml"
    spec.write_text(
        'name = "text"\nruntimes = ["txt"]\n[runtime.txt]\ndriver = "qemu:q35:tcg"\n'
        f'guest = "image"\nkernel = "{text}"\n'
        '[[experiment]]\ntype = "boot"\nworkloads = ["hello"]\nruns = 2\nwarmups = 0\n'
    )
    res = cli("run", str(spec), env=env, timeout=600)
    assert res.returncode == 1, res.stdout + res.stderr
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: txt measured nothing in "), errors
    assert "the VMM said: qemu: invalid kernel header" in errors[0], errors[0]
    rid = run_id_of(res.stdout)
    boots = [s for s in Store(tmp_path / "results").samples(rid) if s.metric.startswith("boot.")]
    assert boots and all(s.value is None and "nothing booted" in s.error for s in boots), boots
    assert labelled(rid) == []


def test_a_disk_that_does_not_boot_ends_the_run_quoting_the_firmware(env, tmp_path):
    """A blank disk given alone (an image that boots by itself) on q35: SeaBIOS finds no
    boot sector and waits; the boot ends at its timeout as a failed sample whose one-line
    error quotes SeaBIOS's own words, the run exits 1, and its layer and VMM are gone."""
    blank = tmp_path / "blank.img"
    blank.write_bytes(b"\0" * (1 << 20))
    spec = tmp_path / "blank.toml"
    spec.write_text(
        'name = "blank"\nruntimes = ["blank"]\n[runtime.blank]\ndriver = "qemu:q35:tcg"\n'
        f'guest = "image"\ndisk = "{blank}"\n'
        '[[experiment]]\ntype = "boot"\nworkloads = ["hello"]\nruns = 1\nwarmups = 0\n'
        "timeout_s = 15\n"
    )
    res = cli("run", str(spec), env=env, timeout=600)
    assert res.returncode == 1, res.stdout + res.stderr
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "did not exit in 15 s" in errors[0], errors
    assert "No bootable device." in errors[0], errors[0]
    rid = run_id_of(res.stdout)
    assert labelled(rid) == []
    assert not list(Path(env["VIRTBENCH_STATE_DIR"]).rglob("*.disk.qcow2"))
    assert blank.read_bytes() == b"\0" * (1 << 20)


@pytest.mark.parametrize("vmm", ["qemu", "firecracker", "cloud-hypervisor"])
def test_the_console_is_the_guests_alone(vmm, ctx, artifact):
    """The first bytes of an instance's console log are its guest's first output (the
    minimal guest's `vb-minikernel: ` line), whatever the VMM says about itself (kept in
    `<instance>.vmm.log`); first output is stamped on them."""
    options = {} if vmm == "qemu" else {"binary": vmm_binary(vmm)}
    rt = driver(vmm, ctx, **options)
    name = naming.name(ctx.run_id, "c1")
    spec = InstanceSpec(name=name, argv=hello.argv(name), rootfs=artifact.path)
    inst = rt.run_to_exit(spec, timeout=60)
    try:
        assert inst.exit_code == 0, inst.log_tail()
        console = inst.log_path.read_bytes()
        assert re.match(rb"vb-minikernel: hello\r?\n", console), console[:200]
        assert f"VB-HELLO {name}".encode() in console
        assert inst.side_log is not None and inst.side_log.exists()
        assert b"vb-minikernel" not in inst.side_log.read_bytes()
        assert inst.console.t_first_output_ns > inst.t_spawn_ns
    finally:
        rt.stop(inst)


# VMMs and taps after kill -9: test_vms.py's bridged VMs; a run's state directory (its
# scratch disks): test_cli_runs.py's kill -9; a named runtime's are `make test-long`'s
@pytest.mark.long
def test_kill_9_while_images_boot_then_clean_leaves_nothing(env, tmp_path, image):
    """A named runtime's instances are found and removed by their run's label like any
    other: VMMs (by their cgroups), taps and the host's neighbour entries (with the
    bridge), scratch disks (with the run's state directory)."""
    spec = tmp_path / "pile.toml"
    spec.write_text(
        'name = "pile"\nruntimes = ["img-http"]\n'
        + image_table("img-http", image, "http", nginx.PORT, "scratch_disk_mib = 64\n")
        + '[[experiment]]\ntype = "density"\ninstances = 6\ntimeout_s = 240\n'
    )
    p, rid = start_run(str(spec), env=env)
    deadline = time.monotonic() + 120
    while len([x for x in labelled(rid) if x.startswith(f"link vb-{rid}-t")]) < 2:
        assert time.monotonic() < deadline and p.poll() is None, "the images did not start"
        time.sleep(0.1)
    state = Path(env["VIRTBENCH_STATE_DIR"])
    assert list(state.rglob("*.scratch.img"))
    p.kill()
    p.communicate(timeout=30)
    assert any(x.startswith("process") for x in labelled(rid))
    clean_crashed(rid, env)
    assert not list(state.rglob("*.scratch.img"))
