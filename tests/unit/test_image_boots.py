"""An image's instances as they come up or fail: the console quoted at a guest's crash
and beside what the VMM said, readiness by port against a known truth, and a runtime
whose every boot failed named as having measured nothing (the images themselves:
test_images.py)."""

from __future__ import annotations

import re
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from virtbench import metrics, runtimes
from virtbench.cli.run import unmeasured
from virtbench.errors import InstanceError
from virtbench.measure import portready
from virtbench.measure.portready import PERIOD_S, PortWatch, echo_request
from virtbench.runtimes.base import Instance, InstanceSpec, NoState
from virtbench.store.records import Sample


def test_a_guest_that_crashed_is_quoted_at_its_crash_line(tmp_path):
    spec_ = InstanceSpec("vb-r1-0001", ("/bin/vb-hello",), tmp_path)
    inst = Instance(spec_, "qemu", tmp_path / "c.log", own=NoState())
    crash = "CRIT: [libkvmplat] <memory.c @ 388> Assertion failure: ml->flags == mr->flags"
    banner = [f"Unikraft boot line {i}" for i in range(20)]
    inst.log_path.write_text("\n".join(["SeaBIOS", crash, *banner]) + "\n")
    tail = inst.log_tail()
    assert tail.startswith(f"crashed: {crash} ... Unikraft boot line 15"), tail
    inst.log_path.write_text("booting\nKernel panic - not syncing: VFS\n")
    assert inst.log_tail() == "crashed: booting | Kernel panic - not syncing: VFS"
    inst.log_path.write_text("booting\nready\n")  # no crash: as before
    assert inst.log_tail() == "booting | ready"


def test_a_failure_says_the_console_then_what_the_vmm_said(tmp_path):
    spec_ = InstanceSpec("vb-r1-0001", ("/bin/vb-hello",), tmp_path)
    inst = Instance(spec_, "qemu", tmp_path / "c.log", own=NoState())
    inst.log_path.write_text("booting\n\nnginx: [emerg] bind() failed\n")
    assert inst.log_tail() == "booting | nginx: [emerg] bind() failed"
    inst.side_log = tmp_path / "c.vmm.log"
    inst.side_log.write_text("qemu: could not open disk\n")
    assert inst.log_tail() == (
        "booting | nginx: [emerg] bind() failed; the VMM said: qemu: could not open disk"
    )
    inst.log_path.write_text("")
    assert inst.log_tail().startswith("(no console output); the VMM said: qemu")


# a VMM's last words and status (QEMU exits 1 both when it refuses a kernel and when the
# guest wrote 0 to isa-debug-exit), and what the guest printed before
FAKE_VMMS = {
    "refused": ("", "qemu: invalid kernel header", 1),
    "silent": ("", "", 0),
    "hello": ("Hello from a unikernel", "", 1),
    "crashed": ("booting\nKernel panic - not syncing: no init", "", 0),
}


def _fake_vmm_exit(tmp_path: Path, case: str) -> int:
    """The exit of a QEMU image instance whose VMM is a shell saying `FAKE_VMMS[case]`,
    read by the driver's own console reader and exit rule."""
    stdout, stderr, rc = FAKE_VMMS[case]
    kernel = tmp_path / "k.elf"
    kernel.write_bytes(b"\x7fELF")
    cls = runtimes.get("qemu")
    ctx = SimpleNamespace(paths=SimpleNamespace(cache=tmp_path), scratch=tmp_path, probe=None)
    rt = cls(ctx, cls.Options(variant="q35:tcg", guest="image", kernel=kernel))  # type: ignore[arg-type]
    spec_ = InstanceSpec("vb-r1-0001", ("/bin/vb-hello",), tmp_path, network="none")
    inst = Instance(spec_, "qemu", tmp_path / f"{case}.log", argv=spec_.argv, own=rt.State())
    inst.side_log = tmp_path / f"{case}.vmm.log"
    script = f"printf '%s' '{stdout}'; printf '%s' '{stderr}' >&2; exit {rc}"
    with open(inst.side_log, "wb") as log:
        inst.proc = subprocess.Popen(["sh", "-c", script], stdout=subprocess.PIPE, stderr=log)
    inst.t_spawn_ns = time.monotonic_ns()
    rt.read_console(inst)
    try:
        return rt._wait(inst, 30)
    finally:
        rt.vmm.console.end(inst)


def test_an_images_exit_is_a_boot_only_with_the_guests_own_output(tmp_path):
    """A file that is no kernel makes QEMU exit 1, as a guest's isa-debug-exit(0) does:
    without a byte from the guest it is an error with the VMM's words, never a boot; a
    guest that printed and exited cleanly is one; a console that says it crashed is not."""
    assert _fake_vmm_exit(tmp_path, "hello") == 0
    with pytest.raises(InstanceError) as refused:
        _fake_vmm_exit(tmp_path, "refused")
    said = str(refused.value)
    assert "before its guest printed anything" in said and "status 1" in said, said
    assert said.endswith("(no console output); the VMM said: qemu: invalid kernel header")
    with pytest.raises(InstanceError, match=r"status 0.*nothing booted"):
        _fake_vmm_exit(tmp_path, "silent")
    with pytest.raises(InstanceError, match=re.escape("crashed: booting | Kernel panic")):
        _fake_vmm_exit(tmp_path, "crashed")


def _listen_later(proto: str, delay: float) -> tuple[int, list[int], threading.Thread]:
    """A server on loopback that starts answering `delay` s from now: the injected truth
    (host monotonic ns of the moment it answers) is put in the returned list."""
    kind = socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM
    probe = socket.socket(socket.AF_INET, kind)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there until the delay is over
    truth: list[int] = []

    def serve() -> None:
        time.sleep(delay)
        s = socket.socket(socket.AF_INET, kind)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        if proto == "tcp":
            s.listen(64)
        truth.append(time.monotonic_ns())
        s.settimeout(5)
        try:
            if proto == "tcp":
                s.accept()[0].close()
            else:
                data, peer = s.recvfrom(65536)
                s.sendto(data, peer)
        finally:
            s.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return port, truth, t


@pytest.mark.parametrize("proto", ["tcp", "udp"])
def test_port_readiness_recovers_a_known_moment(proto):
    """The server starts answering 300 ms in: the watch must see it no earlier than that,
    and within its period plus scheduling slack (this machine is noisy: 50 ms)."""
    lateness = []
    for _ in range(3):
        port, truth, server = _listen_later(proto, 0.3)
        seen: list[int] = []
        watch = PortWatch("127.0.0.1", port, proto, seen.append, lambda: False, timeout=10)
        watch.start()
        watch.join(10)
        server.join(10)
        assert seen and truth, (seen, truth)
        lateness.append((seen[0] - truth[0]) / 1e6)
    assert all(x >= 0 for x in lateness), lateness  # never before the server answered
    assert min(lateness) <= PERIOD_S * 1e3 + 5, lateness
    assert max(lateness) < 50, lateness


def test_port_watch_gives_up_when_the_instance_is_gone():
    gone = threading.Event()
    seen: list[int] = []
    watch = PortWatch("127.0.0.1", 9, "tcp", seen.append, gone.is_set, timeout=30)
    watch.start()
    time.sleep(0.05)
    gone.set()
    watch.join(2)
    assert not watch.is_alive() and seen == []
    assert len(echo_request()) == 16 and echo_request()[:8] == b"\0\0\0\x10\0\0\0\0"


def test_an_image_that_answers_ping_only_is_ready_at_its_first_echo_reply():
    """ICMP readiness: a well-formed echo request, only an echo reply with our identifier
    counts (the raw socket also sees requests, ours included), and a real reply on
    loopback is seen by the probe and by the watch."""
    request = portready.icmp_request(0x1234, 7)
    words = struct.unpack(f"!{len(request) // 2}H", request)
    total = sum(words)
    total = (total & 0xFFFF) + (total >> 16)
    assert total == 0xFFFF and request[0] == 8  # a checksum that sums to all ones
    ip = bytes([0x46]) + b"\0" * 23  # a 24-byte IP header (one option word)
    assert portready.icmp_reply(ip + b"\0\0\0\0\x12\x34\0\x07", 0x1234)
    assert not portready.icmp_reply(ip + request, 0x1234)  # a request, not a reply
    assert not portready.icmp_reply(ip + b"\0\0\0\0\x43\x21\0\x07", 0x1234)  # not ours
    assert not portready.icmp_reply(b"", 0x1234) and not portready.icmp_reply(ip[:20], 1)
    assert portready.answers("127.0.0.1", 0, "icmp")
    seen: list[int] = []
    t0 = time.monotonic_ns()
    watch = PortWatch("127.0.0.1", 0, "icmp", seen.append, lambda: False, timeout=10)
    watch.start()
    watch.join(10)
    assert seen and seen[0] >= t0 and not watch.is_alive()
    from virtbench import workloads

    ping = workloads.image_services()["ping"]
    assert ping.workloads == ("latency",) and ping.protocol == "icmp" and ping.port == 0
    assert ping.answers("latency", "icmp:0") and not ping.answers("latency", "tcp:64")
    assert workloads.image_services()["http"].answers("nginx", 100)  # every level


def test_a_runtime_that_measured_nothing_is_named_with_its_first_reason():
    def smp(rt: str, metric: str, value: float | None, error: str = "") -> Sample:
        return Sample(
            experiment="throughput",
            metric=metric,
            value=value,
            unit="req/s",
            direction="higher",
            runtime=rt,
            workload="nginx",
            repetition=0,
            error=error,
        )

    samples = [
        smp("uk-nginx", "requests_per_s", None, "port 80 not open after 60 s: booted"),
        smp("uk-nginx", "requests_per_s", None, "later"),
        smp("uk-nginx", "scalability.reached", 0.0),  # a fact of the run, not a measurement
        smp("crun", "requests_per_s", None, "one failed"),
        smp("crun", "requests_per_s", 1000.0),
    ]
    assert unmeasured(samples) == {"uk-nginx": "throughput: port 80 not open after 60 s: booted"}


def test_nothing_measured_of_one_experiment_fails_whatever_another_measured():
    """A runtime skipped in `boot` after failures in a row, which measured a whole pile-up
    in `density` and had its image's size taken, measured nothing of boot: it is named with
    that experiment; one that cannot do an experiment at all is not."""

    def smp(experiment: str, rt: str, metric: str, value: float | None, error: str = ""):
        return Sample(
            experiment=experiment,
            metric=metric,
            value=value,
            unit="ms",
            direction="lower",
            runtime=rt,
            workload="hello",
            repetition=0,
            error=error,
        )

    why = "solo5-elftool: not on PATH"
    samples = [
        smp("image", "s5", "image_size", 0.4),
        *(smp("boot", "s5", "boot.spawn_to_exit", None, why) for _ in range(3)),
        smp("density", "s5", "density.launch", 20.0),
        smp("boot", "crun", "boot.spawn_to_exit", 30.0),
        smp("density", "crun", "density.launch", 10.0),
        smp("pause", "wasm", "pause.pause", None, "wasm cannot: no freezer here"),
        smp("boot", "wasm", "boot.spawn_to_exit", 5.0),
    ]
    assert unmeasured(samples) == {"s5": f"boot: {why}"}


def test_side_figures_of_failed_boots_are_not_a_measurement():
    """An image that crashes at every boot still has its launch returned, its teardown
    timed and its size recorded: those are side figures, so the runtime measured nothing;
    one boot that ended is a measurement."""

    def smp(rt: str, metric: str, value: float | None, error: str = "", **kw) -> Sample:
        return Sample(
            **{
                "experiment": "boot",
                "metric": metric,
                "value": value,
                "unit": "ms",
                "direction": "lower",
                "runtime": rt,
                "workload": "hello",
                "repetition": 0,
                "error": error,
                **kw,
            }
        )

    crash = "guest crashed: CRIT: [libkvmplat] <memory.c @ 388> Assertion failure"
    samples = [
        smp("uk", "boot.spawn_to_exit", None, crash),
        smp("uk", "boot.spawn_to_started", 40.0),
        smp("uk", "boot.spawn_to_first_output", 90.0),
        smp("uk", "boot.teardown", 12.0),
        smp("uk", "image_size", 0.4, experiment="image"),
        smp("uk", "host.cpu_idle_pct", 93.0),
        smp("ok", "boot.spawn_to_exit", None, "one failed"),
        smp("ok", "boot.spawn_to_exit", 35.0),
        smp("ok", "boot.teardown", 10.0),
    ]
    assert unmeasured(samples) == {"uk": f"boot: {crash}"}
    side = [m.name for m in metrics.registry() if m.side]
    assert {
        "boot.teardown",
        "image_size",
        "density.reached",
        "scalability.launch",
        "burst.failed",
        "host.*",
    } <= set(side)
    assert not {"boot.spawn_to_exit", "boot.spawn_to_ready", "density.pss"} & set(side)
