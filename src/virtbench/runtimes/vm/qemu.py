"""`qemu`: one VM per instance under QEMU (machine microvm or q35, accel kvm or tcg).

Labels: `qemu` (= `qemu:microvm`, KVM), `qemu:q35`, and `qemu:microvm:tcg`,
`qemu:q35:tcg` for emulation; `[runtime.qemu]` sets vcpus, guest memory (`memory_mib`
of the instance, else `memory_mib` here), the `-cpu` model and q35's firmware: qboot
(fast; the default of the minimal and Linux guests) or SeaBIOS (the default of an image
built elsewhere: real unikernels' multiboot loaders need its memory map; under qboot
Unikraft 0.16 stops at `Assertion failure: ml->flags == mr->flags`). Every sample records
the firmware used. The VM machinery shared with the other VMMs is in vm/base.py.

Timeline: spawn (QEMU exec'd), first serial output, ready (the `VB-READY` line), exit
(the QEMU process ends: isa-debug-exit makes it exit with status 1 for the guest's 0,
reported as 0 once the hello marker was seen). Samples under TCG are marked emulated.
"""

from __future__ import annotations

import contextlib
import shlex
import socket
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import field_validator

from virtbench.errors import InstanceError
from virtbench.host import proc
from virtbench.runtimes.base import Instance, which
from virtbench.runtimes.controls import Pause, Snapshot
from virtbench.runtimes.vm import image as vm_image
from virtbench.runtimes.vm.agent import GuestAgent, unix_stream
from virtbench.runtimes.vm.base import SIMPLE, Vm, VmOptions
from virtbench.runtimes.vm.qmp import Qmp
from virtbench.runtimes.vm.state import QemuState

MACHINES = ("microvm", "q35")
ACCELS = ("kvm", "tcg")
FIRMWARE = {"qboot": "/usr/share/qemu/qboot.rom", "seabios": None}  # None: QEMU's default


class QemuOptions(VmOptions):
    variant: str = "microvm"  # machine[:accel], what a label such as qemu:q35:tcg sets
    cpu: str | None = None  # -cpu; default: host,-arch-capabilities (kvm), max (tcg)
    # q35 only (microvm always boots qboot); default: seabios for guest = "image", else qboot
    firmware: Literal["qboot", "seabios"] | None = None

    @field_validator("variant")
    @classmethod
    def _variant(cls, v: str) -> str:
        machine, _, accel = v.partition(":")
        if machine not in MACHINES or (accel and accel not in ACCELS):
            machines, accels = ", ".join(MACHINES), ", ".join(ACCELS)
            raise ValueError(
                f"got {v!r}, expected machine[:accel] (machine: {machines}; accel: {accels})"
            )
        return v

    @property
    def machine(self) -> str:
        return self.variant.partition(":")[0]

    @property
    def accel(self) -> str:
        return self.variant.partition(":")[2] or "kvm"

    @property
    def firmware_used(self) -> str:
        """The firmware its VMs boot: the one given, else the guest's default."""
        if self.machine == "microvm":
            return "qboot"
        return self.firmware or ("seabios" if self.guest == "image" else "qboot")


class QemuPause(Pause):
    """QMP's stop and cont, on the socket of an instance started with `control`."""

    rt: Qemu

    def problem(self) -> str | None:
        return None

    def ready(self, inst: Instance) -> None:
        if inst.spec.control:  # else it will not be paused: no QMP socket to open
            self.rt.qmp(inst)

    def _pause(self, inst: Instance) -> None:
        self.rt.qmp(inst).cmd("stop")

    def _resume(self, inst: Instance) -> None:
        self.rt.qmp(inst).cmd("cont")


class QemuSnapshot(Snapshot):
    """QEMU's migration to a file, and a new QEMU taking its state from there."""

    copies = True  # each beats on its own console
    rt: Qemu

    def problem(self) -> str | None:
        return None

    def checkpoint(self, inst: Instance, image_dir: Path) -> None:
        """Migrate the VM's state to `image_dir/state`, then end this QEMU."""
        q = self.rt.qmp(inst)
        q.migrate_to(image_dir / "state", timeout=300)
        with contextlib.suppress(InstanceError):  # it quits before it answers, at times
            q.cmd("quit")
        q.close()
        inst.own.qmp = None
        if inst.proc is not None:
            proc.wait(inst.proc, 30)
        self.rt.end_vmm(inst)  # it quit: its console read to the end

    def restore(self, inst: Instance, image_dir: Path) -> None:
        """A new QEMU with the same command line, taking its state from the file
        (`-incoming`); returns once its QMP socket answers."""
        rt = self.rt
        inst.own.restore_from = image_dir
        try:
            rt.qmp_path(inst).unlink(missing_ok=True)
            rt.restart(inst)
            rt.qmp(inst)
        finally:
            inst.own.restore_from = None


class QemuAgent(GuestAgent):
    """vb-agent on the virtio-serial port `vb.agent`, a unix socket on the host."""

    rt: Qemu

    def connect(self, inst: Instance, timeout: float) -> socket.socket:
        return unix_stream(self.rt.agent_path(inst), timeout)


def _own(options: VmOptions | None) -> QemuOptions:
    """A qemu label's options (its `Options`, as the spec resolves them), or the defaults."""
    assert options is None or isinstance(options, QemuOptions), "qemu takes its own options"
    return options or QemuOptions()


class Qemu(Vm):
    name = "qemu"
    typical_launch_s = 0.3  # start + stop here without earlier boots
    description = "QEMU VM (microvm or q35, KVM or TCG) booting the minimal guest kernel"
    Options = QemuOptions
    options: QemuOptions
    State = QemuState
    variant_option = "variant"
    variants: ClassVar[tuple[str, ...]] = (*MACHINES, *(f"{m}:tcg" for m in MACHINES))
    default_variant = "microvm"
    default_binary = "qemu-system-x86_64"
    get_it = "apt-get install qemu-system-x86"
    clean_exit = 1  # isa-debug-exit: QEMU exits with (value << 1) | 1; the guest writes 0
    linux_exit = "isa"
    boots_disks = True  # q35's SeaBIOS
    Exec = QemuAgent
    Pause = QemuPause
    Snapshot = QemuSnapshot

    @property
    def emulated(self) -> bool:
        return self.options.accel == "tcg"

    def conditions(self) -> dict[str, Any]:
        return {"firmware": self.options.firmware_used}

    @classmethod
    def needs_kvm(cls, options: VmOptions | None) -> bool:
        return _own(options).accel == "kvm"

    @classmethod
    def cannot_run(cls, workload: str, options: VmOptions | None = None) -> str | None:
        why = super().cannot_run(workload, options)
        opts = _own(options)
        linux = opts.guest == "linux" or (opts.guest == "auto" and workload not in SIMPLE)
        if why is None and linux and opts.machine == "microvm" and opts.accel == "tcg":
            # microvm has no HPET/PM timer: Linux cannot calibrate its clock under TCG
            # (tried: pit=on, lpj=, tsc=reliable) and hangs before init
            why = "a Linux guest hangs on microvm under TCG (no usable clock): use qemu:q35:tcg"
        if why is None and opts.boots_disk and opts.firmware_used != "seabios":
            why = (
                "a disk boots through SeaBIOS's boot sector loader: use qemu:q35 or "
                'qemu:q35:tcg (firmware = "seabios", the default for an image)'
            )
        return why

    def _prepare(self, inst: Instance) -> None:
        super()._prepare(inst)
        if self.boot.byo and self.options.disk is not None:  # untimed: its own layer
            vm_image.disk_layer(inst, self.options, self.ctx.scratch)
        if inst.spec.control or inst.spec.agent:
            self.qmp_path(inst).parent.mkdir(exist_ok=True)

    def _stop(self, inst: Instance[QemuState]) -> None:
        if (q := inst.own.qmp) is not None:
            inst.own.qmp = None
            q.close()
        super()._stop(inst)

    def _command(self, inst: Instance[QemuState]) -> list[str]:
        o, boot = self.options, self.boot
        cpu = o.cpu or ("host,-arch-capabilities" if o.accel == "kvm" else "max")
        argv = [
            which(self.binary_of(o)) or self.binary_of(o),
            "-name",
            inst.name,
            "-M",
            o.machine,
            "-accel",
            o.accel,
            "-cpu",
            cpu,
            "-smp",
            str(o.vcpus),
            "-m",
            str(boot.memory_mib(inst)),
            "-nodefaults",
            "-no-user-config",
            "-display",
            "none",
            "-monitor",
            "none",
            "-serial",
            "stdio",
            "-no-reboot",
            "-device",
            "isa-debug-exit,iobase=0xf4,iosize=0x04",
        ]
        if not o.boots_disk:  # else the firmware boots the disk's own boot sector
            argv += ["-kernel", str(boot.kernel(inst)), "-append", boot.cmdline(inst)]
        else:  # what SeaBIOS says (debug port 0x402: "No bootable device.") with the VMM's
            log = str(self.vmm_log(inst)).replace(",", ",,")
            argv += ["-chardev", f"file,id=vbfw,path={log},append=on"]
            argv += ["-device", "isa-debugcon,iobase=0x402,chardev=vbfw"]
        firmware = FIRMWARE[o.firmware_used] if o.machine == "q35" else None
        if firmware:
            argv += ["-bios", firmware]
        return argv + self._devices(inst) + self._disks(inst)

    def _devices(self, inst: Instance[QemuState]) -> list[str]:
        """Its NIC on its tap, its QMP socket, vb-agent's channel, the state it restores
        from and its initrd."""
        argv: list[str] = []
        if inst.own.tap:
            nic = "virtio-net-device" if self.options.machine == "microvm" else "virtio-net-pci"
            argv += [
                "-netdev",
                f"tap,id=vbnet,ifname={inst.own.tap},script=no,downscript=no",
                "-device",
                f"{nic},netdev=vbnet,mac={inst.own.mac}",
            ]
        if inst.spec.control:  # paused or checkpointed: its machine protocol's socket
            argv += ["-qmp", f"unix:{self.qmp_path(inst)},server=on,wait=off"]
        if inst.spec.agent and self.boot.guest(inst) == "linux":  # vb-agent's channel
            argv += self._agent_devices(inst)
        if (image := inst.own.restore_from) is not None:  # the state saved by migrate
            argv += ["-incoming", f"exec:cat {shlex.quote(str(image / 'state'))}"]
        if (initrd := self.boot.initrd(inst)) is not None:
            argv += ["-initrd", str(initrd)]
        return argv

    def _disks(self, inst: Instance[QemuState]) -> list[str]:
        """A Linux guest's /data (vb-init: vda), an image's disk, then its scratch disk."""
        blk = "virtio-blk-device" if self.options.machine == "microvm" else "virtio-blk-pci"
        drives = [
            ("vbdata", inst.own.data_disk, "format=raw,cache=none,aio=threads"),
            ("vbdisk", inst.own.disk_layer, "format=qcow2"),  # over the image's disk
            ("vbscratch", inst.own.scratch_disk, "format=raw,cache=none,aio=threads"),
        ]
        argv: list[str] = []
        for name, path, how in drives:
            if path is None:
                continue
            file = str(path).replace(",", ",,")  # QEMU's option syntax: a comma doubled
            drive = f"id={name},file={file},if=none,{how}"
            argv += ["-drive", drive, "-device", f"{blk},drive={name}"]
        return argv

    # --- QMP, which pause and snapshot go through (QemuPause, QemuSnapshot) -------------
    def qmp_path(self, inst: Instance) -> Path:
        return self.ctx.scratch / "qmp" / f"{inst.name}.sock"

    def agent_path(self, inst: Instance) -> Path:
        return self.ctx.scratch / "qmp" / f"{inst.name}.agent"

    def _agent_devices(self, inst: Instance) -> list[str]:
        """A virtio-serial port named vb.agent behind a unix socket (vb-init starts
        vb-agent on it)."""
        bus = "virtio-serial-device" if self.options.machine == "microvm" else "virtio-serial-pci"
        sock = f"socket,id=vbagent,path={self.agent_path(inst)},server=on,wait=off"
        return [
            "-device",
            f"{bus},id=vbser",
            "-chardev",
            sock,
            "-device",
            "virtserialport,bus=vbser.0,chardev=vbagent,name=vb.agent",
        ]

    def qmp(self, inst: Instance[QemuState]) -> Qmp:
        """`inst`'s QMP connection (its pause and snapshot go through it), opened once."""
        if not inst.spec.control:
            raise InstanceError(f"{inst.name}: started without its QMP socket (control=False)")
        if inst.own.qmp is None:
            inst.own.qmp = Qmp(self.qmp_path(inst))
        return inst.own.qmp
