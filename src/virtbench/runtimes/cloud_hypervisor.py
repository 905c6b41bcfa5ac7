"""`cloud-hypervisor`: one Cloud Hypervisor VM per instance, configured by its command line.

The binary is found on PATH (`binary` option; Cloud Hypervisor is not in Debian: static
release binaries are at https://github.com/cloud-hypervisor/cloud-hypervisor/releases, or
build it with cargo). Per instance: `cloud-hypervisor --kernel <minimal guest> --cmdline
... --cpus boot=N --memory size=<M>M --serial tty --console off` in the instance's
cgroups, so the VM boots as soon as the process starts and the serial port (COM1, which
the minimal guest writes) is the process's stdout. The minimal guest boots by PVH; hello
powers off through the ACPI shutdown port (0x600), on which Cloud Hypervisor exits 0; a
Linux guest (its bzImage unpacked to an ELF vmlinux) powers off through ACPI too.
"""

from __future__ import annotations

from virtbench.runtimes.base import Instance, which
from virtbench.runtimes.vm import Vm, VmOptions


class CloudHypervisor(Vm):
    name = "cloud-hypervisor"
    description = "Cloud Hypervisor VM: minimal guest, Linux guest or image"
    Options = VmOptions
    elf_only = True
    default_binary = "cloud-hypervisor"
    get_it = ("download a static release from github.com/cloud-hypervisor/cloud-hypervisor/"
              "releases or build it with cargo, and put `cloud-hypervisor` on PATH")  # fmt: skip

    def _command(self, inst: Instance) -> list[str]:
        o = self.vm_opts
        binary = self.binary_of(o)
        initrd = self.initrd(inst)
        extra = ["--initramfs", str(initrd)] if initrd is not None else []
        disks = [f"path={inst.extra['data_disk']}"] if inst.extra.get("data_disk") else []
        if o.disk is not None:
            disks.append(f"path={o.disk},readonly=on")
        if inst.extra.get("scratch_disk"):  # an image's, after its disk
            disks.append(f"path={inst.extra['scratch_disk']}")
        if disks:  # a Linux guest's /data first (vb-init: vda)
            extra += ["--disk", *disks]
        if inst.extra.get("tap"):
            extra += ["--net", f"tap={inst.extra['tap']},mac={inst.extra['mac']}"]
        return [
            which(binary) or binary,
            "--kernel", str(self.kernel(inst)), "--cmdline", self.cmdline(inst),
            "--cpus", f"boot={o.vcpus}", "--memory", f"size={self.memory_mib(inst)}M",
            "--serial", "tty", "--console", "off", *extra,
        ]  # fmt: skip
