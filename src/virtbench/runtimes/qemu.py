"""`qemu`: one VM per instance under QEMU (machine microvm or q35, accel kvm or tcg).

Labels: `qemu` (= `qemu:microvm`, KVM), `qemu:q35`, and `qemu:microvm:tcg`,
`qemu:q35:tcg` for emulation; `[runtime.qemu]` sets vcpus, guest memory (`memory_mib`
of the instance, else `memory_mib` here), the `-cpu` model and q35's firmware (qboot,
the default, or SeaBIOS). The VM machinery shared with the other VMMs is in vm.py.

Timeline: spawn (QEMU exec'd), first serial output, ready (the `VB-READY` line), exit
(the QEMU process ends: isa-debug-exit makes it exit with status 1 for the guest's 0,
reported as 0 once the hello marker was seen). Samples under TCG are marked emulated.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, field_validator

from virtbench.runtimes.base import Instance, which
from virtbench.runtimes.vm import SIMPLE, Vm, VmOptions

MACHINES = ("microvm", "q35")
ACCELS = ("kvm", "tcg")
FIRMWARE = {"qboot": "/usr/share/qemu/qboot.rom", "seabios": None}  # None: QEMU's default


class QemuOptions(VmOptions):
    variant: str = "microvm"  # machine[:accel], what a label such as qemu:q35:tcg sets
    cpu: str | None = None  # -cpu; default: host,-arch-capabilities (kvm), max (tcg)
    firmware: Literal["qboot", "seabios"] = "qboot"  # q35 only; microvm always uses qboot

    @field_validator("variant")
    @classmethod
    def _variant(cls, v: str) -> str:
        machine, _, accel = v.partition(":")
        if machine not in MACHINES or (accel and accel not in ACCELS):
            machines, accels = ", ".join(MACHINES), ", ".join(ACCELS)
            raise ValueError(f"got {v!r}, expected machine[:accel] (machine: {machines}; "
                             f"accel: {accels})")  # fmt: skip
        return v

    @property
    def machine(self) -> str:
        return self.variant.partition(":")[0]

    @property
    def accel(self) -> str:
        return self.variant.partition(":")[2] or "kvm"


class Qemu(Vm):
    name = "qemu"
    description = "QEMU VM (microvm or q35, KVM or TCG) booting the minimal guest kernel"
    Options = QemuOptions
    variant_option = "variant"
    variants: ClassVar[tuple[str, ...]] = (*MACHINES, *(f"{m}:tcg" for m in MACHINES))
    default_variant = "microvm"
    default_binary = "qemu-system-x86_64"
    get_it = "apt-get install qemu-system-x86"
    clean_exit = 1  # isa-debug-exit: QEMU exits with (value << 1) | 1; the guest writes 0
    linux_exit = "isa"

    @property
    def opts(self) -> QemuOptions:
        assert isinstance(self.options, QemuOptions)
        return self.options

    @property
    def emulated(self) -> bool:
        return self.opts.accel == "tcg"

    @classmethod
    def needs_kvm(cls, options: BaseModel | None) -> bool:
        return not isinstance(options, QemuOptions) or options.accel == "kvm"

    @classmethod
    def cannot_run(cls, workload: str, options: BaseModel | None = None) -> str | None:
        why = super().cannot_run(workload, options)
        opts = options if isinstance(options, QemuOptions) else QemuOptions()
        linux = opts.guest == "linux" or (opts.guest == "auto" and workload not in SIMPLE)
        if why is None and linux and opts.machine == "microvm" and opts.accel == "tcg":
            # microvm has no HPET/PM timer: Linux cannot calibrate its clock under TCG
            # (tried: pit=on, lpj=, tsc=reliable) and hangs before init
            why = "a Linux guest hangs on microvm under TCG (no usable clock): use qemu:q35:tcg"
        return why

    def _command(self, inst: Instance) -> list[str]:
        o = self.opts
        cpu = o.cpu or ("host,-arch-capabilities" if o.accel == "kvm" else "max")
        argv = [
            which(self.binary_of(o)) or self.binary_of(o), "-name", inst.name,
            "-M", o.machine, "-accel", o.accel, "-cpu", cpu,
            "-smp", str(o.vcpus), "-m", str(self.memory_mib(inst)),
            "-nodefaults", "-no-user-config", "-display", "none", "-monitor", "none",
            "-serial", "stdio", "-no-reboot",
            "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
            "-kernel", str(self.kernel(inst)), "-append", self.cmdline(inst),
        ]  # fmt: skip
        firmware = FIRMWARE[o.firmware] if o.machine == "q35" else None
        if firmware:
            argv += ["-bios", firmware]
        if inst.extra.get("tap"):
            nic = "virtio-net-device" if o.machine == "microvm" else "virtio-net-pci"
            argv += ["-netdev", f"tap,id=vbnet,ifname={inst.extra['tap']},script=no,downscript=no",
                     "-device", f"{nic},netdev=vbnet,mac={inst.extra['mac']}"]  # fmt: skip
        if (initrd := self.initrd(inst)) is not None:
            argv += ["-initrd", str(initrd)]
        blk = "virtio-blk-device" if o.machine == "microvm" else "virtio-blk-pci"
        if data := inst.extra.get("data_disk"):  # a Linux guest's /data (vb-init: vda)
            data = data.replace(",", ",,")
            argv += ["-drive", f"id=vbdata,file={data},format=raw,if=none,cache=none,aio=threads",
                     "-device", f"{blk},drive=vbdata"]  # fmt: skip
        if o.disk is not None:
            disk = str(o.disk).replace(",", ",,")  # QEMU's option syntax: a comma doubled
            argv += ["-drive", f"id=vbdisk,file={disk},format=raw,if=none,readonly=on",
                     "-device", f"{blk},drive=vbdisk"]  # fmt: skip
        if scratch := inst.extra.get("scratch_disk"):  # an image's, after its disk
            scratch = scratch.replace(",", ",,")
            argv += ["-drive", f"id=vbscratch,file={scratch},format=raw,if=none,cache=none,"
                     "aio=threads", "-device", f"{blk},drive=vbscratch"]  # fmt: skip
        return argv
