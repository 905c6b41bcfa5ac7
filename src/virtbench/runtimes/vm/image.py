"""What a VM does only for an image built elsewhere (`guest = "image"`): its command line
(its preset's part, then its own), its scratch disk, its own layer over the image's disk
(QEMU), its readiness when it prints nothing virtbench reads (its port answering), and
how it says it is done when its VMM stays up (its preset's console lines).
runtimes/vm/base.py and qemu.py call these."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from pathlib import Path

from virtbench.errors import InstanceError, VirtbenchError
from virtbench.host import proc
from virtbench.runtimes.console import GuestEnd
from virtbench.runtimes.model import Instance, crash_line
from virtbench.runtimes.vm import presets
from virtbench.runtimes.vm.guest import VmOptions


def cmdline(inst: Instance, o: VmOptions) -> str:
    """The image's command line: its preset's part, then its own `cmdline`, with {name}
    and, on the bridge, {ip}, {prefixlen}, {netmask}, {gateway}, {mac} and {port}."""
    x = inst.own
    values = presets.fields(
        inst.name, inst.address or "", x.prefixlen, x.gateway, o.serve_port, mac=x.mac
    )
    return presets.cmdline(o.preset, o.cmdline, values)


def guest_end(o: VmOptions) -> GuestEnd | None:
    """How the image says on its console that its program exited and that it halted (its
    preset's `exited` and `halted`), if its preset says: None otherwise."""
    p = presets.PRESETS[o.preset] if o.preset is not None else None
    if p is None or (p.exited is None and p.halted is None):
        return None
    return GuestEnd(p.exited, p.halted)


def why_failed(inst: Instance, o: VmOptions, most: int = 3) -> str:
    """The console's first lines (`most`) that say why the image never ran its program
    (its preset's `failed`), joined by " | "; "" when none does."""
    p = presets.PRESETS[o.preset] if o.preset is not None else None
    if p is None or p.failed is None:
        return ""
    try:
        text = inst.log_path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    expr = re.compile(p.failed)
    return " | ".join([ln.strip() for ln in text if expr.search(ln)][:most])


def halted_exit(label: str, inst: Instance, o: VmOptions) -> int:
    """An image that said it halted (its preset's `halted` line; its VMM, which stays up,
    was ended then) exited then, with the status its program said (`exited`); one that
    halted without one never ran its program (Rumprun's `=== bootstrap failed`): an error
    with the console's words, never a boot. A status 0 with a crash line is one too."""
    inst.t_exit_ns = inst.console.t_halted_ns
    status = inst.console.guest_status
    if status is None:
        why = why_failed(inst, o)
        raise InstanceError(
            f"{label}: {inst.name}: the guest halted without its program's exit status: "
            f"{why + ' ... ' if why else ''}{inst.log_tail()}"
        )
    if status == 0 and crash_line(inst.log_path):
        raise InstanceError(f"{label}: {inst.name}: {inst.log_tail()}")
    return status


def scratch_disk(inst: Instance, o: VmOptions, directory: Path) -> None:
    """The image's blank read-write disk (`scratch_disk_mib`) in `directory` (the run's
    state directory: a crashed run's goes with it); the driver removes it with the
    instance."""
    assert o.scratch_disk_mib is not None
    disk = directory / f"{inst.name}.scratch.img"
    try:
        with open(disk, "wb") as f:
            f.truncate(o.scratch_disk_mib << 20)
        if o.scratch_format == "ext4":
            lazy = "lazy_itable_init=1,lazy_journal_init=1"
            proc.run(["mkfs.ext4", "-q", "-F", "-m", "0", "-E", lazy, str(disk)], timeout=120)
    except (OSError, VirtbenchError) as exc:  # this instance fails; the run goes on
        disk.unlink(missing_ok=True)
        raise InstanceError(f"{inst.name}: its scratch disk {disk}: {exc}") from None
    inst.own.scratch_disk = disk


# OSv's loader reads 63 sectors from byte 512: its command line and the NUL ending it
DISK_CMDLINE_MAX = 63 * 512


@functools.cache
def disk_format(disk: Path) -> str:
    """The format of an image's disk as qemu-img sees it (raw, qcow2, ...)."""
    out = proc.run(["qemu-img", "info", "--output=json", str(disk)], timeout=60).stdout
    return str(json.loads(out)["format"])


def disk_layer(inst: Instance, o: VmOptions, directory: Path) -> None:
    """The image's disk as this instance sees it: a copy-on-write layer of its own (QCOW2
    backed by the image, which QEMU opens read-only) in `directory` (the run's state
    directory: a crashed run's goes with it), so that images that write to their disk
    at boot (Nanos) run many at once and the image file never changes. An image that
    boots from its disk gets its command line written where its preset's guest reads it
    there (OSv: byte 512). The driver removes the layer with the instance (`end`)."""
    assert o.disk is not None
    layer = directory / f"{inst.name}.disk.qcow2"
    backing = o.disk.resolve()
    try:
        fmt = disk_format(backing)
        argv = ["qemu-img", "create", "-q", "-f", "qcow2", "-F", fmt, "-b", str(backing)]
        proc.run([*argv, str(layer)], timeout=60)
        inst.own.disk_layer = layer
        if o.boots_disk:
            _write_cmdline(inst, o, layer)
    except (OSError, ValueError, KeyError, VirtbenchError) as exc:
        layer.unlink(missing_ok=True)
        inst.own.disk_layer = None
        raise InstanceError(f"{inst.name}: its layer over the disk {o.disk}: {exc}") from None


def _write_cmdline(inst: Instance, o: VmOptions, layer: Path) -> None:
    """The command line, NUL-ended, at its preset's place on the instance's layer."""
    line = cmdline(inst, o)
    if not line:
        return
    offset = presets.PRESETS[o.preset].cmdline_on_disk if o.preset is not None else None
    if offset is None:  # image_cannot_run refuses such a spec before any instance
        raise InstanceError(f"{inst.name}: its disk has no place for a command line")
    data = line.encode() + b"\0"
    if len(data) > DISK_CMDLINE_MAX:
        raise InstanceError(
            f"{inst.name}: its command line is {len(data)} bytes; the disk holds {DISK_CMDLINE_MAX}"
        )
    src = layer.with_suffix(".cmdline")
    try:
        src.write_bytes(data)
        write = f"write -q -s {src} {offset} {len(data)}"
        proc.run(["qemu-io", "-f", "qcow2", "-c", write, str(layer)], timeout=60)
    finally:
        src.unlink(missing_ok=True)


def watch_port(inst: Instance, o: VmOptions, ready: Callable[[int], None]) -> None:
    """An image that serves and has no `ready` expression is ready when its port answers
    (measure/portready.py); `ready(t_ns)` is called then. Nothing without an address."""
    if o.serves is None or o.ready is not None or not inst.address:
        return
    from virtbench.measure.portready import PortWatch

    def gone() -> bool:
        return inst.stopped or (inst.proc is not None and inst.proc.poll() is not None)

    protocol = o.service.protocol if o.service is not None else "tcp"
    watch = PortWatch(inst.address, o.serve_port or 0, protocol, ready, gone)
    inst.own.port_watch = watch
    watch.start()


def end(inst: Instance) -> None:
    """After the VMM is gone: the port watch stopped, the scratch disk and the disk's
    layer removed."""
    watch, inst.own.port_watch = inst.own.port_watch, None
    if watch is not None:
        watch.stop()
        watch.join(timeout=5)
    for disk in (inst.own.scratch_disk, inst.own.disk_layer):
        if disk is not None:
            disk.unlink(missing_ok=True)
    inst.own.scratch_disk = inst.own.disk_layer = None
