"""What a VM boots (an object its driver holds, `rt.boot`: vm/base.py): the guest an
instance gets (the minimal guest, Linux or an image of the user's), its kernel, initrd,
memory size and kernel command line."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol

from virtbench.runtimes.vm import image as vm_image
from virtbench.runtimes.vm.guest import KERNEL, LINUX_CMDLINE, MEMORY_MIB, VmOptions, guest_mode

if TYPE_CHECKING:
    from virtbench.runtimes.model import Instance, RuntimeContext


class Booting(Protocol):
    """What `VmBoot` reads of its driver (the Vm base, vm/base.py, has each): its context
    and options, and how its VMM boots a guest (see Vm)."""

    ctx: RuntimeContext
    options: VmOptions
    elf_only: ClassVar[bool]
    linux_exit: ClassVar[str]
    linux_cmdline: ClassVar[str]
    agent_channel: ClassVar[str]


class Booted(Booting, Protocol):
    """A driver with its `VmBoot` (`boot`): what a VM's attachment reads (vm/attach.py)."""

    boot: VmBoot


class VmBoot:
    """The guest's side of a VM driver (`rt`), made once per driver; it keeps a Linux
    guest's files and the ELF kernels unpacked, per driver."""

    def __init__(self, rt: Booting) -> None:
        self.rt = rt
        self.linux_files: dict[str, tuple[Path, Path]] = {}
        self.elf: dict[Path, Path] = {}  # kernel image -> its ELF vmlinux

    @property
    def options(self) -> VmOptions:
        """The driver's options, as they are now."""
        return self.rt.options

    def guest(self, inst: Instance) -> str:
        """minimal | linux | image, for this instance's workload (and Linux, with its exec
        agent, for an instance commands will run in)."""
        g = self.options.guest
        if g == "auto":
            return "minimal" if guest_mode(inst.spec.argv) and not inst.spec.agent else "linux"
        return g

    def memory_mib(self, inst: Instance) -> int:
        """The guest's memory: the instance's, the driver's, else its guest's usual."""
        return inst.spec.memory_mib or self.options.memory_mib or MEMORY_MIB[self.guest(inst)]

    @property
    def byo(self) -> bool:
        """A bring-your-own image rather than the minimal guest."""
        return self.options.guest == "image"

    def kernel(self, inst: Instance) -> Path:
        """The kernel the VMM loads (an ELF vmlinux unpacked once where it loads only ELF)."""
        if self.options.kernel is not None:
            image = self.options.kernel
        elif self.guest(inst) == "linux":
            image = self.linux(inst.spec.rootfs)[0]
        else:
            return inst.spec.rootfs / KERNEL
        if not self.rt.elf_only:
            return image
        if image not in self.elf:
            from virtbench.artifacts.linux import elf_kernel

            self.elf[image] = elf_kernel(image, self.rt.ctx.paths.cache / "kernels" / "elf")
        return self.elf[image]

    def initrd(self, inst: Instance) -> Path | None:
        """A Linux guest's initramfs, an image's own initrd, or none."""
        if self.guest(inst) == "linux":
            return self.linux(inst.spec.rootfs)[1]
        return self.options.initrd

    def linux(self, rootfs: Path) -> tuple[Path, Path]:
        """(kernel, initramfs) of a Linux guest of `rootfs`; made once (and cached)."""
        key = str(rootfs)
        if key not in self.linux_files:
            from virtbench.artifacts.linux import build_initramfs, debian_kernel

            cache = self.rt.ctx.paths.cache
            kernel = debian_kernel(cache)
            initrd = build_initramfs(rootfs, kernel, cache / "initramfs")
            self.linux_files[key] = (self.options.kernel or kernel.image, initrd)
        return self.linux_files[key]

    def cmdline(self, inst: Instance) -> str:
        """The guest's command line. An image's may use {name}, and on the bridge {ip},
        {prefixlen}, {gateway} and {mac} for its NIC."""
        if self.guest(inst) == "linux":
            argv = "".join(a + "\0" for a in inst.argv).encode().hex()
            line = f"{LINUX_CMDLINE} {self.rt.linux_cmdline}".strip()
            line += f" vb.name={inst.name} vb.argv={argv} vb.exit={self.rt.linux_exit}"
            if inst.own.data_disk is not None:
                line += " vb.data=vda"
            if inst.spec.agent and self.rt.agent_channel:
                line += f" vb.agent={self.rt.agent_channel}"
            if inst.spec.sysctls:  # the guest's own kernel takes every key
                from virtbench.host import sysctl

                line += " " + sysctl.cmdline(dict(inst.spec.sysctls))
            if inst.address:
                line += f" vb.ip={inst.address}/{inst.own.prefixlen} "
                line += f"vb.gw={inst.own.gateway}"
            return f"{line} {self.options.cmdline}".strip()
        if self.byo:
            return vm_image.cmdline(inst, self.options)
        line = f"vb.mode={guest_mode(inst.spec.argv)} vb.name={inst.name}"
        if guest_mode(inst.spec.argv) == "beat" and len(inst.spec.argv) == 6:
            line += f" vb.dirty={inst.spec.argv[5]}"  # MiB it writes before ready
        return line
