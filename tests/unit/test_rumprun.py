"""Rumprun unikernels as images (`preset = "rumprun"`): the one JSON document virtbench
writes on their command line, and their exit read from the console, since QEMU stays up
after Rumprun halts (a fake VMM printing Rumprun's own lines, read by the driver's real
console reader and exit rule; the real images: tests/integration/test_real_rumprun.py)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from virtbench import runtimes
from virtbench.errors import InstanceError
from virtbench.host import proc
from virtbench.runtimes.base import Instance, InstanceSpec
from virtbench.runtimes.vm import presets

ADDRESSED = presets.fields("vb-r1-0001", "10.77.0.5", 24, "10.77.0.1", 8080)
NET = {
    "if": "vioif0",
    "type": "inet",
    "method": "static",
    "addr": "10.77.0.5",
    "mask": "24",
    "gw": "10.77.0.1",
}
KEYS = {"cmdline", "net", "env", "hostname", "blk"}  # any other key is fatal to Rumprun


def test_the_preset_writes_one_json_document_with_the_address_and_argv():
    line = presets.cmdline("rumprun", "{port} --ip={ip}", ADDRESSED)
    doc = json.loads(line)
    assert doc == {"net": NET, "cmdline": "vb-r1-0001 8080 --ip=10.77.0.5"}
    assert list(doc) == ["net", "cmdline"] and set(doc) <= KEYS
    assert all(isinstance(v, str) for v in doc["net"].values())  # Rumprun reads strings
    # no argument of its own: argv is its name alone
    assert json.loads(presets.cmdline("rumprun", "", ADDRESSED))["cmdline"] == "vb-r1-0001"


def test_without_an_address_the_document_has_no_net():
    none = presets.fields("vb-r1-0002", "", None, "", None)
    assert json.loads(presets.cmdline("rumprun", "", none)) == {"cmdline": "vb-r1-0002"}
    assert json.loads(presets.cmdline("rumprun", "-v {name}", none)) == {
        "cmdline": "vb-r1-0002 -v vb-r1-0002"
    }


def test_quotes_and_backslashes_in_the_cmdline_survive_as_json():
    own = 'say "hello there" C:\\dir {not-a-field}'
    line = presets.cmdline("rumprun", own, ADDRESSED)
    assert json.loads(line)["cmdline"] == f"vb-r1-0001 {own}"
    assert '\\"hello there\\"' in line  # escaped in the document, not dropped


@pytest.fixture
def kernel(tmp_path: Path) -> Path:
    k = tmp_path / "hello.bin"
    k.write_bytes(b"\x7fELF" + b"r" * 4096)
    return k


def qemu_image(tmp_path: Path, kernel: Path, **extra: object):
    """A QEMU driver for a Rumprun image, and an instance of it (not started)."""
    cls = runtimes.get("qemu")
    ctx = SimpleNamespace(paths=SimpleNamespace(cache=tmp_path), scratch=tmp_path, probe=None)
    opts = cls.Options(variant="q35:tcg", guest="image", kernel=kernel, preset="rumprun", **extra)
    rt = cls(ctx, opts)  # type: ignore[arg-type]
    spec_ = InstanceSpec("vb-r1-0001", ("/bin/vb-hello",), tmp_path, network="none")
    inst = Instance(spec_, "qemu", tmp_path / "vb-r1-0001.log", argv=spec_.argv, own=rt.State())
    return rt, inst


def test_qemu_appends_the_document_as_one_argument(tmp_path, kernel):
    rt, inst = qemu_image(tmp_path, kernel, cmdline='8080 "x y"')
    argv = rt._command(inst)
    assert json.loads(argv[argv.index("-append") + 1]) == {"cmdline": 'vb-r1-0001 8080 "x y"'}
    inst.address = "10.1.0.2"
    inst.own.prefixlen, inst.own.gateway, inst.own.mac = 16, "10.1.0.1", "06:00:0a:01:00:02"
    doc = json.loads(rt.boot.cmdline(inst))
    assert doc["net"] == {**NET, "addr": "10.1.0.2", "mask": "16", "gw": "10.1.0.1"}


BANNER = "NetBSD 7.99.34 (RUMP-ROAST)\r\ntotal memory = 30528 KB\r\nmounted tmpfs on /tmp\r\n"
HALT = (
    "rump kernel halting...\r\nsyncing disks... done\r\nunmounting file systems...\r\n"
    "unmounted tmpfs on /tmp type tmpfs\r\nunmounted rumpfs on / type rumpfs\r\n"
    "unmounting done\r\nhalted\r\n"
)
RAN = '=== calling "vb-r1-0001" main() ===\r\n\r\nHello from rumprun\r\n\r\n'
CONSOLES = {  # Rumprun's own lines (a real hello.bin's, and its failures')
    "exit0": BANNER + RAN + '=== main() of "vb-r1-0001" returned 0 ===\r\n\r\n'
    "=== _exit(0) called ===\r\n" + HALT,
    "exit3": BANNER + RAN + '=== main() of "vb-r1-0001" returned 3 ===\r\n\r\n'
    "=== ERROR: _exit(3) called ===\r\n" + HALT,
    "bootstrap": BANNER + 'rumprun: no match for key "bogus"\r\n\r\n'
    "=== bootstrap failed\r\n" + HALT,
}


def _gone(pid: int, within: float = 5.0) -> bool:
    """Whether process `pid` has ended (or is only a zombie left to its reaper)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.02)
    return False


def _fake_rumprun(
    tmp_path: Path, kernel: Path, case: str, *, deaf: bool = False, split: bool = False
) -> tuple[Instance, int | InstanceError, int, int]:
    """A QEMU image instance whose VMM is a shell printing `CONSOLES[case]` and staying up
    as QEMU does (with a child sleeping, in its process group; `deaf`: both ignore TERM;
    `split`: the last line comes 200 ms after the rest), read by the driver's own console
    reader and exit rule. Its exit status (or error), the sleeper's pid, and the moment
    `_wait` returned."""
    rt, inst = qemu_image(tmp_path, kernel)
    console = tmp_path / f"{case}.console"
    console.write_bytes(CONSOLES[case].encode())
    size, pidfile = console.stat().st_size, tmp_path / f"{case}.sleeper"
    show = f"head -c {size - 4} {console}; sleep 0.2; tail -c 4 {console}"
    deafness = "trap '' TERM; " if deaf else ""
    script = (
        f"{deafness}sleep 300 & echo $! > {pidfile}; {show if split else f'cat {console}'}; wait"
    )
    inst.side_log = rt.vmm_log(inst)
    with open(inst.side_log, "ab") as log:
        inst.proc = proc.spawn(["sh", "-c", script], stdout=subprocess.PIPE, stderr=log.fileno())
    inst.t_spawn_ns = time.monotonic_ns()
    rt.read_console(inst)
    try:
        try:
            result: int | InstanceError = rt._wait(inst, 30)
        except InstanceError as exc:
            result = exc
        returned = time.monotonic_ns()
        sleeper = int(pidfile.read_text())
        return inst, result, sleeper, returned
    finally:
        with contextlib.suppress(Exception):  # never leave it running, whatever failed
            proc.stop(inst.proc, rest=True)
        rt.vmm.console.end(inst)


def test_exit_0_is_a_boot_ending_at_the_halt_line_and_the_vmm_is_ended(tmp_path, kernel):
    """The VMM ignores TERM (as if hung): it is killed 2 s after the halt line, and the
    exit is still the halt line's moment, not the kill's."""
    inst, status, sleeper, returned = _fake_rumprun(tmp_path, kernel, "exit0", deaf=True)
    assert status == 0
    seen = inst.console
    assert seen.guest_status == 0 and seen.t_halted_ns is not None
    assert inst.t_exit_ns == seen.t_halted_ns
    assert seen.t_first_output_ns is not None and seen.t_first_output_ns <= seen.t_halted_ns
    assert (returned - seen.t_halted_ns) / 1e9 > 1.5  # TERM ignored: KILL after the grace
    assert inst.proc is not None and inst.proc.poll() is not None and _gone(sleeper)
    assert "halted" in inst.log_path.read_text()  # the console is in the log, whole


def test_a_non_zero_exit_is_the_instances_status(tmp_path, kernel):
    """`=== ERROR: _exit(3) called ===` is status 3, its halt line split over two reads."""
    inst, status, sleeper, returned = _fake_rumprun(tmp_path, kernel, "exit3", split=True)
    seen = inst.console
    assert status == 3 and inst.t_exit_ns == seen.t_halted_ns
    assert seen.t_halted_ns is not None and seen.t_first_output_ns is not None
    assert (seen.t_halted_ns - seen.t_first_output_ns) / 1e9 >= 0.19  # when it was whole
    assert (returned - seen.t_halted_ns) / 1e9 < 1.5  # TERM ended it at once
    assert inst.proc is not None and inst.proc.poll() is not None and _gone(sleeper)


def test_bootstrap_failed_is_a_failed_boot_quoting_the_console(tmp_path, kernel):
    inst, error, sleeper, _ = _fake_rumprun(tmp_path, kernel, "bootstrap")
    assert isinstance(error, InstanceError), error
    said = str(error)
    assert "halted without its program's exit status" in said, said
    assert 'rumprun: no match for key "bogus" | === bootstrap failed ... ' in said, said
    assert inst.console.guest_status is None
    assert inst.proc is not None and inst.proc.poll() is not None and _gone(sleeper)
